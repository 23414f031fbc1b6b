"""Faults under a crowd, through the real service (issue 21): Redis killed in an open room
leaves no ghost admission, with two workers or four (issue 32); latency, half-open stalls and
resets between the service and Redis (tests/fault_proxy.py) keep every promise, and no thread
logs a traceback.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import redis
import requests

from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.line.room_engine import Engine
from anteroom.queue.rooms import room_directory as room_cache
from anteroom.store.keystore import KeyStore
from fault_proxy import FaultProxy
from helpers import free_port, make_room
from live_server import LiveServer, LiveServers
from visitor_client import Answer, Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

SERVER_ENV = {
    "ANTEROOM_WORKERS": "2",
    "ANTEROOM_TRUSTED_PROXIES": "1",  # each visitor its own address, in X-Forwarded-For
    "ANTEROOM_POW_DIFFICULTY": "4",
    "ANTEROOM_LIMIT_IDENTIFY": "1000/minute",
    "ANTEROOM_LIMIT_ENTER": "1000/minute",
}


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path / "redis", port=free_port()).start()
    yield server
    server.stop()


def until(condition: object, timeout: float, what: str) -> float:
    """Wait for ``condition()`` (polled: it depends on other processes); seconds it took."""
    start = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - start < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.05)  # polling another process's state, not waiting out a race
    return time.monotonic() - start


def knows_room(server: LiveServer, slug: str) -> bool:
    """The server's rooms snapshot names ``slug``: every worker can admit in it offline."""
    snapshot = server.data_dir / room_cache.SNAPSHOT_NAME
    return snapshot.exists() and f'"{slug}"' in snapshot.read_text()


class Crowd:
    """Visitors polling in threads; every answer tallied, the admissions they hold kept."""

    def __init__(self, visitors: list[Visitor]) -> None:
        self.visitors = visitors
        self.answers: Counter[str] = Counter()
        self.held: dict[int, dict[str, object]] = {}  # visitor index -> its admission answer
        self.bad: list[str] = []  # answers breaking a promise
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(len(visitors))
        ]

    def start(self) -> Crowd:
        for thread in self.threads:
            thread.start()
        return self

    def _run(self, i: int) -> None:
        visitor = self.visitors[i]
        while not self.stop.is_set() and i not in self.held:
            try:
                answer = visitor.poll()
            except requests.RequestException as exc:
                with self.lock:
                    self.bad.append(f"no answer: {exc}")
                continue
            with self.lock:
                status = answer.status_code
                if status == 503:
                    self.answers["503"] += 1
                    if not answer.headers.get("Retry-After"):
                        self.bad.append("503 without Retry-After")
                elif status != 200:
                    self.bad.append(f"{status}: {answer.text[:200]}")
                elif answer.json.get("failOpen"):
                    self.answers["failOpen"] += 1
                else:
                    self.answers[answer.json["status"]] += 1
                if status == 200 and answer.json["status"] == "admitted":
                    self.held[i] = answer.json
            self.stop.wait(0.05)

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()


def enter_all(url: str, api_key: str, slug: str, n: int, net: int) -> list[Visitor]:
    visitors = [Visitor(url, api_key, address=f"198.18.{net}.{i + 1}") for i in range(n)]
    for visitor in visitors:
        answer = visitor.enter(slug)
        assert answer.status_code == 200 and answer.json["ticket"], answer.text
    return visitors


def test_redis_killed_in_an_open_room_leaves_no_ghost_admission(
    own_redis: EmbeddedRedis, live_server: LiveServers, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    engine = Engine(client)
    api_key = KeyStore(client, engine.keys).create("shop")[0].public_key
    room = make_room(engine, env="shop", slug="open-drop", failMode="open", ratePerMinute=1)
    engine.open(room)
    server = live_server(own_redis.url, tmp_path / "live", **SERVER_ENV)
    visitors = enter_all(server.url, api_key, "open-drop", 12, 1)
    until(lambda: knows_room(server, "open-drop"), 15, "the rooms snapshot")
    client.close()

    own_redis.stop()
    crowd = Crowd(visitors).start()
    until(lambda: len(crowd.held) == len(visitors), 20, "every visitor admitted during the outage")
    crowd.end()
    assert crowd.answers["failOpen"] == len(visitors) and not crowd.bad, crowd.bad

    own_redis.start()  # same port, same data: the line is as it was
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    engine = Engine(client)
    until(lambda: requests.get(server.url + "/readyz", timeout=5).status_code == 200, 10, "ready")
    # Within a tick of the workers reaching Redis again (their ticker's breaker pauses 1 s), the
    # room counts as active exactly the admissions its visitors hold, and nobody waits for one.
    took = until(lambda: engine.stats(room).active == len(visitors), 5, "the admissions booked")
    assert took < 3.0
    stats = engine.stats(room)
    assert stats.waiting == 0 and stats.dealt_total == 0
    # The drain deals nothing to a visitor already in: no admission that nobody will use.
    engine.update_room(room, {"ratePerMinute": 6000})
    engine.shift_clock(room, 5_000)
    engine.tick(room, 1)
    assert engine.stats(room).dealt_total == 0
    # A fail-open admission of a spot refreshes like a dealt one once it is booked.
    refreshed = visitors[0].post(
        "admission/refresh", {"apiKey": api_key, "token": crowd.held[0]["token"]}
    )
    assert refreshed.status_code == 200 and refreshed.json["status"] == "admitted", refreshed.text
    assert "Traceback" not in server.output()
    client.close()


class PinnedTransport:
    """The visitor API over a kept-alive connection that one given worker accepted (opened
    again to that worker when it closes an idle one)."""

    def __init__(self, server: LiveServer, worker: int, conn: http.client.HTTPConnection) -> None:
        self.server, self.worker, self.conn = server, worker, conn

    def post(
        self, path: str, body: object, headers: Mapping[str, str], address: str | None
    ) -> Answer:
        sent = dict(headers) | {"Content-Type": "application/json"}
        if address:
            sent["X-Forwarded-For"] = address
        try:
            self.conn.request("POST", path, body=json.dumps(body), headers=sent)
            response = self.conn.getresponse()
        except (ConnectionError, http.client.HTTPException):
            self.conn.close()
            self.conn = self._reconnect()
            self.conn.request("POST", path, body=json.dumps(body), headers=sent)
            response = self.conn.getresponse()
        return PinnedAnswer(response.status, dict(response.getheaders()), response.read())

    def _reconnect(self) -> http.client.HTTPConnection:
        for _ in range(200):
            conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
            conn.connect()
            if self.server.worker_holding(conn.sock) == self.worker:  # type: ignore[arg-type]
                return conn
            conn.close()
        raise AssertionError(f"worker {self.worker} accepts no connection")

    def close(self) -> None:
        self.conn.close()


class PinnedAnswer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status_code, self.headers, self.text = status, headers, body.decode()
        self.json = json.loads(body) if body else None


def test_outage_admissions_of_four_workers_leave_no_ghost(
    own_redis: EmbeddedRedis, live_server: LiveServers, tmp_path: Path
) -> None:
    """Each of four workers admits some of the line during an outage (their polls pinned to
    it); once Redis is back, whichever worker ticks first must not deal a spot another worker
    let in offline: every one is booked before the room drains again."""
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    engine = Engine(client)  # the test's own link: it reaches Redis while the workers cannot
    api_key = KeyStore(client, engine.keys).create("shop")[0].public_key
    room = make_room(engine, env="shop", slug="open-drop", failMode="open", ratePerMinute=1)
    engine.open(room)
    with FaultProxy("127.0.0.1", own_redis.port) as proxy:
        server = live_server(
            proxy.url, tmp_path / "live", **(SERVER_ENV | {"ANTEROOM_WORKERS": "4"})
        )
        visitors = enter_all(server.url, api_key, "open-drop", 16, 5)
        until(lambda: knows_room(server, "open-drop"), 15, "the rooms snapshot")
        # the workers' tickers are at work on the room
        ticked = int(client.hget(engine.keys.room(room), "tick") or 0)
        until(lambda: int(client.hget(engine.keys.room(room), "tick") or 0) > ticked + 1000, 10,
              "two ticks")  # fmt: skip
        # pinned last: a worker closes a connection kept idle for 2 s
        pinned = list(server.connection_per_worker().items())
        assert len(pinned) == 4, "a connection to each worker"
        for i, visitor in enumerate(visitors):
            visitor.transport = PinnedTransport(server, *pinned[i % 4])

        proxy.refuse = True  # Redis is down for the service
        proxy.reset()
        admitted: set[int] = set()

        def all_admitted_offline() -> bool:
            for i, visitor in enumerate(visitors):
                if i not in admitted:
                    answer = visitor.poll()
                    assert answer.status_code in (200, 503), answer.text
                    if answer.status_code == 200:
                        assert answer.json["failOpen"] is True, answer.text
                        admitted.add(i)
            return len(admitted) == len(visitors)

        until(all_admitted_offline, 20, "every visitor admitted offline, by all four workers")
        # Meanwhile the room earns admissions to deal: a ghost would be dealt at once.
        engine.update_room(room, {"ratePerMinute": 6000})
        engine.shift_clock(room, 2_000)
        proxy.refuse = False  # Redis is back

        until(lambda: engine.stats(room).active == len(visitors), 15, "the admissions booked")
        stats = engine.stats(room)
        assert (stats.dealt_total, stats.waiting) == (0, 0), "spots let in offline dealt again"
        # and nothing is left for a later drain to deal
        engine.shift_clock(room, 2_000)
        engine.tick(room, 1)
        assert engine.stats(room).dealt_total == 0

        # Once every worker has booked and checked in, the line moves again: a newcomer who
        # has to wait (the room full) is dealt by the workers' own ticks once there is room.
        def answered_from_redis(visitor: Visitor) -> bool:
            answer = visitor.poll()  # an admitted spot: its admission, from Redis once reached
            return answer.status_code == 200 and not answer.json.get("failOpen")

        for visitor in visitors[:4]:  # one through each worker
            until(lambda v=visitor: answered_from_redis(v), 10, "the worker reaching Redis")
        engine.update_room(room, {"capacity": len(visitors)})
        newcomer = enter_all(server.url, api_key, "open-drop", 1, 6)[0]
        assert newcomer.last["status"] == "waiting", newcomer.last
        engine.update_room(room, {"capacity": len(visitors) + 1})
        until(lambda: engine.stats(room).dealt_total == 1, 15, "the newcomer dealt")
        assert "Traceback" not in server.output(), server.output()
        for visitor in visitors:
            visitor.transport.close()
    client.close()


def test_latency_stalls_and_resets_keep_every_promise(
    own_redis: EmbeddedRedis, live_server: LiveServers, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    engine = Engine(client)
    api_key = KeyStore(client, engine.keys).create("shop")[0].public_key
    closed = make_room(
        engine, env="shop", slug="closed", failMode="closed", ratePerMinute=120, capacity=4,
        admissionTtlSec=60,
    )  # fmt: skip
    engine.open(closed)
    engine.open(make_room(engine, env="shop", slug="open", failMode="open", ratePerMinute=1))
    with FaultProxy("127.0.0.1", own_redis.port) as proxy:
        server = live_server(proxy.url, tmp_path / "live", **SERVER_ENV)
        in_closed = enter_all(server.url, api_key, "closed", 10, 2)
        in_open = enter_all(server.url, api_key, "open", 6, 3)
        until(lambda: knows_room(server, "open"), 15, "the rooms snapshot")
        closed_crowd, open_crowd = Crowd(in_closed).start(), Crowd(in_open).start()

        # Resets alone are no outage: every one is retried on a fresh connection.
        for _ in range(4):
            proxy.reset()
            time.sleep(0.3)  # pacing the faults for the crowd's polls, not waiting out a race
        calm = (closed_crowd.answers["503"], open_crowd.answers["failOpen"])
        assert calm == (0, 0), (closed_crowd.answers, open_crowd.answers)

        proxy.latency = 0.3  # a slow Redis: slower answers (new connections pay it per step)
        time.sleep(1.5)
        proxy.latency = 0.0
        assert not closed_crowd.bad and not open_crowd.bad, (closed_crowd.bad, open_crowd.bad)

        proxy.stall()  # half-open connections: timeouts, then the breaker opens
        time.sleep(4)
        proxy.resume()
        proxy.reset()  # the stalled connections are dropped, as a partition's end does
        back = closed_crowd.answers["waiting"] + closed_crowd.answers["admitted"]
        took = until(
            lambda: closed_crowd.answers["waiting"] + closed_crowd.answers["admitted"] > back,
            6, "the closed room answering again",
        )  # fmt: skip
        assert took < 4.5  # the breaker's 3 s pause, then the first poll gets through
        time.sleep(1)
        closed_crowd.end()
        open_crowd.end()

    for crowd in (closed_crowd, open_crowd):
        assert not crowd.bad, crowd.bad  # no 5xx but 503 with Retry-After, no spot gone (410)
    assert closed_crowd.answers["503"] > 0 and open_crowd.answers["failOpen"] > 0  # the stall
    # Capacity and order: admitted in ticket order, never more active than the capacity.
    stats = engine.stats(closed)
    assert stats.peak_active <= 4
    # Nobody lost a place: the first tickets were dealt, the others wait in the line in order.
    line = [entry.ticket for entry in engine.line(closed)]
    assert line == list(range(stats.dealt_total + 1, 11)) and stats.waiting == len(line)
    assert all(int(a["ticket"]) <= stats.dealt_total for a in closed_crowd.held.values())
    assert "Traceback" not in server.output(), server.output()
    client.close()
