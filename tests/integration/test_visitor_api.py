"""The visitor API through the real app and a real Redis: shapes, codes, headers."""

from __future__ import annotations

import time

import pytest
import redis
from flask.testing import FlaskClient

from anteroom.identity import proof_of_work as pow
from anteroom.sdk import tokens
from anteroom.sdk import verification as verify
from anteroom.service_container import Services
from helpers import TEST_KEYS, make_room
from visitor_client import Visitor

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


def error_of(response: object) -> str:
    body = response.json  # type: ignore[attr-defined]
    assert set(body) >= {"error", "message"}
    return str(body["error"])


def test_from_identify_to_admission(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    first, second = Visitor(client, api_key), Visitor(client, api_key)
    identified = first.identify()
    assert identified.status_code == 200
    assert set(identified.json) == {"sessionToken", "expiresAt", "score", "sig"}
    assert identified.json["score"] == 0 and identified.json["sig"] == []
    a = first.enter("drop")
    assert a.status_code == 200 and a.json["status"] == "waiting"
    assert set(a.json) >= {
        "status", "room", "roomName", "redirectUrl", "ticket", "position", "etaSeconds",
        "opensAt", "pollAfterMs", "queueToken", "token",
    }  # fmt: skip
    assert a.headers["Retry-After"] == "1"
    b = second.enter("drop")
    assert (b.json["ticket"], b.json["position"]) == (2, 2)
    services.engine.shift_clock(room, 1_000)
    admitted = first.poll()
    assert admitted.json["status"] == "admitted" and "Retry-After" not in admitted.headers
    result = verify.verify_admission(admitted.json["token"], services.keyring, room="drop")
    assert result.valid, result.reason
    claims = result.claims or {}
    session = tokens.decode(services.keyring, first.session or "", tokens.SESSION)
    assert (claims["q"], claims["qr"], claims["env"]) == ("drop", room, "shop")
    assert (claims["vid"], claims["qj"]) == (session["vid"], session["jti"])
    assert claims["exp"] - claims["iat"] == 300 and "qi" not in claims
    assert second.poll().json["position"] == 1


def test_a_repeated_entry_is_the_same_spot(client: FlaskClient, api_key: str, room: str) -> None:
    v = Visitor(client, api_key)
    first = v.enter("drop").json
    again = v.enter("drop").json
    assert (again["ticket"], again["position"]) == (first["ticket"], first["position"])
    v.identify()  # a new session keeps the vid, so the same spot
    assert v.enter("drop").json["ticket"] == first["ticket"]


def test_a_ticket_near_the_head_polls_in_one_round_trip(
    client: FlaskClient, services: Services, redis_client: redis.Redis, api_key: str
) -> None:
    room_id = make_room(services.engine, env="shop", slug="drop", ratePerMinute=1)
    services.engine.open(room_id)
    v = Visitor(client, api_key)
    assert v.enter("drop").json["status"] == "waiting"
    claims = tokens.decode(services.keyring, str(v.ticket), tokens.TICKET)
    assert claims["qn"] == 1  # first in line: its ticket says so

    def evalsha_calls() -> int:
        return int(redis_client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))

    assert v.poll().json["position"] == 1  # the first also loads the script into Redis
    calls = evalsha_calls()
    assert v.poll().json["position"] == 1
    assert evalsha_calls() - calls == 1


def test_idle_room_takes_no_ticket(client: FlaskClient, services: Services, api_key: str) -> None:
    make_room(services.engine, env="shop", slug="later")
    answer = Visitor(client, api_key).enter("later")
    assert answer.status_code == 200
    assert answer.json["status"] == "idle" and answer.json["queueToken"] is None


def test_leave(client: FlaskClient, api_key: str, room: str) -> None:
    a, b = Visitor(client, api_key), Visitor(client, api_key)
    a.enter("drop")
    b.enter("drop")
    assert a.leave().status_code == 204
    assert b.poll().json["position"] == 1
    assert error_of(a.poll()) == "TicketGone" and a.poll().status_code == 410


def test_refresh_extends_an_admission(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    v = Visitor(client, api_key)
    services.engine.shift_clock(room, 1_000)
    token = v.enter("drop").json["token"]
    assert token
    services.engine.shift_clock(room, 60_000)
    fresh = v.post("admission/refresh", {"apiKey": api_key, "token": token})
    assert fresh.status_code == 200 and fresh.json["status"] == "admitted"
    old = tokens.decode(services.keyring, token, tokens.ADMISSION, now=0)
    new = tokens.decode(services.keyring, fresh.json["token"], tokens.ADMISSION, now=0)
    assert new["jti"] == old["jti"] and new["exp"] >= old["exp"] + 60


# -- every error code ------------------------------------------------------------------------


def test_bad_requests_name_the_field(client: FlaskClient, api_key: str, room: str) -> None:
    v = Visitor(client, api_key)
    cases = [
        (client.post("/api/v1/queue/enter", data="{not json"), "body"),
        (client.post("/api/v1/queue/enter", json=[1, 2]), "body"),
        (client.post("/api/v1/queue/enter", data=""), "body"),
        (v.post("queue/enter", {"apiKey": api_key, "room": 5, "sessionToken": "x"}), "room"),
        (v.post("queue/enter", {"apiKey": api_key, "room": "drop"}), "sessionToken"),
        (v.post("queue/poll", {"apiKey": api_key, "ticket": "t", "extra": 1}), "extra"),
        (v.post("challenge", {"apiKey": True}), "apiKey"),
    ]
    for response, field in cases:
        assert response.status_code == 400, response.json
        assert error_of(response) == "BadRequest"
        assert field in response.json["fields"]


def test_every_bad_field_is_named_at_once(client: FlaskClient, api_key: str) -> None:
    """One 400 names each problem with what is wrong, so a client fixes a request in one go."""
    body = {"apiKey": True, "room": "x" * 5000, "extra": 1}
    response = Visitor(client, api_key).post("queue/enter", body)
    assert response.status_code == 400 and error_of(response) == "BadRequest"
    assert response.json["fields"] == {
        "apiKey": "must be a string",
        "room": "is too long",
        "sessionToken": "is required",
        "extra": "unknown field",
    }
    signals = {"apiKey": api_key, "challenge": "c", "solution": "s", "signals": [1]}
    response = Visitor(client, api_key).post("identify", signals)
    assert response.json["fields"] == {"signals": "must be an object"}


def test_huge_body_refused(client: FlaskClient) -> None:
    response = client.post("/api/v1/queue/poll", data="x" * 100_000)
    assert response.status_code == 413 and error_of(response) == "PayloadTooLarge"


def test_unknown_route_and_method_answer_json(client: FlaskClient) -> None:
    assert error_of(client.get("/api/v1/nothing")) == "NotFound"
    response = client.get("/api/v1/queue/enter")
    assert response.status_code == 405 and error_of(response) == "MethodNotAllowed"


def test_unauthorized(client: FlaskClient) -> None:
    for key in ("pk_nobody", "sk_secret", ""):
        response = client.post("/api/v1/challenge", json={"apiKey": key})
        assert response.status_code == 401 and error_of(response) == "Unauthorized"


def test_token_invalid_and_expired(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    v = Visitor(client, api_key)
    v.identify()
    session = v.session or ""
    flipped = session[:-3] + ("A" if session[-3] != "A" else "B") + session[-2:]
    body = {"apiKey": api_key, "room": "drop", "sessionToken": flipped}
    assert error_of(v.post("queue/enter", body)) == "TokenInvalid"
    # A session presented as a ticket, and a ticket as a session.
    assert error_of(v.post("queue/poll", {"apiKey": api_key, "ticket": session})) == "TokenInvalid"
    ticket = v.enter("drop").json["queueToken"]
    body = {"apiKey": api_key, "room": "drop", "sessionToken": ticket}
    assert error_of(v.post("queue/enter", body)) == "TokenInvalid"
    claims = tokens.decode(services.keyring, session, tokens.SESSION)
    claims["exp"] = int(time.time()) - 1
    expired = tokens.sign(services.keyring, tokens.SESSION, claims)
    body = {"apiKey": api_key, "room": "drop", "sessionToken": expired}
    response = v.post("queue/enter", body)
    assert response.status_code == 401 and error_of(response) == "TokenExpired"
    other_key = tokens.sign(tokens.Keyring.generate(), tokens.SESSION, claims | {"exp": 2**31})
    body = {"apiKey": api_key, "room": "drop", "sessionToken": other_key}
    assert error_of(v.post("queue/enter", body)) == "TokenInvalid"


def test_session_of_another_environment(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    record, _ = services.keystore.create("staging")
    make_room(services.engine, env="staging", slug="drop")
    staging = Visitor(client, record.public_key)
    staging.identify()
    body = {"apiKey": api_key, "room": "drop", "sessionToken": staging.session}
    assert error_of(staging.post("queue/enter", body)) == "TokenInvalid"


def test_queue_denied_for_convicted_sessions(client: FlaskClient, api_key: str, room: str) -> None:
    robot = Visitor(client, api_key)
    answer = robot.identify(signals={"webdriver": True, "languages": 2})
    assert "bot" in answer.json["sig"] and answer.json["score"] == 100
    response = robot.enter("drop")
    assert response.status_code == 403 and error_of(response) == "QueueDenied"
    headless = Visitor(client, api_key)
    headless.identify(**{"User-Agent": "Mozilla/5.0 HeadlessChrome/156.0"})
    assert error_of(headless.enter("drop")) == "QueueDenied"


def test_held_session(client: FlaskClient, services: Services, api_key: str) -> None:
    room_id = make_room(services.engine, env="shop", slug="strict", holdScore=50)
    services.engine.open(room_id)
    v = Visitor(client, api_key)
    answer = v.identify(signals={"languages": 0}, **{"Accept-Language": ""})
    assert answer.json["score"] == 50 and "bot" not in answer.json["sig"]
    assert set(answer.json["sig"]) == {"no-accept-language", "no-languages"}
    held = v.enter("strict")
    assert held.status_code == 200 and held.json["status"] == "held"
    assert (held.json["position"], held.json["etaSeconds"]) == (None, None)
    assert held.headers["Retry-After"] == "15"


def test_busy_network_raises_the_score(client: FlaskClient, api_key: str) -> None:
    v = Visitor(client, api_key, address="192.0.2.50")
    scores = [v.identify().json["score"] for _ in range(21)]
    assert scores[:20] == [0] * 20 and scores[20] == 40
    assert Visitor(client, api_key, address="192.0.2.51").identify().json["score"] == 0


def test_session_revoked(client: FlaskClient, services: Services, api_key: str, room: str) -> None:
    v = Visitor(client, api_key)
    v.enter("drop")
    claims = tokens.decode(services.keyring, v.session or "", tokens.SESSION)
    services.engine.revoke(room, vid=claims["vid"], life_ms=600_000)
    response = v.enter("drop")
    assert response.status_code == 403 and error_of(response) == "SessionRevoked"


def test_address_required_in_bind_ip_rooms(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    room_id = make_room(services.engine, env="shop", slug="bound", bindIp=True)
    services.engine.open(room_id)
    services.engine.shift_clock(room_id, 1_000)
    v = Visitor(client, api_key)
    v.identify()
    v.address = ""
    response = v.enter("bound")
    assert response.status_code == 403 and error_of(response) == "AddressRequired"
    v.address = "198.51.100.20"
    token = v.enter("bound").json["token"]
    assert verify.verify_admission(token, services.keyring, room="bound", client_ip="198.51.100.20")
    moved = verify.verify_admission(
        token, services.keyring, room="bound", client_ip="198.51.100.21"
    )
    assert moved.reason == "ip-mismatch"
    assert verify.verify_admission(token, services.keyring, room="drop").reason == "wrong-room"
    assert (
        verify.verify_admission(
            token, services.keyring, room="bound", client_ip="198.51.100.20", session_jti="other"
        ).reason
        == "session-mismatch"
    )


def test_room_not_found(client: FlaskClient, api_key: str) -> None:
    response = Visitor(client, api_key).enter("no-such-room")
    assert response.status_code == 404 and error_of(response) == "RoomNotFound"


def test_ticket_gone_after_close(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    v = Visitor(client, api_key)
    v.enter("drop")
    services.engine.close(room)
    response = v.poll()
    assert response.status_code == 410 and error_of(response) == "TicketGone"


def test_per_ticket_poll_limit(client: FlaskClient, api_key: str, room: str) -> None:
    v = Visitor(client, api_key)
    v.enter("drop")
    statuses = [v.poll().status_code for _ in range(90)]
    assert statuses[:89] == [200] * 89 and statuses[89] == 429
    response = v.poll()
    assert error_of(response) == "RateLimited"
    assert 1 <= int(response.headers["Retry-After"]) <= 60 == 60
    assert response.json["retryAfter"] == int(response.headers["Retry-After"])


def test_per_address_limit_on_challenges(client: FlaskClient, api_key: str) -> None:
    v = Visitor(client, api_key, address="192.0.2.99")
    codes = [v.post("challenge", {"apiKey": api_key}).status_code for _ in range(61)]
    assert codes[:60] == [200] * 60 and codes[60] == 429
    limited = v.post("challenge", {"apiKey": api_key})
    assert error_of(limited) == "RateLimited" and int(limited.headers["Retry-After"]) >= 1
    assert (
        Visitor(client, api_key, address="192.0.2.100")
        .post("challenge", {"apiKey": api_key})
        .status_code
        == 200
    )  # another address is not affected


def test_queue_full(client: FlaskClient, services: Services, api_key: str) -> None:
    room_id = make_room(services.engine, env="shop", slug="tiny", maxWaiting=1, ratePerMinute=1)
    services.engine.open(room_id)
    Visitor(client, api_key).enter("tiny")
    response = Visitor(client, api_key).enter("tiny")
    assert response.status_code == 429 and error_of(response) == "QueueFull"
    assert int(response.headers["Retry-After"]) > 0


def test_busy_when_redis_is_out_of_memory(
    client: FlaskClient, redis_client: redis.Redis, api_key: str, room: str
) -> None:
    v = Visitor(client, api_key)
    v.identify()
    redis_client.config_set("maxmemory", "1")
    try:
        response = v.enter("drop")
    finally:
        redis_client.config_set("maxmemory", "0")
    assert response.status_code == 429 and error_of(response) == "Busy"
    assert int(response.headers["Retry-After"]) > 0
    assert v.enter("drop").json["ticket"] == 1  # nothing was lost or half-written


# -- proof of work ---------------------------------------------------------------------------


def test_spent_challenge_is_refused_to_another_solution(client: FlaskClient, api_key: str) -> None:
    v = Visitor(client, api_key)
    body = v.solved()
    first = v.post("identify", body)
    assert first.status_code == 200
    # A retry of the same proof (its answer lost, a timeout) gets the session it earned.
    again = v.post("identify", body)
    assert again.status_code == 200 and again.json == first.json
    # Another solution of the spent challenge earns nothing.
    claims = tokens.decode(tokens.Keyring.parse(TEST_KEYS), body["challenge"], tokens.CHALLENGE)
    other = pow.solve(body["challenge"], int(claims["d"]), start=int(body["solution"]) + 1)
    refused = v.post("identify", body | {"solution": other})
    assert refused.status_code == 401 and error_of(refused) == "TokenInvalid"


def test_wrong_solution_is_refused(client: FlaskClient, api_key: str) -> None:
    v = Visitor(client, api_key)
    challenge = v.post("challenge", {"apiKey": api_key}).json
    token, bits = challenge["challenge"], challenge["difficulty"]
    wrong = next(str(n) for n in range(10_000) if not pow.check_solution(token, str(n), bits))
    response = v.post("identify", {"apiKey": api_key, "challenge": token, "solution": wrong})
    assert response.status_code == 400 and "solution" in response.json["fields"]
    # The wrong try did not spend the challenge: the right answer still works.
    right = pow.solve(token, bits)
    ok = v.post("identify", {"apiKey": api_key, "challenge": token, "solution": right})
    assert ok.status_code == 200


def test_vid_is_kept_only_through_a_valid_previous_session(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    v = Visitor(client, api_key)
    v.identify()
    first = tokens.decode(services.keyring, v.session or "", tokens.SESSION)
    v.identify()
    second = tokens.decode(services.keyring, v.session or "", tokens.SESSION)
    assert second["vid"] == first["vid"] and second["jti"] != first["jti"]
    v.session = tokens.sign(tokens.Keyring.generate(), tokens.SESSION, first)  # forged
    v.identify()
    third = tokens.decode(services.keyring, v.session or "", tokens.SESSION)
    assert third["vid"] != first["vid"]


def test_cors_for_storefronts(client: FlaskClient) -> None:
    response = client.options("/api/v1/queue/enter", headers={"Origin": "https://shop.example"})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "Retry-After" in response.headers["Access-Control-Expose-Headers"]


def test_a_reject_room_refuses_newcomers_with_its_closed_message(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    waiting = Visitor(client, api_key)
    message = {"en": "Sold out, thank you for waiting", "de": "Ausverkauft"}
    services.engine.update_room(room, {"ratePerMinute": 1, "closedMessage": message})
    first = waiting.enter("drop")
    assert first.status_code == 200
    services.engine.update_room(room, {"mode": "reject"})
    answer = Visitor(client, api_key).enter("drop")
    assert answer.status_code == 403 and error_of(answer) == "RoomClosed"
    assert answer.json["closedMessage"] == message
    # Whoever was already in the room keeps their spot (or admission) as it was.
    again = waiting.enter("drop")
    assert again.status_code == 200 and again.json["status"] == first.json["status"]
    assert again.json.get("position") == first.json.get("position")


def test_a_passthrough_room_admits_everyone_at_once(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    services.engine.update_room(room, {"ratePerMinute": 1, "mode": "passthrough"})
    for _ in range(3):
        answer = Visitor(client, api_key).enter("drop")
        assert answer.status_code == 200 and answer.json["status"] == "admitted"
        assert answer.json["token"].startswith("ab1.")
    assert services.engine.stats(room).dealt_total == 3


def test_a_random_room_answers_odds_and_no_place(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    services.engine.update_room(room, {"ratePerMinute": 1})
    first, second = Visitor(client, api_key), Visitor(client, api_key)
    assert first.enter("drop").json["position"] == 1  # nothing earned yet: both wait
    assert second.enter("drop").json["position"] == 2
    services.engine.update_room(room, {"mode": "random"})
    third = Visitor(client, api_key)
    for answer in (third.enter("drop"), second.poll()):
        body = answer.json
        assert answer.status_code == 200 and body["status"] == "waiting"
        assert body["position"] is None and body["etaSeconds"] is None
        assert body["odds"] == 0.3333  # 1 a minute over the 3 waiting
        assert int(answer.headers["Retry-After"]) >= 2
    # back to fifo: a place again, and no odds
    services.engine.update_room(room, {"mode": "fifo"})
    body = third.poll().json
    assert body["position"] == 3 and body["odds"] is None
