"""Redis unreachable: failMode open admits, closed answers 503, the breaker keeps it fast."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
import requests
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from anteroom.config import Settings
from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.counting_connections import CountingConnection
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.rooms import room_config
from anteroom.queue.rooms import room_directory as room_cache
from anteroom.sdk import tokens
from anteroom.sdk import verification as verify
from anteroom.service_container import Services
from anteroom.store.keystore import KeyStore
from anteroom.web.app_factory import close_app, create_app
from helpers import TEST_KEYS, free_port, make_room
from live_server import LiveServers
from visitor_client import FlaskTransport, Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path, port=free_port()).start()
    yield server
    server.stop()


def test_outage_fail_modes_breaker_and_recovery(own_redis: EmbeddedRedis, tmp_path: Path) -> None:
    settings = Settings(
        redis_url=own_redis.url, keys=TEST_KEYS, pow_difficulty=4, data_dir=str(tmp_path)
    )
    app = create_app(settings)
    services: Services = app.extensions["anteroom"]
    clock = FakeClock()
    services.breaker.clock = clock
    services.rooms.clock = clock
    services.public_keys.clock = clock
    client: FlaskClient = app.test_client()
    api_key = services.keystore.create("shop")[0].public_key
    for slug, mode in (("open-room", "open"), ("closed-room", "closed")):
        room_id = make_room(services.engine, env="shop", slug=slug, failMode=mode, ratePerMinute=1)
        services.engine.open(room_id)
    waiting = Visitor(client, api_key)
    assert waiting.enter("closed-room").json["ticket"] == 1
    ahead = Visitor(client, api_key)
    assert ahead.enter("open-room").json["status"] == "waiting"
    newcomer_open, newcomer_closed = Visitor(client, api_key), Visitor(client, api_key)
    newcomer_open.identify()
    newcomer_closed.identify()

    own_redis.stop()
    before = CountingConnection.attempts
    # failMode open: a newcomer is admitted, and the admission says it was a fail-open one.
    response = newcomer_open.enter("open-room")
    assert response.status_code == 200 and response.json["status"] == "admitted"
    claims = verify.verify_admission(response.json["token"], TEST_KEYS, room="open-room").claims
    assert claims and claims["fo"] is True
    assert ahead.poll().json["status"] == "admitted"  # a waiting visitor polling, too
    # failMode closed: 503 with Retry-After, for a newcomer and for the one waiting.
    for attempt in (newcomer_closed.enter("closed-room"), waiting.poll()):
        assert attempt.status_code == 503 and attempt.json["error"] == "Unavailable"
        assert int(attempt.headers["Retry-After"]) > 0
    # The breaker: repeated failures opened it (each call retried once on a fresh connection),
    # and nothing tried Redis for 3 s since.
    assert services.breaker.is_open
    assert CountingConnection.attempts - before <= 8
    opened = CountingConnection.attempts
    for _ in range(20):
        assert waiting.poll().status_code == 503
    assert CountingConnection.attempts == opened

    own_redis.start()
    clock.now += 3.1  # the breaker's pause is over (and the caches may refresh)
    recovered = waiting.poll()
    assert recovered.status_code == 200 and recovered.json["ticket"] == 1  # the spot survived
    assert newcomer_closed.enter("closed-room").json["ticket"] == 2


# -- an outage admission is never weaker than a normal one -----------------------------------


class Stack:
    """One app on its own Redis, its breaker and caches on a frozen clock."""

    def __init__(self, redis_server: EmbeddedRedis, data_dir: Path) -> None:
        self.settings = Settings(
            redis_url=redis_server.url, keys=TEST_KEYS, pow_difficulty=4, data_dir=str(data_dir)
        )
        self.app = create_app(self.settings)
        self.services: Services = self.app.extensions["anteroom"]
        self.clock = FakeClock()
        self.services.breaker.clock = self.clock
        self.services.rooms.clock = self.clock
        self.services.public_keys.clock = self.clock
        self.client: FlaskClient = self.app.test_client()
        self.api_key = self.services.keystore.create("shop")[0].public_key

    def room(self, slug: str, **config: object) -> str:
        base = {"failMode": "open", "ratePerMinute": 1}
        room_id = make_room(self.services.engine, env="shop", slug=slug, **(base | config))
        self.services.engine.open(room_id)
        return room_id

    def visitor(self, address: str = "198.51.100.20") -> Visitor:
        return Visitor(self.client, self.api_key, address=address)


@pytest.fixture
def stack(own_redis: EmbeddedRedis, tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(own_redis, tmp_path / "data")
    yield stack
    close_app(stack.app)


def claims_of(token: str, kind: str = tokens.ADMISSION) -> dict[str, object]:
    return tokens.decode(tokens.Keyring.parse(TEST_KEYS), token, kind)


def test_an_outage_admission_by_poll_keeps_session_network_and_hold(
    stack: Stack, own_redis: EmbeddedRedis
) -> None:
    stack.room("bound", bindIp=True, holdScore=10)
    ahead, polling = stack.visitor(), stack.visitor()
    ahead.enter("bound")
    assert polling.enter("bound").json["status"] == "waiting"
    held = stack.visitor("198.51.100.30")
    held.identify(signals={"webdriver": False, "languages": 0})  # scores 20: held at 10
    assert held.enter("bound").json["status"] == "held"
    newcomer_held = stack.visitor("198.51.100.31")
    newcomer_held.identify(signals={"webdriver": False, "languages": 0})
    session = claims_of(polling.session or "", tokens.SESSION)

    own_redis.stop()
    answer = polling.poll()
    assert answer.status_code == 200 and answer.json["status"] == "admitted"
    token = answer.json["token"]
    claims = claims_of(token)
    assert claims["fo"] is True and claims["qj"] == session["jti"]
    keys = tokens.Keyring.parse(TEST_KEYS)
    assert verify.verify_admission(token, keys, room="bound", client_ip="198.51.100.20")
    elsewhere = verify.verify_admission(token, keys, room="bound", client_ip="203.0.113.99")
    assert elsewhere.reason == "ip-mismatch"
    # No visible address in a bindIp room: refused, as an entry would be.
    polling.address = ""
    refused = polling.poll()
    assert refused.status_code == 403 and refused.json["error"] == "AddressRequired"
    # At or above holdScore: never let in by an outage, whether polling or entering.
    for attempt in (held.poll(), newcomer_held.enter("bound")):
        assert attempt.status_code == 503 and attempt.json["error"] == "Unavailable"


def test_queue_tokens_expire_and_an_old_ticket_is_no_outage_admission(
    stack: Stack, own_redis: EmbeddedRedis
) -> None:
    stack.room("drop", abandonAfterSec=600)
    stack.visitor().enter("drop")
    v = stack.visitor()
    assert v.enter("drop").json["status"] == "waiting"
    ticket = claims_of(v.ticket or "", tokens.TICKET)
    # as long as its spot may go unpolled (three of the room's longest polls here) + a minute
    assert ticket["exp"] - ticket["iat"] == 3 * 300 + room_config.QUEUE_TOKEN_GRACE_SEC
    keys = tokens.Keyring.parse(TEST_KEYS)
    now = int(time.time())
    expired = tokens.sign(keys, tokens.TICKET, ticket | {"iat": now - 700, "exp": now - 100})
    # A ticket signed before tickets expired: no exp, no session binding, no score.
    legacy = {k: ticket[k] for k in ("qr", "vid", "t", "g", "env")}
    legacy_token = tokens.sign(keys, tokens.TICKET, legacy)

    own_redis.stop()
    v.ticket = expired
    refused = v.poll()
    assert refused.status_code == 401 and refused.json["error"] == "TokenExpired"
    v.ticket = legacy_token
    answer = v.poll()
    assert answer.status_code == 503 and answer.json["error"] == "Unavailable"


def test_an_outage_refresh_keeps_the_binding(stack: Stack, own_redis: EmbeddedRedis) -> None:
    room_id = stack.room("bound", bindIp=True, ratePerMinute=60)
    stack.services.engine.shift_clock(room_id, 1_000)
    v = stack.visitor()
    token = v.enter("bound").json["token"]
    before = claims_of(token)

    own_redis.stop()
    fresh = v.post("admission/refresh", {"apiKey": stack.api_key, "token": token})
    assert fresh.status_code == 200 and fresh.json["status"] == "admitted"
    after = claims_of(fresh.json["token"])
    assert after["fo"] is True
    assert (after["qj"], after["qi"], after["vid"]) == (before["qj"], before["qi"], before["vid"])


# -- every worker knows every room, even one started during the outage ------------------------


def test_the_refresher_knows_rooms_nobody_entered(stack: Stack, own_redis: EmbeddedRedis) -> None:
    stack.room("quiet", ratePerMinute=60)
    v = stack.visitor()
    v.identify()  # the first request starts this process's refresher; nobody enters "quiet"
    assert stack.services.directory.wait_for_rounds(1, timeout=10)

    own_redis.stop()
    answer = v.enter("quiet")
    assert answer.status_code == 200 and answer.json["failOpen"] is True


def test_a_worker_started_during_the_outage_admits(
    stack: Stack, own_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    stack.room("spring", bindIp=True)
    closed_id = stack.room("careful", failMode="closed")
    stack.visitor().enter("spring")
    waiting = stack.visitor()
    assert waiting.enter("spring").json["status"] == "waiting"
    newcomer = stack.visitor()
    newcomer.identify()
    stack.services.directory.refresh_once()  # what the refresher does every few seconds
    assert (tmp_path / "data" / room_cache.SNAPSHOT_NAME).exists()

    own_redis.stop()
    fresh = create_app(stack.settings)  # a new worker: nothing cached, Redis unreachable
    client = fresh.test_client()
    newcomer.transport = waiting.transport = FlaskTransport(client)
    entered = newcomer.enter("spring")
    assert entered.status_code == 200 and entered.json["failOpen"] is True
    assert claims_of(entered.json["token"])["qi"]  # bound even so
    polled = waiting.poll()
    assert polled.status_code == 200 and polled.json["status"] == "admitted"
    # failMode closed stays closed, and a room nobody ever read is not guessed at.
    assert fresh.extensions["anteroom"].directory.room_by_id(closed_id)
    assert newcomer.enter("careful").status_code == 503
    assert newcomer.enter("never-heard-of").status_code == 503


def test_an_outage_refresh_of_a_revoked_session_is_refused(
    stack: Stack, own_redis: EmbeddedRedis
) -> None:
    room_id = stack.room("drop", ratePerMinute=60)
    stack.services.engine.shift_clock(room_id, 1_000)
    v = stack.visitor()
    token = v.enter("drop").json["token"]
    jti = claims_of(token)["qj"]
    stack.services.engine.revoke(room_id, jti=str(jti), life_ms=3_600_000)
    renewed = stack.visitor()
    renewed.session = v.session
    renewed.identify()  # a new session of the same visitor: only the old jti was revoked
    stack.services.directory.refresh_once()

    own_redis.stop()
    refused = v.post("admission/refresh", {"apiKey": stack.api_key, "token": token})
    assert refused.status_code == 403 and refused.json["error"] == "SessionRevoked"
    assert v.enter("drop").json["error"] == "SessionRevoked"
    again = renewed.enter("drop")
    assert again.status_code == 200 and again.json["failOpen"] is True


def worker_pids(master: int) -> set[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return {int(pid) for pid in children}


def test_a_gunicorn_worker_respawned_during_the_outage_admits(
    own_redis: EmbeddedRedis, live_server: LiveServers, tmp_path: Path
) -> None:
    client = connect(own_redis.url)
    engine = Engine(client)
    api_key = KeyStore(client, engine.keys).create("shop")[0].public_key
    engine.open(make_room(engine, env="shop", slug="warmup"))
    engine.open(make_room(engine, env="shop", slug="spring", failMode="open", ratePerMinute=1))
    live = live_server(own_redis.url, tmp_path / "live", ANTEROOM_WORKERS="1")
    v = Visitor(live.url, api_key)
    # a session for later; this worker's refresher is running now
    assert v.enter("warmup").status_code == 200
    snapshot = tmp_path / "live" / room_cache.SNAPSHOT_NAME
    deadline = time.monotonic() + 15
    while '"spring"' not in (snapshot.read_text() if snapshot.exists() else ""):
        assert time.monotonic() < deadline, "no snapshot written"
        time.sleep(0.05)  # waiting for another process's file, not for a race

    own_redis.stop()
    assert live.process is not None
    (old,) = worker_pids(live.process.pid)
    os.kill(old, signal.SIGKILL)  # gunicorn starts a new worker: nothing in its memory
    deadline = time.monotonic() + 15
    while not (worker_pids(live.process.pid) - {old}) or not healthy(live.url):
        assert time.monotonic() < deadline, "no new worker"
        time.sleep(0.05)
    answer = v.enter("spring").json
    assert answer["status"] == "admitted" and answer["failOpen"] is True
    assert verify.verify_admission(answer["token"], TEST_KEYS, room="spring")


def healthy(url: str) -> bool:
    try:
        return requests.get(url + "/healthz", timeout=1).status_code == 200
    except (requests.ConnectionError, requests.Timeout):  # still booting on a loaded machine
        return False


def test_a_ticket_of_a_closed_generation_is_gone_during_an_outage(
    stack: Stack, own_redis: EmbeddedRedis
) -> None:
    room_id = stack.room("drop")
    stack.visitor().enter("drop")
    v = stack.visitor()
    assert v.enter("drop").json["status"] == "waiting"
    assert v.poll().status_code == 200  # this instance now holds the room in its cache
    stack.services.engine.close(room_id)  # every ticket of this generation is gone...
    stack.services.engine.open(room_id)  # ...even once the room opens again
    stack.services.directory.refresh_once()
    stack.clock.now += 3  # the cached copy is stale now; the directory's is not

    own_redis.stop()
    answer = v.poll()
    assert answer.status_code == 410 and answer.json["error"] == "TicketGone"


def test_the_page_without_javascript_follows_the_rooms_fail_mode_as_the_api_does(
    stack: Stack, own_redis: EmbeddedRedis
) -> None:
    """Its poll is the API's use case (visit/waiting.py): a fail-open room lets its waiting
    visitor in during an outage, bound as any outage admission; a closed one says 503."""
    stack.room("open-plain")
    stack.room("closed-plain", failMode="closed")
    stack.visitor().enter("open-plain")  # one ahead: the page's visitor waits

    def page(slug: str) -> TestResponse:
        url = f"/queue/{slug}/plain?key={stack.api_key}"
        return stack.client.get(url, environ_base={"REMOTE_ADDR": "198.51.100.40"})

    for slug in ("open-plain", "closed-plain"):
        first = page(slug)
        assert first.status_code == 200 and "_abt=qt1." in first.headers["Set-Cookie"]
    own_redis.stop()
    admitted = page("open-plain")
    assert admitted.status_code == 303, admitted.get_data(as_text=True)
    token = unquote(admitted.headers["Location"].split("abq=", 1)[1])
    claims = claims_of(token)
    assert claims["fo"] is True and claims["q"] == "open-plain"
    unreachable = page("closed-plain")
    assert unreachable.status_code == 503 and unreachable.headers["Retry-After"]
