"""The poll cadence within a budget (docs/queue.md, invariant 11) and abandonment that follows it
(docs/queue.md, invariant 7).

The scripts and queue/line/poll_cadence.py state one rule in two languages: the first test runs the
Lua ``poll_after`` itself over a table of cases and compares. The budget arithmetic is checked
on the Python rule (an upper bound summed over every position of long lines), and the sweep
against visitors who poll exactly as told, on the room's clock.
"""

from __future__ import annotations

import itertools

import pytest
import redis

from anteroom.engine import Engine
from anteroom.queue.connection import lua_scripts
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line.poll_cadence import (
    CADENCE_CAP_MS,
    cadence_stretch,
    front_size,
    longest_unpolled_ms,
    poll_after,
)
from anteroom.queue.rooms.room_config import queue_token_life
from helpers import make_room

pytestmark = pytest.mark.redis

START = 1_800_000_000_000
PACES = (1 / 60, 1.0, 7.5, 100.0, 1_666.0)
POSITIONS = (1, 2, 99, 100, 101, 1_000, 1_001, 5_000, 150_001, 2_000_000)
LINES = (10, 5_000, 1_000_000, 10_000_000)
DELAYS = (0, 9_999, 600_000, 86_400_000)


def test_the_scripts_and_python_tell_the_same_cadence(redis_client: redis.Redis) -> None:
    source = "\n".join(lua_scripts._expanded(piece) for piece in ("_base", "_cadence"))
    script = redis_client.register_script(
        source + "\nreturn poll_after(tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),"
        " tonumber(ARGV[4]), tonumber(ARGV[5]))"
    )
    cases = list(itertools.product(POSITIONS, PACES, DELAYS, LINES, (100, 5_000)))
    pipe = redis_client.pipeline(transaction=False)
    for case in cases:
        script(keys=["cadence{x}"], args=[repr(float(v)) for v in case], client=pipe)
    for case, told in zip(cases, pipe.execute(), strict=True):
        assert told == poll_after(*case), case


@pytest.mark.parametrize("pace", [1.0, 100.0, 1_000.0])
@pytest.mark.parametrize("line", [100_000, 1_000_000, 10_000_000])
def test_a_lines_polls_stay_within_its_budget_plus_the_front(pace: float, line: int) -> None:
    budget, front = 5_000, front_size(pace)
    # Intervals never shrink further back, so each chunk polls at most as often as its first;
    # chunks of 1% of their start keep that bound within 1% of the sum.
    total, start = 0.0, 1
    while start <= line:
        count = min(max(1, start // 100), line - start + 1)
        total += count * 1000 / poll_after(start, pace, 0, line, budget)
        start += count
    assert total <= (budget + front) * 1.01
    # ... and no longer than needed: unstretched lines keep the 5-minute cap
    if cadence_stretch(line, pace, front, budget) == 1:
        assert poll_after(line, pace, 0, line, budget) <= CADENCE_CAP_MS


def test_the_front_polls_every_one_to_two_seconds() -> None:
    for pace in PACES:
        front = front_size(pace)
        assert front >= 100 and front >= pace * 10
        told = [poll_after(p, pace, 0, 10_000_000, 5_000) for p in (1, front // 2, front)]
        assert told == [1000, 1000, 2000]
        assert poll_after(front + 1, pace, 0, 10_000_000, 5_000) >= 2000


def test_a_queue_token_outlives_three_of_the_longest_polls() -> None:
    room = {"abandonAfterSec": 300, "ratePerMinute": 6_000, "maxWaiting": 10_000_000}
    longest = poll_after(10_000_000, 100.0, 0, 10_000_000, 5_000)
    assert longest_unpolled_ms(room) >= 3 * longest
    assert queue_token_life(room) * 1000 >= 3 * longest + 60_000


def test_a_far_visitor_polling_at_its_own_cadence_is_never_swept(engine: Engine) -> None:
    # A day before opening every spot is told to poll every 5 minutes; abandonAfterSec is 60 s.
    room = make_room(engine, ratePerMinute=60, abandonAfterSec=60)
    engine.set_clock(room, START)
    engine.open(room, START + 86_400_000)
    faithful = engine.enter(room, "faithful", "s1", 10)
    silent = engine.enter(room, "silent", "s2", 10)
    assert faithful.poll_after_ms == silent.poll_after_ms == CADENCE_CAP_MS
    elapsed = 0
    for _ in range(12):  # an hour of polls, each exactly when told
        engine.shift_clock(room, faithful.poll_after_ms)
        elapsed += faithful.poll_after_ms
        engine.tick(room)  # the room's ticker: a sweep pass each time (a minute has passed)
        while not engine.sweep(room)[1]:
            pass
        silent_gone = engine.stats(room).waiting == 1
        # the silent one is kept three of its polls (15 min), and goes within a booking after
        assert silent_gone == (elapsed >= 3 * CADENCE_CAP_MS + 30_000)
        faithful = engine.poll(room, "faithful", 1, 1)
        assert faithful.status == "waiting"
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "silent", 2, 1)


def test_a_near_visitor_still_goes_after_abandon_after_sec(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=60, abandonAfterSec=60)
    engine.set_clock(room, START)
    engine.open(room)
    engine.pause(room)  # no admissions: only abandonment may remove the spots
    answer = engine.enter(room, "near", "s1", 10)
    assert answer.poll_after_ms == 1000
    engine.shift_clock(room, 59_999)
    assert engine.sweep(room)[0] == 0
    engine.shift_clock(room, 30_001)  # booked at most min(60 s / 2, 150 s) late
    assert engine.sweep(room)[0] == 1
