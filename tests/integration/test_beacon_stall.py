"""One tenant's draw beacon stalls nobody else: a beacon answering a byte a second and a beacon
whose name a DNS server answers late hold their own rooms' draws, while the other rooms of a
live server (gunicorn, 4 gevent workers) tick, draw and answer polls on time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer, LiveServers
from outbound_stand_ins import DnsStandIn, HttpStandIn
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

MINUTE = 60_000
START = 1_800_000_000_000
GENESIS, PERIOD = 1_700_000_000, 30
# A beacon's headers that would take minutes to arrive at a byte a second.
TRICKLED = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 600 + b"\r\n\r\n{}"


def wait_for(what: Callable[[], Any], within: float) -> float:
    """Seconds until ``what()`` is true (polled); fails when it is not within ``within``."""
    began = time.monotonic()
    while not what():
        assert time.monotonic() - began < within, f"not within {within} s"
        time.sleep(0.02)  # polling Redis for a condition, not a race
    return time.monotonic() - began


def scheduled(engine: Engine, env: str, slug: str, entrants: int, **config: Any) -> str:
    room = make_room(engine, env=env, slug=slug, ratePerMinute=60, **config)
    engine.set_clock(room, START)  # pinned: the test moves each room's clock
    engine.open(room, START + MINUTE)
    for i in range(entrants):
        engine.enter(room, f"{slug}-{i}", "s", 10)
    return room


def test_a_slow_beacon_and_a_slow_dns_answer_delay_no_other_room(
    live_server: LiveServers, redis_client: redis.Redis, dev_outbound: None
) -> None:
    engine = Engine(redis_client)
    with (
        HttpStandIn(TRICKLED, trickle=True) as trickle,
        DnsStandIn({"beacon.slow.test": "192.0.2.1"}, delay=30.0) as dns,
    ):
        server: LiveServer = live_server(
            ANTEROOM_TRUSTED_PROXIES="1",
            ANTEROOM_POW_DIFFICULTY="4",
            ANTEROOM_OUTBOUND_ALLOW_LOOPBACK="1",
            ANTEROOM_OUTBOUND_RESOLVER=dns.address,
        )
        # Tenant "slow": two rooms whose draws wait on their beacons.
        trickling = scheduled(
            engine, "slow", "trickle", 3,
            drawBeacon={"url": trickle.url, "genesisTime": GENESIS, "period": PERIOD},
        )  # fmt: skip
        unresolved = scheduled(
            engine, "slow", "dns", 3,
            drawBeacon={"url": "https://beacon.slow.test", "genesisTime": GENESIS,
                        "period": PERIOD},
        )  # fmt: skip
        # Tenant "other": a pre-queue to draw, and an open room whose line moves every tick.
        prequeue = scheduled(engine, "other", "prequeue", 200)
        api_key = KeyStore(redis_client, engine.keys).create("other")[0].public_key
        line = make_room(engine, env="other", slug="line", ratePerMinute=60, capacity=1_000)
        engine.set_clock(line, START)
        engine.open(line)
        for i in range(20):
            engine.enter(line, f"line-{i}", "s", 10)
        visitor = Visitor(server.url, api_key, "198.51.100.7")
        assert visitor.enter("line").json["status"] == "waiting"

        for room in (trickling, unresolved):
            # Both draws are due, their clocks running on from opensAt as a live room's does:
            # every tick of theirs that works, in whichever process, asks their beacon again.
            engine.set_clock(room, 0)
            engine.shift_clock(room, START + MINUTE - engine.stats(room).now_ms)
        # Each of the 4 processes asks the trickling beacon in turn.
        wait_for(lambda: trickle.connections >= 4, within=20)

        # The other tenant's pre-queue draw is made on time...
        engine.shift_clock(prequeue, MINUTE)
        drawn_in = wait_for(lambda: engine.get_room(prequeue)["draw"].get("root"), within=5)
        assert engine.get_room(prequeue)["draw"]["entrants"] == 200
        # ...its line moves at every second of its clock...
        ticks = []
        for _ in range(5):
            dealt = engine.stats(line).dealt_total
            engine.shift_clock(line, 1_000)
            ticks.append(wait_for(lambda d=dealt: engine.stats(line).dealt_total > d, within=5))
        # ...and its visitor's polls are answered at once.
        polls = []
        for _ in range(20):
            began = time.monotonic()
            assert visitor.poll().status_code == 200
            polls.append(time.monotonic() - began)

        # The slow tenant's draws still wait, and nobody of theirs was let in meanwhile.
        for room in (trickling, unresolved):
            assert engine.get_room(room)["draw"].get("root") is None
            assert engine.stats(room).dealt_total == 0
        assert drawn_in < 2.5, drawn_in
        assert max(ticks) < 2.5, ticks
        assert max(polls) < 1.0, polls
        assert dns.asked  # the slow beacon's name was asked of the operator's resolver
        server.stop()
