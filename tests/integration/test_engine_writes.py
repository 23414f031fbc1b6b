"""What a poll writes: last-seen at most once per half abandonAfterSec, the poll counter never
replicated, and abandonment still never early."""

from __future__ import annotations

import pytest
import redis

from anteroom.engine import Engine
from anteroom.queue.line import room_engine as eng
from helpers import make_room

pytestmark = pytest.mark.redis

START = 1_800_000_000_000


def aof_size(client: redis.Redis) -> int:
    """Bytes in the append-only file: what a replica or a restart would be sent."""
    return int(client.info("persistence")["aof_current_size"])


def pre_queue(engine: Engine, spots: int, **config: int) -> str:
    """A room opening in a day, holding ``spots`` waiting spots v0… (tickets 1…)."""
    room = make_room(engine, ratePerMinute=1, **config)
    engine.set_clock(room, START)
    engine.open(room, START + 86_400_000)
    for i in range(spots):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    return room


def test_a_deep_visitor_polling_as_told_writes_at_most_one_poll_in_ten(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room = pre_queue(engine, 40)  # abandonAfterSec is the default 300
    polls = writes = 0
    for _ in range(120):  # half an hour of polls every 15 s, the cadence deep in a line
        engine.shift_clock(room, 15_000)
        for i in range(40):
            before = aof_size(redis_client)
            assert engine.poll(room, f"v{i}", i + 1, 1).status == "waiting"
            polls += 1
            writes += aof_size(redis_client) > before
    # Each spot books last-seen every 165 s (11 polls); the room's sweep books once a minute.
    assert writes / polls <= 0.1


def test_the_poll_counter_is_never_written_to_the_append_only_file(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room = pre_queue(engine, 1)
    engine.shift_clock(room, 1_000)
    engine.poll(room, "v0", 1, 1)  # the first poll after the entry books last-seen
    before = aof_size(redis_client)
    for _ in range(50):
        engine.poll(room, "v0", 1, 1)
    assert aof_size(redis_client) == before


def test_a_visitor_who_polls_within_abandon_time_is_never_dropped(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=1, abandonAfterSec=60)
    engine.set_clock(room, START)
    engine.open(room)
    engine.enter(room, "gone", "s", 10)  # begins a sweep pass; the next may begin at 60 s
    engine.enter(room, "here", "s", 10)
    engine.pause(room)  # keep the drain out: only the sweep may drop spots here
    # Polls 20 s and 45 s in: the second books nothing new, yet counts as a poll.
    for step in (20_000, 25_000):
        engine.shift_clock(room, step)
        engine.poll(room, "here", 2, 1)
    engine.shift_clock(room, 59_999)  # 59.999 s after the last poll, a pass begins
    assert engine.poll(room, "here", 2, 1).position == 1  # "gone" was dropped, "here" kept
    assert engine.stats(room).waiting == 1


def test_a_silent_visitor_goes_within_half_abandon_time_of_its_due(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=1, abandonAfterSec=60)
    engine.set_clock(room, START)
    engine.open(room)
    for vid in ("first", "quiet", "last"):
        engine.enter(room, vid, "s", 10)  # the first entry begins a sweep pass
    engine.pause(room)  # keep the drain out: only the sweep may drop spots here
    engine.shift_clock(room, 10_000)
    engine.poll(room, "quiet", 2, 1)  # its last poll, at 10 s
    for step in (10_000, 20_000, 19_000):  # the others poll at 20, 40 and 59 s
        engine.shift_clock(room, step)
        engine.poll(room, "first", 1, 1)
        engine.poll(room, "last", 3, 1)
    engine.shift_clock(room, 41_000)  # 100 s: 90 s = abandonAfterSec x 1.5 since its last poll
    assert engine.poll(room, "last", 3, 1).position == 2  # this poll began a pass
    assert engine.stats(room).waiting == 2
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "quiet", 2, 1)


def test_a_long_abandon_time_books_last_seen_at_most_150_s_ahead(engine: Engine) -> None:
    # abandonAfterSec of an hour: booking half of it would keep a silent spot 30 minutes too long.
    room = make_room(engine, ratePerMinute=1, abandonAfterSec=3_600)
    engine.set_clock(room, START)
    engine.open(room)
    for vid in ("first", "quiet"):
        engine.enter(room, vid, "s", 10)  # the first entry begins a sweep pass
    engine.pause(room)  # keep the drain out: only the sweep may drop spots here
    engine.shift_clock(room, 10_000)
    engine.poll(room, "quiet", 2, 1)  # its last poll, at 10 s
    since_last_poll = 0
    while engine.stats(room).waiting == 2:
        engine.shift_clock(room, 5_000)
        since_last_poll += 5_000
        engine.poll(room, "first", 1, 1)  # carries the sweep, a pass a minute
        assert since_last_poll <= 3_600_000 + 150_000 + 60_000, "kept too long"
    assert since_last_poll > 3_600_000  # never sooner than abandonAfterSec
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "quiet", 2, 1)
