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
from helpers import TEST_KEYS, Operator, make_room
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
    body = visitor.join_body("drop", issued.json)
    # Its challenge of no work is the agent's: spent by an unsigned join, it would buy anyone
    # a place without work. Refused, and it stays unspent.
    unsigned = visitor.post("queue/join", body)
    assert unsigned.status_code == 401 and unsigned.json["error"] == "TokenInvalid"
    joined = visitor.join(
        body, **agent.sign("POST", "localhost", "/x", int(time.time()), scheme="http")
    )
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
        ({"*": "pass"}, 'the policy must be "queue", "lane" or "refuse"'),
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


# -- the agents' lane ----------------------------------------------------------------------

T0 = 1_800_000_000_000  # the room's pinned clock (ms): the lane's budget moves only with it


def lane_room(services: Services, slug: str, rate: int, **config: Any) -> str:
    """An open room on a pinned clock, one visitor in line, agents through a lane at ``rate``."""
    room_id = make_room(
        services.engine, env="shop", slug=slug, ratePerMinute=60, agents={"*": "lane"},
        agentLaneRatePerMinute=rate, **config,
    )  # fmt: skip
    services.engine.set_clock(room_id, T0)
    services.engine.open(room_id)
    services.engine.enter(room_id, "ahead", "s", 10)
    return room_id


def lane_join(visitor: Visitor, agent: Agent, slug: str, authority: str = "localhost") -> Any:
    """A signed arrival, then a signed join answering its challenge."""
    now = int(time.time())
    issued = visitor.arrive(slug, **agent.sign("POST", authority, ARRIVE, now, scheme="http"))
    assert issued.status_code == 200, issued.text
    assert issued.json["tier"] == "agent"
    body = visitor.join_body(slug, issued.json)
    return visitor.post(
        "queue/join", body, **agent.sign("POST", authority, "/x", now, scheme="http")
    )


def test_a_lane_admits_agents_at_its_own_rate_and_never_in_the_visitors_line(
    client: FlaskClient, services: Services, api_key: str, agent: Agent
) -> None:
    from anteroom.verify import verify_admission

    room_id = lane_room(services, "drop", rate=120)  # two a second: a burst of two
    before = services.engine.stats(room_id)
    visitor = Visitor(client, api_key)
    answers = [lane_join(visitor, agent, "drop") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[2].json["error"] == "RateLimited" and answers[2].headers["Retry-After"] == "1"
    token = answers[0].json["queue"]["token"]
    assert answers[0].json["queue"]["status"] == "admitted"
    checked = verify_admission(token, TEST_KEYS, room="drop", now=T0 / 1000 + 1)
    assert checked.valid, checked.reason
    assert checked.claims.get("nr") == 1  # not renewable: no active entry stands for it
    # The visitors' line, bank and counts: untouched.
    after = services.engine.stats(room_id)
    assert (after.waiting, after.active, after.dealt_total, after.tickets) == (
        before.waiting, before.active, before.dealt_total, before.tickets,
    )  # fmt: skip
    # Half a second of the room's clock buys one more admission, not two.
    services.engine.shift_clock(room_id, 500)
    assert [lane_join(visitor, agent, "drop").status_code for _ in range(2)] == [200, 429]
    # The visitor ahead is still admitted at the room's own rate: its bank was never touched.
    services.engine.shift_clock(room_id, 1_000)
    services.engine.tick(room_id)
    assert services.engine.stats(room_id).dealt_total == before.dealt_total + 1


def test_a_lane_of_a_room_not_open_admits_nobody(
    client: FlaskClient, services: Services, api_key: str, agent: Agent
) -> None:
    room_id = lane_room(services, "drop", rate=60)
    services.engine.pause(room_id)
    answer = lane_join(Visitor(client, api_key), agent, "drop")
    assert answer.status_code == 429 and answer.json["error"] == "RateLimited"


def run_lane_agent(url: str, api_key: str, origin: str, secret: bytes, tries: int, start: Any,
                   out: Any) -> None:  # fmt: skip
    """One agent process: ``tries`` signed arrivals and joins, as fast as it can, from
    ``start``; puts the joins' statuses."""
    import requests

    agent = Agent(origin, secret)
    authority = url.removeprefix("http://")
    session = requests.Session()
    statuses = []
    start.wait(timeout=60)
    for _ in range(tries):
        now = int(time.time())
        head = agent.sign("POST", authority, ARRIVE, now, scheme="http")
        issued = session.post(f"{url}{ARRIVE}", json={"apiKey": api_key, "room": "lane"},
                              headers=head, timeout=30).json()  # fmt: skip
        body = {"apiKey": api_key, "room": "lane", "challenge": issued["challenge"],
                "solutions": ["0"], "signals": {}}  # fmt: skip
        head = agent.sign("POST", authority, "/api/v1/queue/join", now, scheme="http")
        joined = session.post(f"{url}/api/v1/queue/join", json=body, headers=head, timeout=30)
        statuses.append(joined.status_code)
    out.put(statuses)


def test_several_processes_get_the_lanes_rate_and_the_visitors_keep_theirs(
    live_server: Any, redis_client: Any, directory: KeyDirectory, agent: Agent
) -> None:
    """Four agent processes against two workers: whatever they send, the lane admits its
    burst, then one more for each second its room's clock moves; the visitors' admissions
    go on at the room's rate, untouched by them."""
    import multiprocessing as mp

    from anteroom.engine import Engine
    from anteroom.store.keystore import KeyStore

    server = live_server(
        ANTEROOM_WORKERS="2", ANTEROOM_OUTBOUND_ALLOW_LOOPBACK="1",
        ANTEROOM_OUTBOUND_CA_FILE=str(directory.ca_file),
    )  # fmt: skip
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("live")[0].public_key
    room = make_room(engine, env="live", slug="lane", ratePerMinute=60,
                     agentLaneRatePerMinute=60, agents={"*": "lane"})  # fmt: skip
    engine.set_clock(room, T0)
    engine.open(room)
    for i in range(3):
        engine.enter(room, f"visitor-{i}", "s", 10)
    ctx = mp.get_context("spawn")
    admitted = []
    for _ in range(2):  # the burst, then one second of the room's clock
        start, out = ctx.Event(), ctx.Queue()
        workers = [
            ctx.Process(target=run_lane_agent,
                        args=(server.url, api_key, agent.directory, agent.secret, 3, start, out))
            for _ in range(4)
        ]  # fmt: skip
        for p in workers:
            p.start()
        start.set()
        statuses = [s for _ in workers for s in out.get(timeout=120)]
        for p in workers:
            p.join(timeout=30)
        assert set(statuses) <= {200, 429}, statuses
        admitted.append(statuses.count(200))
        engine.shift_clock(room, 1_000)
        engine.tick(room)  # this second's tick (unless a worker's ticker made it first)
    assert admitted == [1, 1]  # 60 a minute: a burst of one, then one a second
    # The visitors: admitted by the drain at the room's own rate, one a second, as if no
    # agent had come; the lane's admissions are in no count of theirs.
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    stats = engine.stats(room)
    assert (stats.dealt_total, stats.waiting, stats.active) == (3, 0, 3)


def test_an_agents_challenge_buys_nothing_unsigned_nor_by_the_older_calls(
    client: FlaskClient, services: Services, api_key: str, agent: Agent
) -> None:
    """A lane agent's challenge of no work, joined unsigned, would put it in the visitors' line
    (taking their rate) without work; traded at the older identify call, a session without work."""
    room_id = lane_room(services, "drop", rate=60)
    before = services.engine.stats(room_id)
    visitor = Visitor(client, api_key)
    now = int(time.time())
    issued = visitor.arrive("drop", **agent.sign("POST", "localhost", ARRIVE, now, scheme="http"))
    assert issued.json["tier"] == "agent"
    unsigned = visitor.post("queue/join", visitor.join_body("drop", issued.json))
    assert unsigned.status_code == 401 and unsigned.json["error"] == "TokenInvalid"
    body = {"apiKey": api_key, "challenge": issued.json["challenge"], "solution": "0"}
    traded = visitor.post("identify", body)
    assert traded.status_code == 401 and traded.json["error"] == "TokenInvalid"
    after = services.engine.stats(room_id)
    assert (after.waiting, after.tickets) == (before.waiting, before.tickets)
