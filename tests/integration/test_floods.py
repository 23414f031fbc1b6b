"""Floods of garbage and of challenges cost Redis no write; the per-address limits still hold.

Writes are measured the way an operator would: ``INFO commandstats`` of the tests' real Redis,
before and after, counting every command Redis flags ``write`` plus every script call.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from anteroom.config import Settings
from anteroom.identity import proof_of_work as pow
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.web.app_factory import close_app, create_app
from helpers import make_room
from visitor_client import HUMAN, Visitor, solve

pytestmark = pytest.mark.redis

FLOOD = 200
ATTACKER = "198.51.100.66"
OTHER_KEYRING = tokens.Keyring.parse("k1:" + "b" * 43 + "=")  # same kid, another secret
SCRIPT_CALLS = {"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}


def write_commands(client: redis.Redis) -> set[str]:
    """Names of the commands this Redis flags as writes, and the script calls (which may write)."""
    flagged = {name for name, info in client.command().items() if "write" in info["flags"]}
    return {name.lower() for name in flagged} | SCRIPT_CALLS


def command_calls(client: redis.Redis) -> dict[str, int]:
    """Calls per command so far (``cmdstat_incrby`` → ``incrby``)."""
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


class Meter:
    """Counts the write commands Redis served between two points of a test."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.writes = write_commands(client)
        self.before = command_calls(client)

    def delta(self) -> dict[str, int]:
        """Every command called since the start, with how many times."""
        after = command_calls(self.client)
        return {
            name: after[name] - self.before.get(name, 0)
            for name in after
            if after[name] != self.before.get(name, 0)
        }

    def written(self) -> dict[str, int]:
        """The write commands (and script calls) among them."""
        return {name: n for name, n in self.delta().items() if name.split("|")[0] in self.writes}


@pytest.fixture
def api_key(services: Services) -> str:
    return services.keystore.create("shop")[0].public_key


@pytest.fixture
def room(services: Services, api_key: str) -> str:
    room_id = make_room(services.engine, env="shop", slug="drop", ratePerMinute=60)
    services.engine.open(room_id)
    return room_id


def post(client: FlaskClient, path: str, body: Any, address: str = ATTACKER) -> TestResponse:
    """POST ``body`` (JSON, or raw text when a str) as a visitor at ``address``."""
    kwargs: dict[str, Any] = {"data": body} if isinstance(body, str) else {"json": body}
    return client.post(
        "/api/v1/" + path, headers=HUMAN, environ_base={"REMOTE_ADDR": address}, **kwargs
    )


def signed(services: Services, kind: str, **claims: Any) -> str:
    return tokens.sign(services.keyring, kind, claims)


def garbage(services: Services, api_key: str) -> list[tuple[str, str, Any, int]]:
    """(name, path, body, expected status) of every request the offline checks refuse."""
    now = int(time.time())
    good_challenge = signed(
        services, tokens.CHALLENGE, env="shop", jti="c1", d=4, iat=now, exp=now + 60
    )
    wrong_solution = next(
        str(n) for n in range(10_000) if not pow.check_solution(good_challenge, str(n), 4)
    )
    challenges = {
        "malformed": "pc1.nothing-here",
        "forged": tokens.sign(
            OTHER_KEYRING, tokens.CHALLENGE, {"env": "shop", "jti": "c2", "d": 0, "exp": now + 60}
        ),
        "expired": signed(services, tokens.CHALLENGE, env="shop", jti="c3", d=0, exp=now - 5),
        "other-env": signed(services, tokens.CHALLENGE, env="else", jti="c4", d=0, exp=now + 60),
    }
    session_claims = {"jti": "s1", "vid": "v1", "env": "shop", "score": 0, "sig": []}
    sessions = {
        "malformed": "st1.k1.x",
        "forged": tokens.sign(OTHER_KEYRING, tokens.SESSION, session_claims | {"exp": now + 60}),
        "expired": signed(services, tokens.SESSION, **session_claims, exp=now - 5),
        "other-env": signed(services, tokens.SESSION, **session_claims | {"env": "else"}),
        "bot": signed(services, tokens.SESSION, **session_claims | {"sig": ["webdriver", "bot"]}),
        "challenge-as-session": good_challenge,
    }
    good_session = signed(services, tokens.SESSION, **session_claims, exp=now + 60)
    cases: list[tuple[str, str, Any, int]] = [
        ("challenge: unknown key", "challenge", {"apiKey": "pk_unknown"}, 401),
        ("challenge: secret key", "challenge", {"apiKey": "sk_x"}, 401),
        ("challenge: not JSON", "challenge", "{apiKey", 400),
        ("challenge: wrong type", "challenge", {"apiKey": 7}, 400),
        ("identify: unknown key", "identify",
         {"apiKey": "pk_unknown", "challenge": good_challenge, "solution": "1"}, 401),
        ("identify: missing fields", "identify", {"apiKey": api_key}, 400),
        ("identify: wrong solution", "identify",
         {"apiKey": api_key, "challenge": good_challenge, "solution": wrong_solution}, 400),
        ("identify: overlong solution", "identify",
         {"apiKey": api_key, "challenge": good_challenge, "solution": "9" * 65}, 400),
    ]  # fmt: skip
    for name, token in challenges.items():
        body = {"apiKey": api_key, "challenge": token, "solution": "1"}
        cases.append((f"identify: {name} challenge", "identify", body, 401))
    cases += [
        ("enter: unknown key", "queue/enter",
         {"apiKey": "pk_unknown", "room": "drop", "sessionToken": good_session}, 401),
        ("enter: not an object", "queue/enter", "[1, 2]", 400),
        ("enter: unknown room", "queue/enter",
         {"apiKey": api_key, "room": "nowhere", "sessionToken": good_session}, 404),
    ]  # fmt: skip
    for name, token in sessions.items():
        status = 403 if name == "bot" else 401
        body = {"apiKey": api_key, "room": "drop", "sessionToken": token}
        cases.append((f"enter: {name} session", "queue/enter", body, status))
    return cases


def test_garbage_and_challenges_cost_no_redis_write(
    client: FlaskClient, services: Services, redis_client: redis.Redis, api_key: str, room: str
) -> None:
    cases = garbage(services, api_key)
    # The room directory as a running process has it, then no background thread (its refresher
    # and the room ticker read Redis on their own, more often the slower the machine): the
    # meter counts what the requests do.
    services.directory.refresh_once()
    services.stop_background()
    meter = Meter(redis_client)
    for name, path, body, status in cases:
        answers = [post(client, path, body).status_code for _ in range(FLOOD)]
        # Refused for what it is, every time: garbage is not counted against the address either.
        assert answers == [status] * FLOOD, name
    for i in range(FLOOD):
        issued = post(client, "challenge", {"apiKey": api_key}, address=f"192.0.2.{i}")
        assert issued.status_code == 200
    assert meter.written() == {}
    reads = sum(meter.delta().values())
    # Key and room lookups are cached (the directory's copy, then a short cache), not one per
    # request.
    assert reads <= 40, meter.delta()


def test_garbage_does_not_use_up_the_address_limit(
    client: FlaskClient, api_key: str, room: str
) -> None:
    for _ in range(3 * 60):
        assert post(client, "identify", {"apiKey": api_key}).status_code == 400
        assert post(client, "queue/enter", {"apiKey": api_key, "room": "drop"}).status_code == 400
    v = Visitor(client, api_key, address=ATTACKER)
    assert v.identify().status_code == 200
    assert v.enter("drop").status_code == 200


# -- the limits still hold for requests that pass, across instances -------------------------


@pytest.fixture
def two_instances(settings: Settings, redis_client: redis.Redis) -> Iterator[list[FlaskClient]]:
    """Two independent app instances (own limiter, caches, breaker) on the same Redis."""
    tight = settings.with_overrides(limit_identify="3/minute", limit_enter="3/minute")
    apps: list[Flask] = [create_app(tight, {"TESTING": True}) for _ in range(2)]
    yield [a.test_client() for a in apps]
    for app in apps:
        close_app(app)


def solved(client: FlaskClient, api_key: str, address: str) -> dict[str, str]:
    issued = post(client, "challenge", {"apiKey": api_key}, address=address).json
    assert issued is not None
    return solve(api_key, issued)


def assert_rate_limited(response: TestResponse) -> None:
    assert response.status_code == 429, response.json
    assert response.json is not None and response.json["error"] == "RateLimited"
    retry = int(response.headers["Retry-After"])
    assert 1 <= retry <= 60 and response.json["retryAfter"] == retry


def test_identify_limit_holds_across_instances(
    two_instances: list[FlaskClient], redis_client: redis.Redis, api_key: str
) -> None:
    a, b = two_instances
    answers = [post(c, "identify", solved(c, api_key, ATTACKER)) for c in (a, b, a)]
    assert [r.status_code for r in answers] == [200] * 3
    over = solved(b, api_key, ATTACKER)
    assert_rate_limited(post(b, "identify", over))
    assert_rate_limited(post(a, "identify", solved(a, api_key, ATTACKER)))
    # The refused request did not spend its challenge: it is still good once the minute turns.
    services: Services = a.application.extensions["anteroom"]
    jti = tokens.decode(services.keyring, over["challenge"], tokens.CHALLENGE)["jti"]
    assert not redis_client.exists(services.keys.challenge_spent(jti))
    other = post(b, "identify", solved(b, api_key, "198.51.100.67"), address="198.51.100.67")
    assert other.status_code == 200  # another address is not affected


def test_enter_limit_holds_across_instances(
    two_instances: list[FlaskClient],
    services: Services,
    redis_client: redis.Redis,
    api_key: str,
    room: str,
) -> None:
    a, b = two_instances
    sessions = []
    for i in range(5):  # identified elsewhere: only the entries come from the attacker
        address = f"203.0.113.{i}"
        identified = post(a, "identify", solved(a, api_key, address), address=address).json
        assert identified is not None
        sessions.append(identified["sessionToken"])

    def enter(client: FlaskClient, session: str) -> TestResponse:
        return post(client, "queue/enter", {"apiKey": api_key, "room": "drop",
                                            "sessionToken": session})  # fmt: skip

    assert [enter(c, s).status_code for c, s in zip((b, a, b), sessions, strict=False)] == [200] * 3
    assert_rate_limited(enter(a, sessions[3]))
    assert_rate_limited(enter(b, sessions[4]))
    # Each instance now knows the address is over until the window resets: a flood of
    # well-formed entries past the limit is refused without a Redis round trip. The instances'
    # background threads (room directory, room ticker) talk to Redis on their own: stopped
    # first, so the meter counts what the requests do.
    for services_of in (services, *(c.application.extensions["anteroom"] for c in (a, b))):
        services_of.directory.stop(wait=5)
        assert services_of.ticker.join(timeout=5)
    meter = Meter(redis_client)
    for i in range(FLOOD):
        assert_rate_limited(enter((a, b)[i % 2], sessions[i % 5]))
    assert meter.written() == {} and set(meter.delta()) <= {"info"}
    line = services.engine.stats(room)
    assert line.tickets == 3  # the refused entries took no ticket


def test_challenge_limit_is_counted_in_memory(
    settings: Settings, redis_client: redis.Redis
) -> None:
    tight = settings.with_overrides(limit_challenge="3/minute")
    first, second = (create_app(tight, {"TESTING": True}) for _ in range(2))
    api_key = first.extensions["anteroom"].keystore.create("shop")[0].public_key
    one, two = first.test_client(), second.test_client()
    meter = Meter(redis_client)
    assert [post(one, "challenge", {"apiKey": api_key}).status_code for _ in range(3)] == [200] * 3
    assert_rate_limited(post(one, "challenge", {"apiKey": api_key}))
    # Per instance (per worker process): the other instance counts its own.
    assert post(two, "challenge", {"apiKey": api_key}).status_code == 200
    assert meter.written() == {}


def test_several_windows_and_bad_limit_strings(
    settings: Settings, redis_client: redis.Redis
) -> None:
    app = create_app(settings.with_overrides(limit_challenge="5/hour;2/minute"))
    api_key = app.extensions["anteroom"].keystore.create("shop")[0].public_key
    client = app.test_client()
    codes = [post(client, "challenge", {"apiKey": api_key}).status_code for _ in range(3)]
    assert codes == [200, 200, 429]  # the tighter window of the two refuses
    with pytest.raises(ValueError, match="ANTEROOM_LIMIT_ENTER"):
        create_app(settings.with_overrides(limit_enter="lots"))


def test_requests_no_limit_applies_to_run_no_limiter_hook(app: Flask) -> None:
    # flask-limiter's extension hooked every request (the poll included) for ~170 µs of nothing;
    # the limits are charged by the three views that have one, and app-wide only the check that
    # the background threads run (Services.on_request) and the Prometheus counting (~20 µs).
    hooks = [*app.before_request_funcs.get(None, []), *app.after_request_funcs.get(None, [])]
    hooks += app.teardown_request_funcs.get(None, [])
    assert [getattr(hook, "__qualname__", repr(hook)) for hook in hooks] == [
        "Services.on_request",
        "_started",
        "_observed",
    ]
    assert "limiter" not in app.extensions
