"""The poll's hot path (web/visitor/hot_path.py) answers exactly as the Flask views do, without
their
request cycle; what it does not handle reaches the views untouched."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import Client
from werkzeug.wrappers import Response

from anteroom.queue.line.far_poll import EXACT_WITHIN
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.web.visitor.hot_path import HotPath
from helpers import make_room
from visitor_client import FlaskTransport, Visitor

pytestmark = pytest.mark.redis
# Freshly signed on every answer (issued-at, ids): compared by their claims instead.
SIGNED = ("queueToken", "token")


@pytest.fixture
def api_key(services: Services) -> str:
    return services.keystore.create("shop")[0].public_key


@pytest.fixture
def room(services: Services) -> str:
    room_id = make_room(services.engine, env="shop", slug="drop", ratePerMinute=60)
    services.engine.open(room_id)
    return room_id


@pytest.fixture
def views(app: Flask) -> Client:
    """A client of the Flask views alone, behind the hot path."""
    hot = app.wsgi_app
    assert isinstance(hot, HotPath)
    return Client(hot.inner, Response)


def same_answer(services: Services, hot: Any, flask: Any) -> None:
    """Status, headers and body alike; signed tokens alike in everything but when they were made."""
    assert hot.status == flask.status
    skip = {"Content-Length"}
    assert {k: v for k, v in hot.headers if k not in skip} == {
        k: v for k, v in flask.headers if k not in skip
    }
    a, b = hot.get_json(), flask.get_json()
    for name in SIGNED:
        if isinstance(a.get(name), str):
            kind = tokens.TICKET if name == "queueToken" else tokens.ADMISSION
            ca, cb = (tokens.decode(services.keyring, t, kind, now=0) for t in (a[name], b[name]))
            for claims in (ca, cb):
                claims.pop("iat"), claims.pop("exp")
            assert ca == cb
            a[name] = b[name] = "signed"
    assert a == b


def both(client: FlaskClient, views: Client, path: str, body: Any) -> tuple[Any, Any]:
    """The same request through the app (hot path first) and through the views alone."""
    return client.post(path, json=body), views.post(path, json=body)


def test_waiting_and_admitted_polls_and_refresh_answer_as_the_views(
    client: FlaskClient, views: Client, services: Services, api_key: str, room: str
) -> None:
    first, second = Visitor(client, api_key), Visitor(client, api_key)
    first.enter("drop")
    second.enter("drop")
    body = {"apiKey": api_key, "ticket": second.ticket}
    # A spot's last-seen (hence the ticket's `qu`) is booked ahead by its first poll in a later
    # millisecond than its entry; one in the entry's millisecond books nothing and the next poll
    # then does (the two answers differed in CI). The room's clock moves on a millisecond.
    services.engine.shift_clock(room, 1)
    hot, flask = both(client, views, "/api/v1/queue/poll", body)
    assert hot.json["status"] == "waiting" and hot.json["position"] == 2
    assert hot.headers["Retry-After"] and hot.headers["Access-Control-Allow-Origin"] == "*"
    same_answer(services, hot, flask)
    services.engine.shift_clock(room, 1_000)
    body = {"apiKey": api_key, "ticket": first.ticket}
    hot, flask = both(client, views, "/api/v1/queue/poll", body)
    assert hot.json["status"] == "admitted" and hot.json["token"]
    same_answer(services, hot, flask)
    refresh = {"apiKey": api_key, "token": hot.json["token"]}
    hot, flask = both(client, views, "/api/v1/admission/refresh", refresh)
    assert hot.status_code == 200 and hot.json["status"] == "admitted"
    same_answer(services, hot, flask)


def test_refusals_answer_as_the_views(
    client: FlaskClient, views: Client, services: Services, api_key: str, room: str
) -> None:
    v = Visitor(client, api_key)
    v.enter("drop")
    ticket = v.ticket
    for _ in range(89):  # the entry counted as one: the 90th poll is refused
        assert v.poll().status_code == 200
    limited = client.post("/api/v1/queue/poll", json={"apiKey": api_key, "ticket": ticket})
    assert limited.status_code == 429 and limited.json["error"] == "RateLimited"
    hot, flask = both(client, views, "/api/v1/queue/poll", {"apiKey": api_key, "ticket": ticket})
    same_answer(services, hot, flask)
    services.engine.close(room)
    hot, flask = both(client, views, "/api/v1/queue/poll", {"apiKey": api_key, "ticket": ticket})
    assert hot.status_code == 410 and hot.json["error"] == "TicketGone"
    same_answer(services, hot, flask)


def test_the_tokens_new_names_and_old_ones_answer_alike_on_both_entrances(
    app: Flask, client: FlaskClient, views: Client, services: Services, api_key: str, room: str
) -> None:
    cycles: list[str] = []
    app.before_request(lambda: cycles.append("flask"))
    first, second = Visitor(client, api_key), Visitor(client, api_key)
    first.enter("drop")
    second.enter("drop")
    services.engine.shift_clock(room, 1)
    poll = "/api/v1/queue/poll"
    new, old = ({"apiKey": api_key, name: second.ticket} for name in ("queueToken", "ticket"))
    cycles.clear()
    by_new, by_old = client.post(poll, json=new), client.post(poll, json=old)
    assert cycles == []  # both names answered by the hot path
    assert by_new.json["status"] == by_old.json["status"] == "waiting"
    assert by_new.json["position"] == by_old.json["position"] == 2
    same_answer(services, *both(client, views, poll, new))
    services.engine.shift_clock(room, 1_000)
    admitted = client.post(poll, json={"apiKey": api_key, "queueToken": first.ticket}).json
    assert admitted["status"] == "admitted"
    for name in ("admissionToken", "token"):
        body = {"apiKey": api_key, name: admitted["token"]}
        hot, flask = both(client, views, "/api/v1/admission/refresh", body)
        assert hot.status_code == 200 and hot.json["status"] == "admitted"
        same_answer(services, hot, flask)
    leave = {"apiKey": api_key, "queueToken": second.ticket}
    hot, flask = both(client, views, "/api/v1/queue/leave", leave)
    assert hot.status_code == flask.status_code == 204


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/queue/poll", {"queueToken": "qt1.a.b.c", "ticket": "qt1.a.b.c"}, "ticket"),
        ("/api/v1/queue/leave", {"queueToken": "qt1.a.b.c", "ticket": "qt1.a.b.c"}, "ticket"),
        ("/api/v1/queue/poll", {}, "queueToken"),
        ("/api/v1/queue/leave", {}, "queueToken"),
        ("/api/v1/admission/refresh", {"admissionToken": "ab1.a.b.c", "token": "ab1.a"}, "token"),
        ("/api/v1/admission/refresh", {}, "admissionToken"),
    ],
)
def test_a_token_sent_under_both_names_or_neither_is_refused_naming_the_field(
    client: FlaskClient,
    views: Client,
    services: Services,
    api_key: str,
    path: str,
    body: dict[str, str],
    field: str,
) -> None:
    hot, flask = both(client, views, path, {"apiKey": api_key} | body)
    assert hot.status_code == 400 and hot.json["error"] == "BadRequest"
    assert list(hot.json["fields"]) == [field]
    same_answer(services, hot, flask)


@pytest.mark.parametrize(
    "body",
    [
        "{not json",
        "[1]",
        '{"apiKey": 1, "ticket": "x"}',
        '{"ticket": "qt1.x.y.z"}',
        '{"apiKey": "pk_x", "ticket": "qt1.a.b.c", "extra": 1}',
        '{"apiKey": "pk_nope", "ticket": "qt1.a.b.c"}',
        '{"apiKey": "pk_x", "ticket": "caf\\u00e9"}',
    ],
)
def test_odd_bodies_reach_the_views_untouched(
    client: FlaskClient, views: Client, services: Services, api_key: str, body: str
) -> None:
    body = body.replace("pk_x", api_key)
    hot = client.post("/api/v1/queue/poll", data=body)
    flask = views.post("/api/v1/queue/poll", data=body)
    assert hot.status_code in (400, 401) and hot.json["message"]
    same_answer(services, hot, flask)


def test_a_visitors_calls_skip_the_request_cycle_and_the_rest_goes_through_it(
    app: Flask, client: FlaskClient, api_key: str, room: str
) -> None:
    cycles: list[str] = []
    app.before_request(lambda: cycles.append("flask"))
    v = Visitor(client, api_key)
    v.enter("drop")
    cycles.clear()
    assert v.poll().status_code == 200
    # Refusals of a well-formed body are the one adapter's too (visitor_calls.py), not Flask's.
    unknown = client.post("/api/v1/queue/poll", json={"apiKey": "pk_nope", "ticket": v.ticket})
    assert unknown.status_code == 401 and unknown.json["error"] == "Unauthorized"
    forged = {"apiKey": api_key, "token": v.ticket}  # a ticket is no admission
    assert client.post("/api/v1/admission/refresh", json=forged).status_code == 401
    assert v.leave().status_code == 204
    # The older journey too (challenge, identify, enter): one fast entrance for every call.
    assert Visitor(client, api_key).enter("drop").status_code == 200
    left = client.post("/api/v1/queue/leave", json={"apiKey": api_key, "ticket": v.ticket})
    assert left.status_code == 204 and left.data == b""  # leaving twice is no error
    assert left.headers["Access-Control-Allow-Origin"] == "*"
    assert cycles == []
    assert client.post("/api/v1/queue/poll", data="{").status_code == 400
    assert client.post("/api/v1/queue/leave", data="{").status_code == 400
    assert cycles == ["flask", "flask"]


def test_a_far_visitors_poll_through_the_app_is_answered_from_the_snapshot(
    client: FlaskClient, services: Services, api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = services.engine
    room_id = make_room(engine, env="shop", slug="long", ratePerMinute=60, maxWaiting=10_000)
    engine.set_clock(room_id, 1_800_000_000_000)  # pinned: the line moves only when told
    engine.open(room_id)
    ahead = 2 * EXACT_WITHIN + 500  # beyond the exact places even with its own block's spread
    for i in range(ahead):
        engine.enter(room_id, f"v{i}", f"s{i}", 10)
    visitor = Visitor(client, api_key)
    visitor.enter("long")
    ops: list[str] = []
    for name in ("_run", "_run_read"):
        original = getattr(engine, name)

        def counted(op: str, *args: Any, _original: Any = original) -> Any:
            ops.append(op)
            return _original(op, *args)

        monkeypatch.setattr(engine, name, counted)
    body = {"apiKey": api_key, "ticket": visitor.ticket}
    first = client.post("/api/v1/queue/poll", json=body)
    assert first.json["status"] == "waiting" and first.json["position"] == ahead + 1
    mark = len(ops)
    for _ in range(3):
        answer = client.post("/api/v1/queue/poll", json=body)
        assert answer.status_code == 200 and answer.json["position"] == ahead + 1
        assert answer.headers["Retry-After"]
    # Answered from this process's snapshot of the room: no poll script ran for them.
    assert not [op for op in ops[mark:] if op.startswith("poll")], ops[mark:]


def test_a_ticket_that_would_say_the_same_is_answered_again_until_half_its_life(
    client: FlaskClient, views: Client, services: Services, api_key: str
) -> None:
    engine = services.engine
    room_id = make_room(engine, env="shop", slug="long", ratePerMinute=60, maxWaiting=10_000)
    engine.set_clock(room_id, 1_800_000_000_000)  # pinned: the line moves only when told
    engine.open(room_id)
    for i in range(2 * EXACT_WITHIN + 500):
        engine.enter(room_id, f"v{i}", f"s{i}", 10)
    visitor = Visitor(client, api_key)
    visitor.enter("long")
    booked = visitor.poll()  # the first far poll books the spot's last-seen ahead: a new ticket
    claims = tokens.decode(services.keyring, booked.json["queueToken"], tokens.TICKET)
    life, now = claims["exp"] - claims["iat"], int(time.time())
    # The same ticket signed ten seconds ago (one signed now would be the same bytes).
    ticket = tokens.sign(
        services.keyring, tokens.TICKET, claims | {"iat": now - 10, "exp": now - 10 + life}
    )
    for answer in both(client, views, "/api/v1/queue/poll", {"apiKey": api_key, "ticket": ticket}):
        assert answer.status_code == 200 and answer.json["status"] == "waiting"
        assert answer.json["queueToken"] == ticket  # nothing it says changed: not signed again
    # The same claims with less than half the ticket's life left: a fresh ticket, saying the same.
    short = tokens.sign(
        services.keyring,
        tokens.TICKET,
        claims | {"iat": now - life // 2 - 5, "exp": now + life // 2 - 5},
    )
    for answer in both(client, views, "/api/v1/queue/poll", {"apiKey": api_key, "ticket": short}):
        fresh = answer.json["queueToken"]
        assert fresh != short
        again = tokens.decode(services.keyring, fresh, tokens.TICKET)
        assert again.pop("exp") >= now + life and again.pop("iat") >= now
        assert again == {k: v for k, v in claims.items() if k not in ("iat", "exp")}


def shape(answer: Any) -> tuple[str, dict[str, str], Any]:
    """Status, headers (not the length) and the body's shape: its fields, their types, and the
    values no signature or fresh id makes differ."""

    def of(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: of(v) for k, v in value.items()}
        if isinstance(value, list):
            return [of(v) for v in value]
        return type(value).__name__ if isinstance(value, str) else value

    headers = {k: v for k, v in answer.headers if k != "Content-Length"}
    return answer.status, headers, of(answer.get_json())


def test_an_arrival_answers_as_the_views(
    client: FlaskClient, views: Client, api_key: str, room: str
) -> None:
    # One visitor through the hot path, one through the views alone, the same journey.
    hot_v = Visitor(client, api_key, address="198.51.100.1")
    flask_v = Visitor(FlaskTransport(views), api_key, address="198.51.100.2")  # type: ignore[arg-type]
    issued = [v.arrive("drop") for v in (hot_v, flask_v)]
    hot, flask = issued
    assert hot.status_code == 200 and hot.json["puzzles"], hot.text
    assert shape(hot) == shape(flask)  # type: ignore[arg-type]
    joined = [
        v.join(v.join_body("drop", i.json)) for v, i in zip((hot_v, flask_v), issued, strict=True)
    ]
    assert joined[0].json["queue"]["ticket"] == 1 and joined[1].json["queue"]["ticket"] == 2
    a, b = (shape(j) for j in joined)  # type: ignore[arg-type]
    assert (a[0], a[1]) == (b[0], b[1])
    # The two sessions were opened a moment apart: their expiries may straddle a second.
    ends = [s[2]["session"].pop("expiresAt") for s in (a, b)]
    assert abs(ends[0] - ends[1]) <= 1_000 and a[2]["session"] == b[2]["session"]
    # The second in line waits behind the first: its place and estimates differ, not its fields.
    assert set(a[2]["queue"]) == set(b[2]["queue"])
    assert a[2]["queue"]["status"] == b[2]["queue"]["status"] == "str"


@pytest.mark.parametrize(
    "case",
    ["wrong-solution", "wrong-room", "bad-invite", "odd-body", "no-key"],
)
def test_arrival_refusals_answer_as_the_views(
    client: FlaskClient, views: Client, services: Services, api_key: str, room: str, case: str
) -> None:
    v = Visitor(client, api_key)
    answers = []
    for via in (client, views):
        issued = v.post("arrive", {"apiKey": api_key, "room": "drop"}).json
        body: Any = v.join_body("drop", issued)
        if case == "wrong-solution":
            body["solutions"] = ["x"] * len(body["solutions"])
        elif case == "wrong-room":
            body["room"] = "nope"
        elif case == "bad-invite":
            body["invite"] = "iv1.a.b.c"
        elif case == "odd-body":
            body = "{" + str(body)
        elif case == "no-key":
            body["apiKey"] = "pk_nope"
        sent = body if isinstance(body, str) else json.dumps(body)
        answers.append(via.post("/api/v1/queue/join", data=sent))
    hot, flask = answers
    assert 400 <= hot.status_code < 500 and hot.json["error"], hot.text
    assert (hot.status, hot.headers.get("Retry-After")) == (
        flask.status,
        flask.headers.get("Retry-After"),
    )
    assert hot.json == flask.json
    assert shape(hot) == shape(flask)


def test_an_arrival_skips_the_request_cycle(
    app: Flask, client: FlaskClient, api_key: str, room: str
) -> None:
    cycles: list[str] = []
    app.before_request(lambda: cycles.append("flask"))
    v = Visitor(client, api_key)
    _, joined = v.arrive_and_join("drop")
    assert joined.status_code == 200 and cycles == []
    assert client.post("/api/v1/queue/join", data="{").status_code == 400
    assert cycles == ["flask"]
