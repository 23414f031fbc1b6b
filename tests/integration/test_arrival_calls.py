"""The two-call arrival (arrive, then join) through the real app and a real Redis."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest
import redis
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.identity import proof_of_work as pow
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.web.app_factory import close_app, create_app
from helpers import make_room
from visitor_client import Visitor, solve_arrival

pytestmark = pytest.mark.redis


@pytest.fixture
def api_key(services: Services) -> str:
    record, _ = services.keystore.create("shop")
    return record.public_key


@pytest.fixture
def room(services: Services, api_key: str) -> str:
    room_id = make_room(services.engine, env="shop", slug="drop", ratePerMinute=60)
    services.engine.open(room_id)
    return room_id


def test_two_calls_from_arrival_to_ticket(client: FlaskClient, api_key: str, room: str) -> None:
    v = Visitor(client, api_key)
    issued, joined = v.arrive_and_join("drop")
    assert issued.status_code == 200, issued.text
    assert set(issued.json) >= {"challenge", "puzzles", "minPuzzles", "fitMs", "tier"}
    assert joined.status_code == 200, joined.text
    assert set(joined.json) == {"session", "queue"}
    assert joined.json["queue"]["status"] == "waiting" and joined.json["queue"]["ticket"] == 1
    assert joined.headers["Retry-After"] == "1"
    session = tokens.decode(client.application.extensions["anteroom"].keyring,
                            joined.json["session"]["sessionToken"], tokens.SESSION)  # fmt: skip
    ticket = tokens.decode(client.application.extensions["anteroom"].keyring,
                           joined.json["queue"]["queueToken"], tokens.TICKET)  # fmt: skip
    assert (ticket["vid"], ticket["qj"]) == (session["vid"], session["jti"])
    assert v.poll().json["ticket"] == 1


def test_the_fitted_count_is_between_the_floor_and_all(
    settings: Settings, redis_client: redis.Redis
) -> None:
    # The rule, bounded to 2^8 (a fast test): low risk, calm, so 2^8 with a floor of 2^6, in
    # 16 puzzles of 2^4 of which the first 4 reach the floor.
    policy = json.dumps({"shop": {"min": 0, "max": 8}})
    app = create_app(replace(settings, pow_difficulty=0, pow_policy=policy), {"TESTING": True})
    try:
        services = app.extensions["anteroom"]
        api_key = services.keystore.create("shop")[0].public_key
        services.engine.open(make_room(services.engine, env="shop", slug="drop"))
        _fitted(Visitor(app.test_client(), api_key))
    finally:
        close_app(app)


def _fitted(v: Visitor) -> None:
    issued = v.arrive("drop").json
    assert issued["tier"] == "low-calm"
    assert (len(issued["puzzles"]), issued["minPuzzles"], issued["difficulty"]) == (16, 4, 4)
    body = v.join_body("drop", issued)
    too_few = body | {"solutions": body["solutions"][:3]}
    refused = v.post("queue/join", too_few)
    assert refused.status_code == 400 and "solutions" in refused.json["fields"], refused.text
    more = body | {"solutions": solve_arrival(issued, 6)}
    assert v.join(more).status_code == 200


def test_a_wrong_room_leaves_the_challenge_unspent(
    client: FlaskClient, api_key: str, room: str
) -> None:
    v = Visitor(client, api_key)
    issued = v.arrive("drop").json
    missing = v.post("queue/join", v.join_body("nope", issued))
    assert missing.status_code == 404 and missing.json["error"] == "RoomNotFound"
    assert v.join(v.join_body("drop", issued)).status_code == 200


def test_the_older_calls_still_answer(client: FlaskClient, api_key: str, room: str) -> None:
    v = Visitor(client, api_key)
    assert v.identify().status_code == 200
    entered = v.enter("drop")
    assert entered.status_code == 200 and entered.json["status"] == "waiting", entered.text
    assert pow.MAX_PUZZLES == 16


def test_a_join_is_one_round_trip_to_redis_on_one_server(
    client: FlaskClient, api_key: str, room: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every command or pipeline the app sends is one packed write on a real connection.
    first = Visitor(client, api_key, address="198.51.100.8")
    assert first.arrive_and_join("drop")[1].status_code == 200  # the scripts loaded
    v = Visitor(client, api_key, address="198.51.100.9")
    issued = v.arrive("drop").json
    body = v.join_body("drop", issued)
    sent: list[object] = []
    real = redis.connection.Connection.send_packed_command
    request_thread = threading.current_thread()

    def counted(self: redis.connection.Connection, command: object, **options: bool) -> None:
        if threading.current_thread() is request_thread:  # not the room directory's rounds
            sent.append(command)
        real(self, command, **options)

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", counted)
    joined = v.join(body)
    assert joined.status_code == 200 and joined.json["queue"]["ticket"] == 2, joined.text
    assert len(sent) == 1, [b"".join(c).split(b"\r\n")[2] for c in sent]
    sent.clear()
    again = v.join(body)  # the same proof again: the first answer, in one round trip as well
    assert again.status_code == 200 and again.json["session"] == joined.json["session"]
    assert again.json["queue"]["ticket"] == 2
    assert len(sent) == 1, [b"".join(c).split(b"\r\n")[2] for c in sent]


def test_a_busy_network_earns_its_sessions_the_busy_score(
    client: FlaskClient, api_key: str, room: str
) -> None:
    # The network's identifies are counted by the join itself: past 20 in a minute from one
    # network (an IPv4 address), its next session carries the busy-network signal and weight.
    scores = []
    for _ in range(22):
        v = Visitor(client, api_key, address="198.51.100.10")
        _, joined = v.arrive_and_join("drop")
        assert joined.status_code == 200, joined.text
        scores.append((joined.json["session"]["score"], joined.json["session"]["sig"]))
    assert all("busy-network" not in sig for _, sig in scores[:20]), scores
    assert all("busy-network" in sig for _, sig in scores[20:]), scores
    assert scores[21][0] == scores[0][0] + 40
