"""Several ``anteroom serve`` instances (separate processes and ports) on one Redis, one room.

A visitor may reach any instance on any request, as behind a load balancer with no affinity:
each call here goes to the instance the test picks, never the same one twice in a row.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.rooms import room_directory as room_cache
from anteroom.sdk import verification as verify
from anteroom.store.keystore import KeyStore
from helpers import TEST_KEYS, free_port, make_room
from live_server import LiveServer, LiveServers
from visitor_client import Answer, HttpAnswer, Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

INSTANCE_ENV = {
    "ANTEROOM_WORKERS": "2",  # two instances of two workers: four processes on this machine
    "ANTEROOM_TRUSTED_PROXIES": "1",  # visitors' addresses come in X-Forwarded-For
    "ANTEROOM_POW_DIFFICULTY": "4",
    "ANTEROOM_LIMIT_CHALLENGE": "1000/minute",  # counted per worker: out of these tests' way
    "ANTEROOM_LIMIT_IDENTIFY": "10/hour",
    "ANTEROOM_LIMIT_ENTER": "10/hour",
}
ROOM_CACHE_TTL_SEC = 2.0  # app_factory: StaleCache(ttl=2.0) for rooms
SLACK_SEC = 3.0  # a loaded 2-core machine answering late; the bound shown is ttl + this
ADDRESSES = (f"198.51.100.{i}" for i in itertools.count(1))  # a fresh address per visitor


class RoundRobin:
    """A transport that sends each request to the next instance in turn (no affinity)."""

    def __init__(self, urls: list[str], start: int = 0) -> None:
        self.urls = urls
        self.turn = itertools.count(start)
        self.session = requests.Session()
        self.sent_to: list[str] = []

    def post(self, path: str, body: Any, headers: Mapping[str, str], address: str | None) -> Answer:
        url = self.urls[next(self.turn) % len(self.urls)]
        self.sent_to.append(url)
        sent = dict(headers) | ({"X-Forwarded-For": address} if address else {})
        return HttpAnswer(self.session.post(url + path, json=body, headers=sent, timeout=10))

    def close(self) -> None:
        self.session.close()


@pytest.fixture(scope="module")
def instances(module_live_server: LiveServers) -> list[LiveServer]:
    """Two instances on the tests' Redis, started once for the module (each test uses its own
    key, room slug and addresses, so nothing one test leaves in their caches matters)."""
    return [module_live_server(**INSTANCE_ENV) for _ in range(2)]


@dataclass
class Shop:
    engine: Engine
    api_key: str
    secret: str
    urls: list[str]

    def visitor(self, start: int = 0) -> Visitor:
        return Visitor(RoundRobin(self.urls, start), self.api_key, next(ADDRESSES))


@pytest.fixture
def shop(instances: list[LiveServer], redis_client: redis.Redis) -> Shop:
    engine = Engine(redis_client)
    record, secret = KeyStore(redis_client, engine.keys).create("shop")
    return Shop(engine, record.public_key, secret, [s.url for s in instances])


def test_capacity_order_and_one_spot_hold_across_instances(shop: Shop) -> None:
    engine = shop.engine
    room = make_room(engine, env="shop", slug="drop", ratePerMinute=600, capacity=5)
    engine.open(room)
    visitors = [shop.visitor(start=i) for i in range(24)]

    def enter(v: Visitor) -> tuple[int, int]:
        first = v.enter("drop")
        again = v.enter("drop")  # a second tab: through the other instance
        assert first.status_code == 200 and again.status_code == 200, (first.text, again.text)
        return first.json["ticket"], again.json["ticket"]

    with ThreadPoolExecutor(8) as pool:
        tickets = list(pool.map(enter, visitors))
    assert all(a == b for a, b in tickets), "a repeated enter on another instance moved the spot"
    by_ticket = sorted(range(len(visitors)), key=lambda i: tickets[i][0])
    assert len({t for t, _ in tickets}) == len(visitors)  # one spot each, no ticket shared
    # Every visitor used both instances (identify, enter, enter).
    assert all(set(v.transport.sent_to) == set(shop.urls) for v in visitors)  # type: ignore[attr-defined]

    admitted: list[int] = []  # visitor indexes, in the order the line let them in
    active: list[Visitor] = []
    rounds = 0
    while len(admitted) < len(visitors):
        rounds += 1
        assert rounds < 40, f"the line stalled after {len(admitted)}"
        engine.shift_clock(room, 1_000)  # ten admissions earned: capacity is the bound
        for i in by_ticket:
            if i in admitted:
                continue
            answer = visitors[i].poll()
            assert answer.status_code == 200, answer.text
            if answer.json["status"] == "admitted":
                admitted.append(i)
                active.append(visitors[i])
                claims = verify.verify_admission(answer.json["token"], TEST_KEYS, room="drop")
                assert claims.valid
        stats = engine.stats(room)
        assert stats.active <= 5 and len(active) <= 5
        # Those let in leave (through whichever instance is next): their slots free at once.
        for v in active:
            assert v.leave().status_code == 204
        active.clear()
    # The line let visitors in strictly by ticket, whichever instance each poll reached.
    assert admitted == by_ticket
    assert engine.stats(room).dealt_total == len(visitors)


def test_per_address_limits_are_counted_across_instances(shop: Shop) -> None:
    engine = shop.engine
    engine.open(make_room(engine, env="shop", slug="limits", ratePerMinute=1))
    address = next(ADDRESSES)
    answers = []
    for i in range(16):  # identify 16 times from one address, alternating instances
        with Visitor(RoundRobin(shop.urls, i), shop.api_key, address) as v:
            answers.append(v.identify().status_code)
    assert answers.count(200) == 10 and answers.count(429) == 6  # 10/hour, not 10 per instance

    entries = []
    for _ in range(16):  # each its own session (from elsewhere), entering from one address
        v = shop.visitor()
        assert v.identify().status_code == 200
        v.address = address
        entries.append(v.enter("limits").status_code)
    assert entries.count(200) == 10 and entries.count(429) == 6


def test_a_room_change_reaches_every_instance_within_the_cache_ttl(shop: Shop) -> None:
    engine = shop.engine
    room = make_room(engine, env="shop", slug="renamed", ratePerMinute=1, name="Before")
    engine.open(room)
    engine.enter(room, "ahead", "s", 10)  # someone ahead: the visitors below keep waiting
    pollers = [shop.visitor(start=i) for i in range(4)]
    for v in pollers:
        assert v.enter("renamed").json["roomName"] == "Before"  # cached by whoever answered

    api = shop.urls[0] + f"/api/management/v1/queues/{room}"
    auth = {"Authorization": f"Bearer {shop.secret}"}
    changed = requests.patch(api, json={"name": "After"}, headers=auth, timeout=10)
    assert changed.status_code == 200, changed.text
    changed_at = time.monotonic()
    # The rules themselves live in Redis: a poll on any instance right after the change still
    # answers from the one line. Display fields come from each worker's cache, and must catch up
    # within its stated staleness.
    pending = set(range(len(pollers)))
    while pending:
        assert time.monotonic() - changed_at < ROOM_CACHE_TTL_SEC + SLACK_SEC, pending
        for i in sorted(pending):
            answer = pollers[i].poll()
            assert answer.status_code == 200 and answer.json["status"] == "waiting"
            if answer.json["roomName"] == "After":
                pending.discard(i)
        time.sleep(0.1)  # pacing the polls (90 a minute per ticket), not waiting for a race


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path / "redis", port=free_port()).start()
    yield server
    server.stop()


def test_each_instance_trips_its_breaker_and_recovers_on_its_own(
    own_redis: EmbeddedRedis, live_server: LiveServers, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    engine = Engine(client)
    api_key = KeyStore(client, engine.keys).create("shop")[0].public_key
    for slug, mode in (("open-room", "open"), ("closed-room", "closed")):
        engine.open(make_room(engine, env="shop", slug=slug, ratePerMinute=1, failMode=mode))
        engine.enter(engine.room_id("shop", slug) or "", "ahead", "s", 10)
    # One worker each: every worker here has served requests, so each runs its rooms refresher.
    env = INSTANCE_ENV | {"ANTEROOM_WORKERS": "1"}
    servers = [live_server(own_redis.url, tmp_path / f"live{i}", **env) for i in range(2)]
    urls = [s.url for s in servers]
    waiting = {}
    for slug in ("open-room", "closed-room"):
        v = Visitor(RoundRobin(urls), api_key, next(ADDRESSES))
        assert v.enter(slug).json["status"] == "waiting"
        waiting[slug] = v
    client.close()
    for server in servers:  # each instance knows the rooms' failMode for the outage to come
        snapshot = server.data_dir / room_cache.SNAPSHOT_NAME
        deadline = time.monotonic() + 15
        while '"open-room"' not in (snapshot.read_text() if snapshot.exists() else ""):
            assert time.monotonic() < deadline, "no snapshot written"
            time.sleep(0.05)  # waiting for another process's file, not for a race

    own_redis.stop()
    for _ in range(2):  # each poll reaches the next instance: both answer without Redis
        closed = waiting["closed-room"].poll()
        assert closed.status_code == 503 and closed.json["error"] == "Unavailable"
        assert int(closed.headers["Retry-After"]) > 0
        opened = waiting["open-room"].poll()
        assert opened.status_code == 200 and opened.json.get("failOpen") is True
        assert verify.verify_admission(opened.json["token"], TEST_KEYS, room="open-room").valid

    own_redis.start()  # same port, same data: the line is as it was
    back_at = time.monotonic()
    recovered: set[str] = set()
    v = waiting["closed-room"]
    while recovered != set(urls):
        # Each instance's workers skip Redis for 3 s after a failure, then try it again.
        assert time.monotonic() - back_at < 3.0 + SLACK_SEC, f"recovered: {recovered}"
        url = urls[len(v.transport.sent_to) % 2]  # type: ignore[attr-defined]
        answer = v.poll()
        if answer.status_code == 200:
            assert answer.json["status"] == "waiting" and answer.json["position"] == 2
            recovered.add(url)
        else:
            assert answer.status_code == 503, answer.text
        time.sleep(0.2)  # pacing the polls while the breakers stay open, not a race
    for server in servers:
        assert server.process is not None and server.process.poll() is None  # no restart


TICK_FIELD = "tick"  # the room hash's guard: when the room's tick last ran (room clock, ms)


def test_the_drain_ticker_runs_once_per_room_across_instances(
    shop: Shop, redis_client: redis.Redis
) -> None:
    engine = shop.engine
    room = make_room(engine, env="shop", slug="ticked", ratePerMinute=60)
    engine.open(room)
    for i in range(5):  # a line nobody polls: only the service's own ticker can move it
        engine.enter(room, f"silent{i}", "s", 10)
    engine.shift_clock(room, 5_000)  # five admissions earned
    deadline = time.monotonic() + 10
    while engine.stats(room).dealt_total < 5:
        assert time.monotonic() < deadline, "nobody drained the line"
        time.sleep(0.1)  # waiting for the instances' background tickers, not for a race
    # Both instances tick every open room; the guard in Redis lets one tick a second through.
    hash_key = engine.keys.room(room)
    seen = set()
    started = time.monotonic()
    while time.monotonic() - started < 3.0:
        seen.add(redis_client.hget(hash_key, TICK_FIELD))
        time.sleep(0.05)  # sampling the guard at 20 Hz over three seconds
    seen.discard(None)
    assert 1 <= len(seen) <= 4, f"the room ticked {len(seen)} times in 3 s"
