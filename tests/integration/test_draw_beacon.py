"""A draw that takes a public randomness beacon (docs/draw.md): the round is
named at commitment, the draw waits for its value, orders with it, and ``anteroom verify-draw``
checks the order with the value the document publishes. The beacon is a local stand-in with
drand's HTTP shape (this machine reaches no real one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.engine import Engine, NoDraw
from anteroom.queue.draw.draw_beacon import round_at
from anteroom.sdk import draw, verify_draw
from anteroom.service_container import Services
from helpers import free_port, make_room

# The stand-in beacon is on 127.0.0.1: reached with the development setting, in this process
# and in the apps the tests build.
pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("dev_outbound")]

MINUTE = 60_000
START = 1_800_000_000_000
GENESIS, PERIOD = 1_700_000_000, 30  # seconds, as drand's /info gives them
API = "/api/management/v1"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.with_overrides(outbound_allow_loopback=True)


@dataclass
class StandIn:
    """A drand-shaped beacon: ``GET /public/<round>`` answers the rounds in ``values``."""

    url: str
    values: dict[int, str] = field(default_factory=dict)
    asked: list[int] = field(default_factory=list)


@pytest.fixture
def beacon() -> Iterator[StandIn]:
    stand_in = StandIn("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            head, _, number = self.path.rpartition("/")
            round_number = int(number) if head.endswith("/public") and number.isdigit() else 0
            stand_in.asked.append(round_number)
            if round_number not in stand_in.values:
                self.send_error(404)  # drand's answer to a round not emitted yet
                return
            body = {"round": round_number, "randomness": stand_in.values[round_number],
                    "signature": "00"}  # fmt: skip
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass  # quiet: the test output is for failures

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stand_in.url = f"http://127.0.0.1:{server.server_address[1]}/drand"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield stand_in
    server.shutdown()
    server.server_close()
    thread.join()


def beacon_setting(stand_in: StandIn) -> dict[str, Any]:
    return {"url": stand_in.url, "genesisTime": GENESIS, "period": PERIOD}


def scheduled(engine: Engine, stand_in: StandIn) -> tuple[str, int]:
    """A room naming the stand-in beacon, its opening scheduled a minute ahead; (id, round)."""
    room = make_room(engine, drawBeacon=beacon_setting(stand_in))
    engine.set_clock(room, START)
    engine.open(room, START + MINUTE)
    return room, round_at(beacon_setting(stand_in), START + MINUTE)


def test_the_round_named_at_commitment_is_the_first_after_opens_at_and_is_published(
    engine: Engine, beacon: StandIn
) -> None:
    room, round_number = scheduled(engine, beacon)
    emitted_ms = (GENESIS + (round_number - 1) * PERIOD) * 1000
    # Emitted at or after opensAt, the round before it before: nobody knows it at commitment.
    assert emitted_ms >= START + MINUTE > emitted_ms - PERIOD * 1000
    public = engine.get_room(room)["draw"]
    assert public["beacon"] == {"url": beacon.url, "round": round_number, "value": None}
    assert "waiting" not in public
    # The setting changed later does not move the round the commitment named.
    engine.update_room(room, {"drawBeacon": None})
    assert engine.get_room(room)["draw"]["beacon"]["round"] == round_number


def test_the_draw_waits_for_the_beacon_and_then_orders_with_its_value(
    engine: Engine, beacon: StandIn
) -> None:
    room, round_number = scheduled(engine, beacon)
    tickets = {f"v{i}": engine.enter(room, f"v{i}", "s", 10).ticket for i in range(40)}
    engine.shift_clock(room, MINUTE)
    first = engine.tick(room)
    assert first.draw_due and beacon.asked == [round_number]
    public = engine.get_room(room)["draw"]
    assert public["waiting"] == f"waiting for beacon round {round_number}"
    assert public.get("seed") is None
    # The pre-queue waits with it: ticks a minute on admit nobody, and the seed stays secret.
    engine.shift_clock(room, MINUTE)
    assert engine.tick(room).dealt == 0 and len(beacon.asked) == 2
    # The beacon answers: the next tick draws with its value.
    value = "5e" * 32
    beacon.values[round_number] = value
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    public = engine.get_room(room)["draw"]
    assert public["beacon"] == {"url": beacon.url, "round": round_number, "value": value}
    assert "waiting" not in public and public["entrants"] == 40
    listed = engine.drawn_entrants(room)
    assert listed == draw.drawn_order(public["seed"], listed, value)
    assert listed != draw.drawn_order(public["seed"], listed)  # the beacon changed the order
    engine.shift_clock(room, MINUTE)
    assert engine.tick(room).dealt > 0  # the drain goes on in drawn order
    salt = bytes.fromhex(engine.redis.hget(engine.keys.room(room), "dsl") or "")
    front = next(v for v in tickets if draw.entrant_id(salt, v) == listed[0])
    assert engine.poll(room, front, tickets[front], 1).admission is not None


def test_verify_draw_checks_the_order_with_the_published_beacon_value(
    client: FlaskClient, services: Services, beacon: StandIn, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    public, secret = services.keystore.create("shop")
    headers = {"Authorization": f"Bearer {secret}"}
    body = {"slug": "drop", "name": "Drop", "redirectUrl": "https://shop.example/checkout",
            "drawBeacon": beacon_setting(beacon)}  # fmt: skip
    room = client.post(f"{API}/queues", json=body, headers=headers).json
    assert room["drawBeacon"] == beacon_setting(beacon)
    services.engine.set_clock(room["id"], START)
    patch = {"action": "open", "opensAt": START + MINUTE}
    scheduled_room = client.patch(f"{API}/queues/{room['id']}", json=patch, headers=headers).json
    round_number = scheduled_room["draw"]["beacon"]["round"]
    url = f"/queue/drop/fairness.json?key={public.public_key}"
    before = client.get(url).json
    assert before["beacon"] == {"url": beacon.url, "round": round_number, "value": None}
    assert before["guarantee"] == "commitment + beacon"
    for i in range(30):
        services.engine.enter(room["id"], f"v{i}", "s", 10)
    services.engine.shift_clock(room["id"], MINUTE)
    services.engine.tick(room["id"])  # the round is not out yet: the draw waits, and says so
    waiting = f"waiting for beacon round {round_number}"
    detail = client.get(f"{API}/queues/{room['id']}", headers=headers).json
    assert detail["draw"]["waiting"] == waiting
    signed = client.post(
        "/console/sign-in", data={"secret": secret}, headers={"Sec-Fetch-Site": "same-origin"}
    )
    assert signed.status_code in (302, 303)
    assert waiting in client.get(f"/console/rooms/{room['id']}").get_data(as_text=True)
    beacon.values[round_number] = "c3" * 32
    services.engine.shift_clock(room["id"], 1_000)
    services.engine.tick(room["id"])
    assert waiting not in client.get(f"/console/rooms/{room['id']}").get_data(as_text=True)
    document = client.get(url).json
    assert document["beacon"]["value"] == "c3" * 32 and document["entrants"] == 30
    page = client.get(f"/queue/drop/fairness?key={public.public_key}").get_data(as_text=True)
    assert f"The commitment and public beacon round {round_number}" in page
    assert '<code id="beacon-value">' + "c3" * 32 in page
    listed = client.get("/queue/drop/" + document["entrantsUrl"]).json
    (tmp_path / "entrants.json").write_text(json.dumps(listed))

    def check(doc: dict[str, Any]) -> int:
        path = tmp_path / "fairness.json"
        path.write_text(json.dumps(doc | {"entrantsUrl": "entrants.json"}))
        capsys.readouterr()
        return verify_draw.main(["--fairness", str(path)])

    assert check(document) == 0
    assert f"beacon round {round_number}" in capsys.readouterr().out
    changed = document | {"beacon": document["beacon"] | {"value": "c4" * 32}}
    assert check(changed) == 1 and "order-mismatch" in capsys.readouterr().err
    assert check(document | {"beacon": None}) == 1  # dropping the beacon is caught too


@pytest.mark.parametrize(
    "setting",
    [
        {"url": "ftp://beacon.example", "genesisTime": GENESIS, "period": PERIOD},
        {"url": "https://beacon.example?x=1", "genesisTime": GENESIS, "period": PERIOD},
        {"url": "https://beacon.example", "genesisTime": "soon", "period": PERIOD},
        {"url": "https://beacon.example", "genesisTime": GENESIS, "period": 0},
        {"url": "https://beacon.example", "round": 5},
    ],
)
def test_a_bad_beacon_setting_is_a_clear_400(
    client: FlaskClient, services: Services, setting: dict[str, Any]
) -> None:
    _, secret = services.keystore.create("shop")
    body = {"slug": "drop", "name": "Drop", "redirectUrl": "https://shop.example/checkout",
            "drawBeacon": setting}  # fmt: skip
    answer = client.post(f"{API}/queues", json=body, headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 400
    assert [name.split(".")[0] for name in answer.json["fields"]] == ["drawBeacon"]


def test_a_draw_whose_beacon_never_answers_is_re_rolled_onto_a_new_round_in_view(
    engine: Engine, beacon: StandIn
) -> None:
    # A beacon nobody listens on: the draw could wait for it forever.
    dead = {"url": f"http://127.0.0.1:{free_port()}", "genesisTime": GENESIS, "period": PERIOD}
    room = make_room(engine, drawBeacon=dead)
    engine.set_clock(room, START)
    engine.open(room, START + MINUTE)
    first = engine.get_room(room)["draw"]
    for i in range(10):
        engine.enter(room, f"v{i}", "s", 10)
    engine.shift_clock(room, MINUTE)
    assert engine.tick(room).draw_due and "waiting" in engine.get_room(room)["draw"]
    # Past opensAt the round may be public: no re-roll without a beacon to name a new one.
    engine.update_room(room, {"drawBeacon": None})
    with pytest.raises(NoDraw):
        engine.reroll_draw(room)
    # The operator names a beacon that answers and re-rolls: a new seed, and a new round, the
    # first emitted after the re-roll (unknown at the new commitment); the old one in view.
    engine.update_room(room, {"drawBeacon": beacon_setting(beacon)})
    engine.shift_clock(room, MINUTE)  # (its entrants wait on: abandonment is 5 minutes)
    now = engine.stats(room).now_ms
    again = engine.reroll_draw(room)
    new_round = round_at(beacon_setting(beacon), now + 1)
    assert (GENESIS + (new_round - 1) * PERIOD) * 1000 > now
    assert again["beacon"] == {"url": beacon.url, "round": new_round, "value": None}
    assert again["commitment"] != first["commitment"]
    assert [w["commitment"] for w in again["withdrawn"]] == [first["commitment"]]
    assert again["withdrawn"][0]["withdrawnAt"] == now
    # Its round comes out: the draw is made with it, and the new commitment is the one kept.
    beacon.values[new_round] = "7a" * 32
    engine.shift_clock(room, PERIOD * 1_000)
    engine.tick(room)
    made = engine.get_room(room)["draw"]
    assert made["entrants"] == 10 and made["beacon"]["value"] == "7a" * 32
    assert draw.commitment(made["seed"]) == again["commitment"]
    listed = engine.drawn_entrants(room)
    assert listed == draw.drawn_order(made["seed"], listed, "7a" * 32)
