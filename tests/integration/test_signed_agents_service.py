"""Signed agents at the visitor API (docs/operators.md, "Signed agents"; issue 36 item 4): a
room's ``agents`` setting, Web Bot Auth signatures verified against a key directory served over
real HTTPS by a test CA (tests/key_directory.py), through the real app and Redis.

The agent signs ``POST /api/v1/arrive`` as sent to the test client (``@authority`` localhost);
the service fetches the directory through its own bounded outbound fetch, allowed to reach this
machine and to trust the test CA for the test."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.service_container import Services
from anteroom.web.serving import metrics
from helpers import Operator, make_room
from key_directory import WELL_KNOWN, KeyDirectory
from signed_agent import Agent
from visitor_client import Visitor

pytestmark = pytest.mark.redis

ARRIVE = "/api/v1/arrive"
SHOP = "https://shop.example/checkout"


@pytest.fixture
def directory(tmp_path: Path) -> Iterator[KeyDirectory]:
    served = KeyDirectory(tmp_path)
    yield served
    served.close()


@pytest.fixture
def settings(settings: Settings, directory: KeyDirectory) -> Settings:
    return settings.with_overrides(
        outbound_allow_loopback=True, outbound_ca_file=str(directory.ca_file)
    )


@pytest.fixture
def agent(directory: KeyDirectory) -> Agent:
    signer = Agent(directory.origin)
    directory.pages[WELL_KNOWN] = (200, "max-age=300", signer.directory_body())
    return signer


@pytest.fixture
def api_key(services: Services) -> str:
    record, _ = services.keystore.create("shop")
    return record.public_key


def room(services: Services, slug: str, agents: dict[str, str]) -> str:
    """An open room at one admission a minute with one visitor waiting, its budget spent."""
    room_id = make_room(services.engine, env="shop", slug=slug, ratePerMinute=1, agents=agents)
    services.engine.open(room_id)
    services.engine.enter(room_id, "ahead", "s", 10)
    return room_id


def signed(agent: Agent, **options: Any) -> dict[str, str]:
    """The headers of ``POST /api/v1/arrive`` to the test client, signed by ``agent``."""
    now = options.pop("now", int(time.time()))
    return agent.sign("POST", "localhost", ARRIVE, now, scheme="http", **options)


def forge(headers: dict[str, str]) -> dict[str, str]:
    """The same headers with one bit of the signature flipped."""
    raw = bytearray(base64.b64decode(headers["signature"][6:-1]))
    raw[0] ^= 1
    return headers | {"signature": "sig1=:" + base64.b64encode(bytes(raw)).decode() + ":"}


def counted(outcome: str) -> float:
    return metrics.AGENTS.labels(outcome)._value.get()  # type: ignore[attr-defined]


def test_a_verified_agent_queues_without_proof_of_work(
    client: FlaskClient, services: Services, api_key: str, agent: Agent, directory: KeyDirectory
) -> None:
    room(services, "drop", {"*": "queue"})
    visitor = Visitor(client, api_key)
    before = counted("queued")
    issued = visitor.arrive("drop", **signed(agent))
    assert issued.status_code == 200, issued.text
    assert issued.json["tier"] == "agent" and issued.json["difficulty"] == 0
    joined = visitor.join(visitor.join_body("drop", issued.json))
    assert joined.status_code == 200, joined.text
    assert joined.json["queue"]["status"] == "waiting"  # in line behind the one ahead
    assert counted("queued") == before + 1
    # An unsigned arrival at the same room pays its work as anyone does.
    assert visitor.arrive("drop").json["tier"] != "agent"
    assert directory.hits == [WELL_KNOWN]  # the directory fetched once


def test_a_room_may_refuse_an_agent_by_its_directory_host(
    client: FlaskClient, services: Services, api_key: str, agent: Agent, directory: KeyDirectory
) -> None:
    host = directory.origin.removeprefix("https://")
    room(services, "drop", {host: "refuse", "*": "queue"})
    before = counted("refused")
    answer = Visitor(client, api_key).arrive("drop", **signed(agent))
    assert answer.status_code == 403
    assert answer.json["error"] == "AgentRefused"
    assert counted("refused") == before + 1


def test_an_agent_the_setting_does_not_name_is_a_visitor(
    client: FlaskClient, services: Services, api_key: str, agent: Agent
) -> None:
    room(services, "drop", {"other.example": "refuse"})
    answer = Visitor(client, api_key).arrive("drop", **signed(agent))
    assert answer.status_code == 200 and answer.json["tier"] != "agent"


def test_a_room_without_the_setting_checks_no_signature(
    client: FlaskClient, services: Services, api_key: str, agent: Agent, directory: KeyDirectory
) -> None:
    room(services, "drop", {})
    forged = signed(agent) | {"signature": "sig1=:" + "A" * 86 + "==:"}
    answer = Visitor(client, api_key).arrive("drop", **forged)
    assert answer.status_code == 200 and answer.json["tier"] != "agent"
    assert directory.hits == []  # nothing fetched, nothing verified


def stranger_headers(agent: Agent, directory: KeyDirectory) -> dict[str, str]:
    """Signed by a key its named directory does not list (the agent's own directory)."""
    return signed(Agent(directory.origin))


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda a, d: forge(signed(a)), "forged"),
        (lambda a, d: signed(a, now=int(time.time()) - 120, expires_in=60), "expired"),
        (lambda a, d: signed(a, now=int(time.time()) + 600), "early"),
        (stranger_headers, "unknown-key"),
        (lambda a, d: signed(a) | {"signature-input": "sig1=(\"@authority\""}, "malformed"),
        (lambda a, d: signed(a) | {"signature": "sig1=:not base64!:"}, "malformed"),
        (lambda a, d: signed(Agent("https://localhost:1")), "directory"),
    ],
    ids=["forged", "expired", "early", "wrong-directory", "broken-input", "broken-signature",
         "unreachable-directory"],
)  # fmt: skip
def test_a_signature_that_does_not_hold_is_refused_naming_why_and_takes_no_place(
    client: FlaskClient,
    services: Services,
    api_key: str,
    agent: Agent,
    directory: KeyDirectory,
    make: Any,
    reason: str,
) -> None:
    room_id = room(services, "drop", {"*": "queue"})
    before, waiting = counted("invalid"), services.engine.stats(room_id).waiting
    answer = Visitor(client, api_key).arrive("drop", **make(agent, directory))
    assert answer.status_code == 401, answer.text
    assert answer.json["error"] == "SignatureRefused"
    assert answer.json["fields"] == {"signature": reason}
    assert counted("invalid") == before + 1
    assert services.engine.stats(room_id).waiting == waiting


def test_a_replayed_signature_is_refused_in_every_worker(
    client: FlaskClient, services: Services, api_key: str, agent: Agent, settings: Settings
) -> None:
    """The nonce is booked in Redis: a second app (another worker) refuses the replay too."""
    from anteroom.web.app_factory import create_app

    room(services, "drop", {"*": "queue"})
    headers = signed(agent)
    first = Visitor(client, api_key).arrive("drop", **headers)
    assert first.status_code == 200, first.text
    other = create_app(settings)
    try:
        again = Visitor(other.test_client(), api_key).arrive("drop", **headers)
    finally:
        other.extensions["anteroom"].stop_background()
    assert again.status_code == 401
    assert again.json["fields"] == {"signature": "replayed"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "must be an object"),
        ({"*": "lane"}, 'the policy must be "queue" or "refuse"'),
        ({"Agent.Example": "queue"}, "not a host in lower case"),
        ({"a..example": "queue"}, "not a host in lower case"),
    ],
)
def test_a_bad_agents_setting_is_refused_naming_the_field(
    client: FlaskClient, services: Services, value: Any, message: str
) -> None:
    _, secret = services.keystore.create("shop")
    op = Operator(client, secret, {"slug": "drop", "name": "Drop", "redirectUrl": SHOP})
    refused = op.call("POST", "/queues", op.room | {"agents": value})
    assert refused.status_code == 400, refused.json
    assert message in refused.json["fields"]["agents"]
    created = op.create(agents={"*": "queue", "scraper.example": "refuse"})
    assert op.get(created["id"])["agents"] == {"*": "queue", "scraper.example": "refuse"}
    patched = op.patch(created["id"], {"agents": value})
    assert patched.status_code == 400 and "agents" in patched.json["fields"]
    assert op.get(created["id"])["agents"] == {"*": "queue", "scraper.example": "refuse"}
    assert op.patch(created["id"], {"agents": {}}).status_code == 200
    assert op.get(created["id"])["agents"] == {}
    assert op.create(slug="other")["agents"] == {}  # off by default


def test_agents_are_counted_apart_in_the_rooms_series(
    client: FlaskClient, services: Services, api_key: str, agent: Agent, directory: KeyDirectory
) -> None:
    from anteroom.queue.series import room_series as rs

    t0 = 1_800_000_000_000
    room_id = room(services, "drop", {"*": "queue"})
    services.engine.set_clock(room_id, t0)
    services.series.sample(room_id)
    visitor = Visitor(client, api_key)
    assert visitor.arrive("drop", **signed(agent)).status_code == 200
    assert visitor.arrive("drop", **signed(agent)).status_code == 200
    assert visitor.arrive("drop", **forge(signed(agent))).status_code == 401
    assert visitor.arrive("drop").status_code == 200  # unsigned: counted nowhere here
    services.series.flush_tallies()
    services.engine.shift_clock(room_id, 60_000)
    services.series.sample(room_id)
    samples = services.series.samples(room_id, t0, t0 + 3_600_000, False)
    window = rs.aggregate(samples, t0, t0 + 120_000, 60_000)
    assert window.counters["agentsQueued"] == [0, 2]
    assert window.counters["agentsInvalid"] == [0, 1]
    assert window.counters["agentsRefused"] == [0, 0]
    assert window.counters["entries"] == [0, 0]  # an arrival takes no spot before its join


def test_an_outbound_ca_file_that_is_not_there_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ANTEROOM_OUTBOUND_CA_FILE"):
        Settings.from_env({"ANTEROOM_OUTBOUND_CA_FILE": str(tmp_path / "missing.pem")})
    pem = tmp_path / "ca.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\n")
    assert Settings.from_env({"ANTEROOM_OUTBOUND_CA_FILE": str(pem)}).outbound_ca_file == str(pem)


def test_the_hosted_page_refuses_an_agent_as_the_api_does(
    client: FlaskClient, services: Services, api_key: str, agent: Agent, directory: KeyDirectory
) -> None:
    host = directory.origin.removeprefix("https://")
    room(services, "drop", {host: "refuse"})
    room(services, "open-drop", {"*": "queue"})

    def page(slug: str, headers: dict[str, str]) -> Any:
        return client.get(f"/queue/{slug}", query_string={"key": api_key}, headers=headers)

    def signed_page(slug: str, **options: Any) -> dict[str, str]:
        now = options.pop("now", int(time.time()))
        return agent.sign("GET", "localhost", f"/queue/{slug}", now, scheme="http", **options)

    refused = page("drop", signed_page("drop"))
    assert refused.status_code == 403 and refused.json["error"] == "AgentRefused"
    broken = page("open-drop", signed_page("open-drop") | {"signature-input": "sig1=("})
    assert broken.status_code == 401 and broken.json["fields"] == {"signature": "malformed"}
    queued = page("open-drop", signed_page("open-drop"))
    assert queued.status_code == 200 and "text/html" in queued.content_type
    assert page("drop", {}).status_code == 200  # unsigned: anyone's page
