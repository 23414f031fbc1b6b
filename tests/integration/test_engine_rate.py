"""Invariant 2: admissions never exceed the rate plus one second's worth, whatever happened."""

from __future__ import annotations

import math

import pytest

from anteroom.engine import Engine
from anteroom.queue.line import room_engine as eng
from helpers import make_room, open_room

pytestmark = pytest.mark.redis


def fill(engine: Engine, room: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        engine.enter(room, f"v{i}", f"s{i}", 10)


def burst_allowance(rate: int) -> int:
    return math.ceil(rate / 60)


def earned(rate: int, ms: int) -> int:
    return math.floor(rate * ms / 60_000)


@pytest.mark.parametrize("rate", [1, 60, 90, 600, 6_000])
def test_long_quiet_spell_earns_at_most_one_second(engine: Engine, rate: int) -> None:
    room = open_room(engine, ratePerMinute=rate)
    engine.shift_clock(room, 30 * 60_000)  # half an hour with nobody waiting
    start = engine.stats(room).now_ms
    fill(engine, room, 400)
    end = engine.stats(room)
    # Real milliseconds pass while the line fills; they earn admissions at the rate.
    assert 1 <= end.dealt_total <= burst_allowance(rate) + earned(rate, end.now_ms - start)


@pytest.mark.parametrize("rate", [60, 600, 6_000])
def test_no_burst_after_pause_and_resume(engine: Engine, rate: int) -> None:
    room = open_room(engine, ratePerMinute=rate)
    fill(engine, room, 300)
    engine.pause(room)
    before = engine.stats(room).dealt_total
    engine.shift_clock(room, 10 * 60_000)
    fill(engine, room, 5, start=300)  # polls and entries while paused admit nobody
    assert engine.stats(room).dealt_total == before
    engine.open(room)  # resume
    start = engine.stats(room).now_ms
    fill(engine, room, 5, start=305)
    end = engine.stats(room)
    assert end.dealt_total - before <= burst_allowance(rate) + earned(rate, end.now_ms - start)


def test_pause_only_from_open(engine: Engine) -> None:
    room = make_room(engine)
    with pytest.raises(eng.NotOpen):
        engine.pause(room)
    engine.open(room)
    engine.pause(room)
    with pytest.raises(eng.NotOpen):
        engine.pause(room)
    assert engine.get_room(room)["status"] == "paused"


def test_resume_keeps_counters_and_shuffle(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=60)
    opens_at = engine.stats(room).now_ms + 60_000
    engine.open(room, opens_at)
    fill(engine, room, 20)
    order = [e.visitor for e in engine.line(room)]
    engine.pause(room)
    engine.open(room, opens_at + 999_999)  # opensAt is ignored on resume
    assert engine.get_room(room)["opensAt"] == opens_at
    assert [e.visitor for e in engine.line(room)] == order
    assert engine.stats(room).tickets == 20


@pytest.mark.parametrize("rate", [60, 90, 1_200])
def test_sliding_windows_never_exceed_the_bound(engine: Engine, rate: int) -> None:
    """Step the clock irregularly; every window [t_i, t_j] obeys floor(rT/60) + ceil(r/60)."""
    room = open_room(engine, ratePerMinute=rate)
    fill(engine, room, 60 * rate // 60 + 200)
    steps = [250, 10, 1_700, 3_000, 40, 999, 5, 4_000, 120, 60_000, 333, 2_500, 17, 800]
    times, dealt = [], []
    for step in steps * 2:
        engine.shift_clock(room, step)
        engine.enter(room, "v0", "s0", 10)
        stats = engine.stats(room)
        times.append(stats.now_ms)
        dealt.append(stats.dealt_total)
    for i in range(len(times)):
        for j in range(i + 1, len(times)):
            allowed = math.floor(rate * (times[j] - times[i]) / 60_000) + burst_allowance(rate)
            assert dealt[j] - dealt[i] <= allowed, (i, j)
    assert dealt[-1] > 0


def test_rate_change_never_bursts(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60)
    fill(engine, room, 100)
    engine.shift_clock(room, 500)
    before = engine.stats(room).dealt_total
    start = engine.stats(room).now_ms
    engine.update_room(room, {"ratePerMinute": 6_000})
    engine.enter(room, "v0", "s0", 10)
    end = engine.stats(room)
    assert end.dealt_total - before <= burst_allowance(6_000) + earned(6_000, end.now_ms - start)


def test_past_opens_at_is_open_now_and_not_a_pool(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=60)
    now = engine.stats(room).now_ms
    engine.open(room, now - 10 * 60_000)
    answers = [engine.enter(room, f"v{i}", "s", 10) for i in range(5)]
    assert answers[0].status == "admitted"  # the clock owed at least a second's worth
    assert [a.ticket for a in answers] == [1, 2, 3, 4, 5]
    assert [a.position for a in answers[1:]] == [1, 2, 3, 4]
