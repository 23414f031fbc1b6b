"""The OpenAPI document: valid OpenAPI 3.1, and the real app answers exactly as it says.

Schemathesis fuzzes every operation through the WSGI app on a real Redis (derandomized, so CI
sees the same cases every run). Generated values are mostly nonsense, so hooks swap in, most of
the time, the real values of one world (a public key, an open room, a session, a ticket, an
admission, freshly solved challenges, the room's id and environment): the fuzz then reaches the
deep paths too, not only the 400s and 401s. Answers it cannot provoke (429s, 503, 413, held,
paused, the line) are scripted below and checked against the document with the same checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV31SpecValidator
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from werkzeug.test import TestResponse

from anteroom.config import Settings
from anteroom.identity import proof_of_work as pow
from anteroom.identity import sessions as identity
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.rooms import room_config as rooms
from anteroom.service_container import Services
from anteroom.web.api import api_routes as routes
from anteroom.web.api import openapi_document as openapi
from helpers import TEST_KEYS, make_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
ENV = "prod"
ROOM = "fuzz-room"


@pytest.fixture(name="settings")
def roomy_settings(redis_server: EmbeddedRedis, tmp_path: Path) -> Settings:
    """Per-address limits out of the way, so the fuzz gets past them (429 is tested below)."""
    high = "100000/minute"
    return Settings(
        redis_url=redis_server.url,
        data_dir=str(tmp_path),
        keys=TEST_KEYS,
        pow_difficulty=4,
        limit_challenge=high,
        limit_identify=high,
        limit_enter=high,
    )


@dataclass
class World:
    """Real values for the fields the fuzz would otherwise only ever guess."""

    services: Services
    secret: str
    public_key: str
    room_id: str
    session: str
    ticket: str
    admission: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"}

    def solved_challenge(self) -> dict[str, str]:
        challenge = identity.new_challenge(self.services.identity, ENV)
        solution = pow.solve(challenge["challenge"], challenge["difficulty"])
        return {"challenge": challenge["challenge"], "solution": solution}

    def real_fields(self) -> dict[str, Callable[[], Any]]:
        return {
            "apiKey": lambda: self.public_key,
            "room": lambda: ROOM,
            "sessionToken": lambda: self.session,
            "queueToken": lambda: self.ticket,
            "ticket": lambda: self.ticket,
            "admissionToken": lambda: self.admission,
            "token": lambda: self.admission,
            "previousSession": lambda: self.session,
        }


@pytest.fixture
def world(client: FlaskClient, services: Services) -> World:
    record, secret = services.keystore.create(ENV)
    room_id = make_room(services.engine, env=ENV, slug=ROOM, ratePerMinute=60)
    services.engine.open(room_id)
    first, second = Visitor(client, record.public_key), Visitor(client, record.public_key)
    services.engine.shift_clock(room_id, 1_000)
    admission = first.enter(ROOM).json["token"]  # the bank holds one: admitted at once
    ticket = second.enter(ROOM).json["queueToken"]  # and this one waits
    assert admission and ticket and second.session
    return World(services, secret, record.public_key, room_id, second.session, ticket, admission)


# -- the document ------------------------------------------------------------------------


def test_the_document_is_valid_openapi_3_1(client: FlaskClient) -> None:
    response = client.get("/api/openapi.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    document = response.json
    assert document["openapi"].startswith("3.1")
    validate(document, cls=OpenAPIV31SpecValidator)
    assert set(document["paths"]) >= {
        "/api/v1/challenge", "/api/v1/identify", "/api/v1/queue/enter", "/api/v1/queue/poll",
        "/api/v1/queue/leave", "/api/v1/admission/refresh", "/api/management/v1/queues",
        "/api/management/v1/queues/{id}", "/api/management/v1/audit", "/healthz", "/readyz",
    }  # fmt: skip
    assert document == openapi.document()


def test_every_route_of_the_apis_is_documented(app: Flask) -> None:
    documented = {
        (path, method.upper())
        for path, item in openapi.document()["paths"].items()
        for method in item
        if method != "parameters"
    }
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith(("/api/", "/healthz", "/readyz")):
            continue
        path = rule.rule
        for name, flask_name in routes.PATH_PARAMETERS.items():
            path = path.replace(flask_name, name)
        for method in rule.methods or ():
            if method not in ("HEAD", "OPTIONS"):
                assert (path, method) in documented


def _undocumented(where: str, schema: Any) -> Iterator[str]:
    """Each property under ``schema`` (nested ones too) lacking a description or an example."""
    if not isinstance(schema, dict):
        return
    for name, prop in schema.get("properties", {}).items():
        words = str(prop.get("description", "")).strip()
        if not words:
            yield f"{where}.{name}: no description"
        elif re.sub(r"\W", "", words).lower() == name.lower():
            yield f"{where}.{name}: its description is only its name"
        if not prop.get("examples") and "example" not in prop:
            yield f"{where}.{name}: no example"
        yield from _undocumented(f"{where}.{name}", prop)
    for key in ("items", "additionalProperties"):
        yield from _undocumented(f"{where}[]", schema.get(key))
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key, ()):
            yield from _undocumented(where, part)


def test_every_operation_says_what_it_does() -> None:
    """A person learns the API from the document: each operation has a summary and a
    description of more than its scope."""
    missing: list[str] = []
    for path, item in openapi.document()["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            for part in ("summary", "description"):
                if not str(op.get(part, "")).strip():
                    missing.append(f"{method.upper()} {path}: no {part}")
            scope = re.sub(r"^Needs the `[^`]+` scope\.", "", op.get("description", ""))
            if len(scope.split()) < 10:
                missing.append(f"{method.upper()} {path}: no more than its scope said")
    assert not missing, "\n".join(missing)


def test_every_field_and_parameter_has_a_description_and_an_example() -> None:
    document = openapi.document()
    missing: list[str] = []
    for path, item in document["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            for param in item.get("parameters", []) + op.get("parameters", []):
                where = f"{method.upper()} {path} ?{param['name']}"
                if not str(param.get("description", "")).strip():
                    missing.append(f"{where}: no description")
                if "example" not in param and not param["schema"].get("examples"):
                    missing.append(f"{where}: no example")
    for name, schema in document["components"]["schemas"].items():
        missing.extend(_undocumented(name, schema))
    assert not missing, "\n".join(missing)


def test_the_renamed_tokens_are_in_the_document_and_the_old_names_deprecated() -> None:
    schemas = openapi.document()["components"]["schemas"]
    for model, name, older in (
        ("TicketRequest", "queueToken", "ticket"),
        ("RefreshRequest", "admissionToken", "token"),
    ):
        properties = schemas[model]["properties"]
        assert not properties[name].get("deprecated")
        assert properties[older]["deprecated"] is True


def test_room_fields_match_the_validation() -> None:
    """Each field's documented bounds are exactly where rooms.validate draws its lines."""
    schemas = openapi.document()["components"]["schemas"]
    create = schemas["RoomCreate"]
    assert list(create["properties"]) == [f.api for f in rooms.FIELDS]
    assert create["required"] == [f.api for f in rooms.FIELDS if f.required]
    assert set(schemas["RoomPatch"]["properties"]) == set(rooms.MUTABLE) | {"action", "opensAt"}
    for f in rooms.FIELDS:
        schema = create["properties"][f.api]
        if not f.required:
            assert schema["default"] == f.default and f.check(f.default) is None
        if "minimum" in schema:
            lo, hi = schema["minimum"], schema["maximum"]
            assert f.check(lo) is None and f.check(hi) is None
            assert f.check(lo - 1) and f.check(hi + 1)
            assert (f.check(None) is None) == ("null" in schema["type"])
        if "maxLength" in schema and f.api == "name":
            assert f.check("x" * schema["maxLength"]) is None
            assert f.check("x" * (schema["maxLength"] + 1))
        if "enum" in schema:
            assert all(f.check(v) is None for v in schema["enum"]) and f.check("other")


@pytest.mark.parametrize(
    ("url", "accepted"),
    [
        ("https://shop.example/checkout", True), ("HTTPS://shop.example", True),
        ("http://localhost:8000/co", True), ("http://127.0.0.1", True), ("http://[::1]/", True),
        ("http://user@localhost/", True), ("http://shop.example/", False),
        ("http://localhost.shop.example/", False), ("http://localhost@shop.example/", False),
        ("http://127.0.0.1.shop.example/", False), ("ftp://shop.example/", False),
    ],
)  # fmt: skip
def test_the_redirect_rule_is_the_documented_pattern(url: str, accepted: bool) -> None:
    """The rule and the document's pattern are one: an absolute URL passes exactly if it matches."""
    schema = openapi.document()["components"]["schemas"]["RoomCreate"]
    pattern = schema["properties"]["redirectUrl"]["pattern"]
    assert (rooms.redirect_url_problem(url) is None) is accepted
    assert (re.match(pattern, url) is not None) is accepted


# -- fuzzing -----------------------------------------------------------------------------

# Built from the code's document (the first test shows it is the served one). Not through
# schemathesis.pytest.from_fixture: that loader breaks on pytest 9.2 (it reads Node._nodeid).
schema = schemathesis.openapi.from_dict(openapi.document())
# The hooks run inside each test, after its fixtures: they read that test's world from here.
current: dict[str, World] = {}


@pytest.fixture
def fuzz_world(world: World) -> Iterator[World]:
    current["world"] = world
    yield world
    current.clear()


@schema.hook("flatmap_body")
def real_body(context: Any, body: Any) -> Any:
    """The body as generated, or with the world's real values in its string fields."""
    world = current.get("world")  # none yet while the document's examples are collected
    if not isinstance(body, dict) or world is None:
        return st.just(body)
    present = {k: fn for k, fn in world.real_fields().items() if isinstance(body.get(k), str)}
    if not present:
        return st.just(body)

    def realistic() -> dict[str, Any]:
        out = body | {k: fn() for k, fn in present.items()}
        if isinstance(body.get("challenge"), str) and isinstance(body.get("solution"), str):
            out |= world.solved_challenge()
        return out

    # Three times in four: most of the nonsense has been seen after a few examples.
    return st.integers(0, 3).map(lambda n: realistic() if n else body)


@schema.hook("flatmap_path_parameters")
def real_room(context: Any, params: Any) -> Any:
    if not isinstance(params, dict) or "id" not in params or "world" not in current:
        return st.just(params)
    return st.sampled_from([params | {"id": current["world"].room_id}, params])


@schema.hook("flatmap_query")
def real_environment(context: Any, query: Any) -> Any:
    if not isinstance(query, dict) or "environment" not in query:
        return st.just(query)
    return st.sampled_from([query | {"environment": ENV}, query])


@schema.parametrize()
@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_the_app_answers_as_documented(case: Any, app: Flask, fuzz_world: World) -> None:
    headers = fuzz_world.auth if case.path.startswith("/api/management/") else None
    case.call_and_validate(headers=headers, checks=CHECKS, app=app)


# -- answers the fuzz cannot reach on its own --------------------------------------------


def conforms(response: TestResponse, method: str, path: str, status: int) -> TestResponse:
    """``response`` has ``status`` and matches the document's answer of that operation."""
    assert response.status_code == status, response.get_data(as_text=True)
    ids = {"id": "q" + "0" * 16} if "{id}" in path else None  # only spells the URL
    if "{eventId}" in path:
        ids = (ids or {}) | {"eventId": "ev" + "0" * 12}
    if "{inviteId}" in path:
        ids = (ids or {}) | {"inviteId": "A" * 16}
    if "{keyId}" in path:
        ids = {"keyId": "0" * 12}
    checks = CHECKS if status < 500 else [c for c in CHECKS if c is not not_a_server_error]
    schema[path][method].Case(path_parameters=ids).validate_response(response, checks=checks)
    return response


def test_management_answers_match_the_document(
    client: FlaskClient, services: Services, world: World
) -> None:
    queues, room = "/api/management/v1/queues", "/api/management/v1/queues/{id}"
    audit = "/api/management/v1/audit"
    auth = world.auth

    def call(method: str, url: str, body: Any = None, **query: str) -> TestResponse:
        return client.open(url, method=method, json=body, headers=auth, query_string=query)

    conforms(client.get(queues), "GET", queues, 401)
    _, staging = services.keystore.create("staging")
    other = client.get(queues, headers={"Authorization": f"Bearer {staging}"}, query_string={})
    conforms(other, "GET", queues, 200)
    conforms(call("GET", queues, environment="staging"), "GET", queues, 403)
    body = {"slug": "spring", "name": "Spring", "redirectUrl": "http://localhost:8000/co"}
    created = conforms(call("POST", queues, body), "POST", queues, 201).json
    conforms(call("POST", queues, body), "POST", queues, 400)
    url = f"{queues}/{created['id']}"
    services.engine.set_clock(created["id"], 1_800_000_000_000)
    opening = {"action": "open", "opensAt": 1_800_000_600_000, "capacity": 5}
    conforms(call("PATCH", url, opening), "PATCH", room, 200)
    for n in range(3):
        services.engine.enter(created["id"], f"v{n}", f"s{n}", 10)
    detail = conforms(call("GET", url), "GET", room, 200).json
    assert len(detail["line"]) == 3 and detail["stats"]["waiting"] == 3
    conforms(call("PATCH", url, {"action": "pause"}), "PATCH", room, 200)
    paused = conforms(call("GET", url), "GET", room, 200).json
    assert paused["line"] == detail["line"]  # a paused room's line, kept in its drain order
    conforms(call("PATCH", url, {"action": "pause"}), "PATCH", room, 400)
    page = conforms(call("GET", audit, limit="1"), "GET", audit, 200).json
    assert page["nextCursor"] and page["events"][0]["action"]["name"] == "pause"
    rest = conforms(call("GET", audit, cursor=page["nextCursor"]), "GET", audit, 200).json
    assert rest["events"][-1]["type"] == "queue.created"
    conforms(call("GET", audit, cursor="0-0"), "GET", audit, 400)
    conforms(call("DELETE", url), "DELETE", room, 204)
    conforms(call("GET", url), "GET", room, 404)
    conforms(call("DELETE", url), "DELETE", room, 404)
    huge = {"name": "x" * 20_000}
    conforms(call("PATCH", f"{queues}/{world.room_id}", huge), "PATCH", room, 413)
    revoke = "/api/management/v1/sessions/revoke"
    done = conforms(call("POST", revoke, {"vid": "v0", "reason": "r"}), "POST", revoke, 200)
    assert done.json["rooms"] == 1
    conforms(call("POST", revoke, {"jti": "s1", "vid": "v1"}), "POST", revoke, 400)
    newest = conforms(call("GET", audit, limit="1"), "GET", audit, 200).json["events"][0]
    assert newest["type"] == "session.revoked" and newest["session"] == {"vid": "v0"}


def test_visitor_answers_match_the_document(
    client: FlaskClient, services: Services, world: World, redis_client: redis.Redis
) -> None:
    enter, poll = "/api/v1/queue/enter", "/api/v1/queue/poll"
    refresh, challenge = "/api/v1/admission/refresh", "/api/v1/challenge"
    key = world.public_key

    def entering(slug: str, visitor: Visitor | None = None) -> TestResponse:
        return (visitor or Visitor(client, key)).enter(slug)

    make_room(services.engine, env=ENV, slug="later")
    assert conforms(entering("later"), "POST", enter, 200).json["status"] == "idle"
    held_room = make_room(services.engine, env=ENV, slug="strict", holdScore=30)
    services.engine.open(held_room)
    suspect = Visitor(client, key)
    suspect.identify(**{"Accept-Language": ""})
    held = conforms(suspect.enter("strict"), "POST", enter, 200)
    assert held.json["status"] == "held" and held.headers["Retry-After"]
    admission = {"apiKey": key, "token": world.admission}
    fresh = conforms(client.post(refresh, json=admission), "POST", refresh, 200)
    assert fresh.json["status"] == "admitted" and fresh.json["token"]
    robot = Visitor(client, key)
    robot.identify(signals={"webdriver": True})
    assert conforms(robot.enter(ROOM), "POST", enter, 403).json["error"] == "QueueDenied"
    bound = make_room(services.engine, env=ENV, slug="bound", bindIp=True)
    services.engine.open(bound)
    nowhere = Visitor(client, key)
    nowhere.identify()
    nowhere.address = ""
    assert conforms(nowhere.enter("bound"), "POST", enter, 403).json["error"] == "AddressRequired"
    full = make_room(services.engine, env=ENV, slug="tiny", maxWaiting=1, ratePerMinute=1)
    services.engine.open(full)
    entering("tiny")
    assert conforms(entering("tiny"), "POST", enter, 429).json["error"] == "QueueFull"
    assert conforms(entering("nowhere"), "POST", enter, 404).json["error"] == "RoomNotFound"
    polled = make_room(services.engine, env=ENV, slug="polled", ratePerMinute=1)
    services.engine.set_clock(polled, 1_800_000_000_000)  # a minute's start, and time stands
    services.engine.open(polled)
    poller = Visitor(client, key)
    entering("polled", poller)
    answers = [poller.poll() for _ in range(90)]  # the entry was the minute's first of 90
    assert [a.status_code for a in answers] == [200] * 89 + [429]
    for answer in answers:
        conforms(answer, "POST", poll, answer.status_code)
    assert answers[-1].json["error"] == "RateLimited"
    late = Visitor(client, key)
    late.identify()
    redis_client.config_set("maxmemory", "1")
    try:
        assert conforms(late.enter(ROOM), "POST", enter, 429).json["error"] == "Busy"
    finally:
        redis_client.config_set("maxmemory", "0")
    services.engine.close(polled)
    assert conforms(poller.poll(), "POST", poll, 410).json["error"] == "TicketGone"
    huge = client.post(challenge, json={"apiKey": "pk_" + "x" * 20_000})
    conforms(huge, "POST", challenge, 413)
    # Redis unreachable (the breaker open): a key this instance never saw answers 503.
    services.breaker.open_until = float("inf")
    unseen, _ = services.keystore.create(ENV)
    outage = client.post(challenge, json={"apiKey": unseen.public_key})
    assert conforms(outage, "POST", challenge, 503).json["error"] == "Unavailable"


def test_arrival_answers_match_the_document(client: FlaskClient, world: World) -> None:
    """arrive and queue/join answered by the fast entrance (written as built, not through the
    views' models) are what the document says, a held spot's and a fitted count's included."""
    arrive, join = "/api/v1/arrive", "/api/v1/queue/join"
    visitor = Visitor(client, world.public_key)
    issued, joined = visitor.arrive_and_join(ROOM)
    conforms(issued, "POST", arrive, 200)  # type: ignore[arg-type]
    assert conforms(joined, "POST", join, 200).json["queue"]["status"] in {  # type: ignore[arg-type]
        "waiting",
        "admitted",
    }
    suspect = Visitor(client, world.public_key)
    issued, scored = suspect.arrive_and_join(ROOM, **{"Accept-Language": ""})
    conforms(issued, "POST", arrive, 200)  # type: ignore[arg-type]
    assert conforms(scored, "POST", join, 200).json["session"]["sig"]  # type: ignore[arg-type]
    robot = Visitor(client, world.public_key)
    _, denied = robot.arrive_and_join(ROOM, **{"User-Agent": ""})
    assert conforms(denied, "POST", join, 403).json["error"] == "QueueDenied"  # type: ignore[arg-type]
    again = Visitor(client, world.public_key)
    retried = again.join(again.join_body(ROOM, issued.json))  # the same proof: the same answer
    assert conforms(retried, "POST", join, 200).json["session"] == scored.json["session"]  # type: ignore[arg-type]


def test_a_fail_open_admission_matches_the_document(
    client: FlaskClient, services: Services, world: World
) -> None:
    """The outage answer comes from the same builder as every queue answer: it conforms too."""
    room_id = make_room(services.engine, env=ENV, slug="open-doors", failMode="open")
    services.engine.open(room_id)
    newcomer = Visitor(client, world.public_key)
    newcomer.identify()
    services.directory.refresh_once()  # every room known offline, as the refresher does
    services.breaker.open_until = float("inf")  # Redis unreachable
    answer = conforms(newcomer.enter("open-doors"), "POST", "/api/v1/queue/enter", 200)
    assert answer.json["status"] == "admitted" and answer.json["failOpen"] is True


def test_unencodable_text_is_a_bad_request(client: FlaskClient, world: World) -> None:
    """JSON may spell a lone surrogate; it is refused, by field, before it reaches Redis."""
    raw = '{"apiKey": "KEY", "room": "\\ud800", "sessionToken": "x"}'
    raw = raw.replace("KEY", world.public_key)
    response = client.post("/api/v1/queue/enter", data=raw, content_type="application/json")
    assert response.status_code == 400 and response.json["fields"] == {"room": "is not valid text"}
    raw = '{"slug": "abc", "name": {"\\udfff": 1}, "redirectUrl": "https://shop.example/"}'
    response = client.post(
        "/api/management/v1/queues", data=raw, content_type="application/json", headers=world.auth
    )
    assert response.status_code == 400 and response.json["fields"] == {"name": "is not valid text"}


@pytest.mark.parametrize(
    ("method", "path", "body", "query", "field"),
    [
        ("GET", "/audit", None, {"limit": "\u00b2"}, "limit"),  # str.isdigit() says yes
        ("GET", "/audit", None, {"cursor": "0-0"}, "cursor"),  # nothing is older
        ("GET", "/audit", None, {"cursor": f"{2**64}-0"}, "cursor"),  # not a stream id
        ("GET", "/audit", None, {"cursor": "\u0661-\u0661"}, "cursor"),  # \d is Unicode in re
        ("POST", "/queues", {"slug": "abc\n"}, {}, "slug"),  # $ matches before a newline
        ("POST", "/queues", {"redirectUrl": " https://shop.example/"}, {}, "redirectUrl"),
        ("POST", "/queues", {"redirectUrl": "https://shop.example/\n"}, {}, "redirectUrl"),
    ],
)  # fmt: skip
def test_what_the_fuzz_found_is_refused_with_a_400(
    client: FlaskClient,
    world: World,
    method: str,
    path: str,
    body: Any,
    query: dict[str, str],
    field: str,
) -> None:
    if body is not None:
        body = {"slug": "fine", "name": "Fine", "redirectUrl": "https://shop.example/"} | body
    response = client.open(
        "/api/management/v1" + path,
        method=method,
        json=body,
        headers=world.auth,
        query_string=query,
    )
    assert response.status_code == 400 and set(response.json["fields"]) == {field}


def test_event_answers_match_the_document(
    client: FlaskClient, services: Services, world: World
) -> None:
    events, event = (
        "/api/management/v1/queues/{id}/events",
        "/api/management/v1/queues/{id}/events/{eventId}",
    )
    url = events.replace("{id}", world.room_id)
    services.engine.set_clock(world.room_id, 1_800_000_000_000)

    def call(method: str, path: str, body: Any = None) -> TestResponse:
        return client.open(path, method=method, json=body, headers=world.auth)

    body = {
        "startsAt": 1_800_000_060_000,
        "endsAt": 1_800_000_120_000,
        "overrides": {"capacity": None, "notice": {"en": "On"}},
    }
    created = conforms(call("POST", url, body), "POST", events, 201).json
    conforms(call("POST", url, body), "POST", events, 409)
    conforms(call("POST", url, body | {"overrides": {}}), "POST", events, 400)
    assert conforms(call("GET", url), "GET", events, 200).json["events"][0]["id"] == created["id"]
    one = f"{url}/{created['id']}"
    conforms(call("PATCH", one, {"overrides": {"mode": "reject"}}), "PATCH", event, 200)
    conforms(call("PATCH", f"{url}/ev000000000000", {"endsAt": 5}), "PATCH", event, 404)
    services.engine.set_clock(world.room_id, 1_800_000_200_000)  # it has ended
    conforms(call("PATCH", one, {"endsAt": 1_800_000_300_000}), "PATCH", event, 409)
    services.engine.set_clock(world.room_id, 1_800_000_000_000)
    conforms(call("DELETE", one), "DELETE", event, 204)


def test_invite_answers_match_the_document(
    client: FlaskClient, services: Services, world: World
) -> None:
    invites = "/api/management/v1/queues/{id}/invites"
    enter = "/api/v1/queue/enter"
    url = invites.replace("{id}", world.room_id)
    later = services.series.now_ms(world.room_id) + 60_000
    body = {"count": 2, "expiresAt": later, "uses": 1, "lane": "priority"}
    issued = conforms(client.post(url, json=body, headers=world.auth), "POST", invites, 201)
    first, second = issued.json["invites"]
    bad = client.post(url, json=body | {"lane": "vip"}, headers=world.auth)
    assert conforms(bad, "POST", invites, 400).json["fields"].keys() == {"lane"}
    gone = client.post(invites.replace("{id}", "q" + "0" * 16), json=body, headers=world.auth)
    conforms(gone, "POST", invites, 404)
    key = world.public_key
    assert conforms(Visitor(client, key).enter(ROOM, first), "POST", enter, 200)
    spent = conforms(Visitor(client, key).enter(ROOM, first), "POST", enter, 409)
    assert spent.json["error"] == "InviteSpent"
    forged = conforms(Visitor(client, key).enter(ROOM, first[:-4] + "AAAA"), "POST", enter, 401)
    assert forged.json["error"] == "TokenInvalid" and "invite" in forged.json["fields"]
    services.engine.shift_clock(world.room_id, 60_000)
    expired = conforms(Visitor(client, key).enter(ROOM, second), "POST", enter, 410)
    assert expired.json["error"] == "InviteExpired"


def test_key_and_invite_record_answers_match_the_document(
    client: FlaskClient, services: Services, world: World
) -> None:
    keys, key = "/api/management/v1/keys", "/api/management/v1/keys/{keyId}"
    invites = "/api/management/v1/queues/{id}/invites"
    one = "/api/management/v1/queues/{id}/invites/{inviteId}"

    def call(method: str, url: str, body: Any = None, **query: str) -> TestResponse:
        return client.open(url, method=method, json=body, headers=world.auth, query_string=query)

    conforms(call("GET", keys), "GET", keys, 200)
    made = conforms(call("POST", keys, {"scopes": ["queues:read"]}), "POST", keys, 201).json
    conforms(call("POST", keys, {"scopes": []}), "POST", keys, 400)
    narrow = {"Authorization": f"Bearer {made['secret']}"}
    conforms(client.get(keys, headers=narrow), "GET", keys, 403)
    conforms(call("DELETE", f"{keys}/{made['key']['id']}"), "DELETE", key, 204)
    conforms(call("DELETE", f"{keys}/000000000000"), "DELETE", key, 404)
    conforms(call("DELETE", f"{keys}/NOT-AN-ID"), "DELETE", key, 400)
    own = world.secret.split("_")[1]
    conforms(call("DELETE", f"{keys}/{own}"), "DELETE", key, 409)
    url = invites.replace("{id}", world.room_id)
    later = services.series.now_ms(world.room_id) + 60_000
    body = {"count": 2, "expiresAt": later, "uses": 1, "lane": "skip"}
    issued = call("POST", url, body).json
    [first, _], [token, _] = issued["ids"], issued["invites"]
    page = conforms(call("GET", url, limit="1"), "GET", invites, 200).json
    assert page["nextCursor"] and page["total"] == 2
    conforms(call("GET", url, limit="0"), "GET", invites, 400)
    conforms(call("DELETE", f"{url}/{first}"), "DELETE", one, 204)
    conforms(call("DELETE", f"{url}/{'A' * 16}"), "DELETE", one, 404)
    conforms(call("DELETE", f"{url}/nope"), "DELETE", one, 400)
    late = Visitor(client, world.public_key).enter(ROOM, token)
    assert conforms(late, "POST", "/api/v1/queue/enter", 410).json["error"] == "InviteWithdrawn"
    assert call("GET", url).json["invites"][1]["state"] == "withdrawn"
    audit = conforms(
        call("GET", "/api/management/v1/audit"), "GET", "/api/management/v1/audit", 200
    )
    assert [e["type"] for e in audit.json["events"][:4]] == [
        "queue.invite.withdrawn", "queue.invites", "key.revoked", "key.created"
    ]  # fmt: skip
