"""The service's tick: the line moves with nobody near the head polling, once per room per
second however many processes tick, and the ticker survives an outage and stops cleanly."""

from __future__ import annotations

import logging
import threading
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.line.fail_open_checkin import GRACE_MS
from anteroom.queue.line.fail_open_ledger import FailOpenAdmission
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.queue.rooms.room_directory import RoomDirectory
from anteroom.queue.rooms.room_ticker import RoomTicker
from helpers import free_port, make_room

pytestmark = pytest.mark.redis

START = 1_800_000_000_000


def ticker_for(engine: Engine, jobs: list | None = None) -> RoomTicker:
    directory = RoomDirectory(engine.redis, engine.keys, Breaker(), None)
    directory.refresh_once()  # what the directory's own thread reads every few seconds
    return RoomTicker(engine, directory, jobs or [])


def pinned_line(engine: Engine, spots: int, rate: int) -> str:
    room = make_room(engine, ratePerMinute=rate)
    engine.set_clock(room, START)
    engine.open(room)
    for i in range(spots):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    return room


def test_the_line_moves_with_nobody_polling(engine: Engine) -> None:
    room = pinned_line(engine, 300, rate=600)  # ten a second; the clock stands still
    paused = make_room(engine, slug="paused")
    ticked: list[tuple[str, int]] = []
    ticker = ticker_for(engine, [lambda room_id, now: ticked.append((room_id, now))])
    before = engine.poll(room, "v250", 251, 1).position
    for _ in range(2):  # ten admissions earned each second (a second's worth at most)
        engine.shift_clock(room, 1_000)
        assert ticker.step() == 1  # the open room only, not the idle one
    assert engine.stats(room).dealt_total == 20
    assert engine.poll(room, "v250", 251, 1).position == before - 20
    assert ticked == [(room, START + 1_000), (room, START + 2_000)]
    assert paused not in ticker.open_rooms()


def tick(ticker: RoomTicker, start: threading.Barrier, worked: list[int]) -> None:
    start.wait()  # all at once, each with its own connection
    worked.append(ticker.step())


def test_many_tickers_tick_a_room_once_a_second(
    redis_server: EmbeddedRedis, engine: Engine
) -> None:
    room = pinned_line(engine, 300, rate=6_000)  # a hundred a second
    tickers = [
        ticker_for(Engine(redis.Redis.from_url(redis_server.url, decode_responses=True)))
        for _ in range(4)
    ]
    for second in range(1, 4):
        engine.shift_clock(room, 1_000)
        start = threading.Barrier(len(tickers))
        worked: list[int] = []

        threads = [threading.Thread(target=tick, args=(t, start, worked)) for t in tickers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(worked) == [0, 0, 0, 1]  # one tick worked, whoever came first
        assert engine.stats(room).dealt_total == 100 * second
    engine.shift_clock(room, 500)  # within the second: nobody ticks
    assert [t.step() for t in tickers] == [0, 0, 0, 0]


def test_an_outage_is_logged_once_and_retried(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    room = pinned_line(engine, 5, rate=60)
    ticker = ticker_for(engine)
    nowhere = redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0))
    dead = Engine(nowhere, engine.keys.prefix)
    ticker.engine = dead
    ticker.breaker = Breaker(pause=0)  # every step tries again
    with caplog.at_level(logging.INFO, logger="anteroom"):
        assert ticker.step() == 0
        assert ticker.step() == 0
        assert len([r for r in caplog.records if "unreachable" in r.message]) == 1
        ticker.engine = engine  # Redis is back
        engine.shift_clock(room, 5_000)
        assert ticker.step() == 1
    assert any("reachable again" in r.message for r in caplog.records)
    assert engine.stats(room).dealt_total == 1  # a second's worth at most: one


def test_the_thread_stops_with_the_directory(engine: Engine) -> None:
    pinned_line(engine, 1, rate=60)
    ticker = ticker_for(engine)
    ticker.ensure_running()
    ticker.ensure_running()  # once per process
    thread = ticker.thread
    assert thread is not None and thread.is_alive()
    ticker.directory.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_a_key_space_room_ticks_under_its_prefix(redis_client: redis.Redis) -> None:
    engine = Engine(redis_client, "shop:")
    room = pinned_line(engine, 3, rate=60)
    engine.shift_clock(room, 2_000)
    assert ticker_for(engine).step() == 1
    assert KeySpace("shop:").room(room) in redis_client.keys("shop:*")
    assert engine.stats(room).dealt_total == 1  # a second's worth at most


def test_an_open_room_nobody_waits_in_costs_no_script(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room = make_room(engine, ratePerMinute=60)
    engine.open(room)
    ticker = ticker_for(engine)
    redis_client.config_resetstat()
    assert ticker.step() == 0
    assert "cmdstat_evalsha" not in redis_client.info("commandstats")
    engine.enter(room, "v0", "s", 10)  # someone waits: the tick works again
    engine.shift_clock(room, 1_000)
    assert ticker.step() == 1


def test_safety_net_switches_are_reported_once_and_an_empty_room_still_cools(
    engine: Engine,
) -> None:
    net = {"activeSessions": 1000, "arrivalsPerMinute": 2, "coolDownSec": 5}
    room = make_room(engine, ratePerMinute=60, admissionTtlSec=30, safetyNet=net)
    engine.set_clock(room, START)
    engine.open(room)
    reports: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    tickers = [ticker_for(engine) for _ in range(3)]
    for ticker in tickers:
        ticker.on_switch = lambda room_id, switches: reports.append((room_id, switches))
    for i in range(3):
        engine.enter(room, f"v{i}", f"s{i}", 10)  # the third waits: two arrivals this minute
    for ticker in tickers:
        ticker.step()
    assert reports == [(room, (("queueing", START),))]
    # everyone leaves: an empty room's tick is skipped, but not this one's (it must cool down)
    engine.shift_clock(room, 1_000)
    tickers[0].step()  # the third is admitted at the rate
    for i in range(3):
        engine.leave(room, f"v{i}", i + 1, 1)
    assert engine.is_empty(room)
    engine.shift_clock(room, 120_000)  # arrivals of two minutes ago no longer count
    tickers[1].step()  # quiet from here
    engine.shift_clock(room, 5_000)
    tickers[2].step()
    assert reports[1:] == [(room, (("calm", START + 126_000),))]


def test_tickers_book_check_in_and_leave_so_no_drain_deals_an_outage_admission(
    engine: Engine,
) -> None:
    """Two processes' tickers on a fail-open room: one of them let v5 in during an outage and
    its requests do not reach Redis yet; the other, back first, must not drain until it has
    booked v5 and checked in, nor within GRACE_MS of the booking; once it stops and leaves,
    the other is not kept waiting."""
    room = make_room(engine, ratePerMinute=600, failMode="open")
    engine.set_clock(room, START)
    engine.open(room)
    for i in range(300):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    first, second = ticker_for(engine), ticker_for(engine)
    for _ in range(2):  # a probe of the room's clock, then a check-in
        first.step()
        second.step()
    dealt = engine.stats(room).dealt_total
    assert len(engine.redis.hkeys(engine.keys.room_base(room) + "fo")) == 2

    second.fail_open.record(room, FailOpenAdmission("v5", 6, 1, time.time() + 60))
    second.check_ins.ready = lambda: False  # its requests' breaker still open
    engine.shift_clock(room, 1_000)
    second.step()  # books v5 and tells of the outage, but vouches for nothing yet
    first.step()  # checks in, and its tick deals nothing: the second has not checked in
    assert engine.stats(room).dealt_total == dealt
    assert engine.line(room, 1)[0].visitor == "v0"
    second.check_ins.ready = lambda: True
    second.step()
    # Both have checked in, and still the booking holds the drain for GRACE_MS: a process no
    # register knows (started just before the outage) may hold admissions of its own.
    for _ in range(GRACE_MS // 1_000 - 1):
        engine.shift_clock(room, 1_000)
        second.step()
        first.step()
        assert engine.stats(room).dealt_total == dealt
    engine.shift_clock(room, 1_000)
    second.step()
    first.step()
    stats = engine.stats(room)
    assert stats.dealt_total == dealt + 10 and stats.active == dealt + 11  # v5 booked, not dealt
    assert "v5" not in [e.visitor for e in engine.line(room)]

    second.leave()  # a process that stops
    engine.shift_clock(room, 60_000)  # long past any check-in the second made
    first.step()  # (its check-in, sent before the clock jumped, counts as late: ignored)
    engine.shift_clock(room, 1_000)
    first.step()
    assert engine.stats(room).dealt_total == dealt + 20
