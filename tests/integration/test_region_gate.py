"""A room across regions admits only what its region's lease allows (lua/_region_gate.lua), on
the room's pinned clock: the ceiling, the watermark, the epoch's fence and the fallbacks."""

from __future__ import annotations

from anteroom.engine import Engine
from helpers import open_room

START = 1_800_000_000_000


def line_of(engine: Engine, count: int, rate: int = 600, gap_ms: int = 100, **cfg: object) -> str:
    """A pinned-clock room with ``count`` waiting, one every ``gap_ms`` (its bank empty)."""
    room = open_room(engine, ratePerMinute=rate, **cfg)
    engine.set_clock(room, START)
    engine.apply_lease(room, 1, 0, 0, 0, 0)  # regional from the start: nobody walks straight in
    for i in range(count):
        engine.enter(room, f"v{i}", "s", 10)
        engine.shift_clock(room, gap_ms)
    return room


def admitted(engine: Engine, room: str) -> set[str]:
    waiting = {entry.visitor for entry in engine.line(room, 200)}
    return {f"v{i}" for i in range(engine.stats(room).tickets)} - waiting


def tick(engine: Engine, room: str, ms: int = 1_000) -> None:
    engine.shift_clock(room, ms)
    engine.tick(room, 900)


def test_the_lease_ceiling_bounds_admissions_whatever_the_bank(engine: Engine) -> None:
    room = line_of(engine, 30)
    now = engine.stats(room).now_ms
    engine.apply_lease(room, 2, 4, now, 10_000, 0)
    for _ in range(3):  # three seconds at 10 a second: the bank would allow 30
        tick(engine, room)
    assert admitted(engine, room) == {"v0", "v1", "v2", "v3"}
    assert engine.stats(room).dealt_total == 4


def test_only_those_who_arrived_by_the_watermark_are_admitted(engine: Engine) -> None:
    room = line_of(engine, 10, gap_ms=100)
    engine.apply_lease(room, 2, 100, START + 450, 10_000, 0)  # v0..v4 arrived by then
    tick(engine, room)
    tick(engine, room)
    assert admitted(engine, room) == {"v0", "v1", "v2", "v3", "v4"}
    # the next lease moves the watermark on: the line goes on in its order
    engine.apply_lease(room, 2, 100, START + 650, 10_000, 0)
    tick(engine, room)
    assert admitted(engine, room) == {f"v{i}" for i in range(7)}


def test_an_expired_lease_pauses_the_region(engine: Engine) -> None:
    room = line_of(engine, 20)
    engine.apply_lease(room, 2, 100, START + 10_000, 1_500, 0)
    tick(engine, room)
    got = len(admitted(engine, room))
    assert got == 10  # within the lease, at the room's pace
    for _ in range(3):  # the lease runs out: nothing more
        tick(engine, room)
    assert len(admitted(engine, room)) == got


def test_an_expired_lease_with_a_static_share_admits_that_share(engine: Engine) -> None:
    room = line_of(engine, 60, rate=600, capacity=100)
    engine.apply_lease(room, 2, 0, START, 0, 0.25)  # expired at once; a quarter of the rate
    for _ in range(4):
        tick(engine, room)
    # four seconds at a quarter of 10 a second; the watermark no longer holds
    assert engine.stats(room).dealt_total == 10


def test_the_static_share_bounds_capacity_too(engine: Engine) -> None:
    room = line_of(engine, 60, rate=6000, capacity=20)
    engine.apply_lease(room, 2, 0, START, 0, 0.25)
    for _ in range(4):
        tick(engine, room)
    assert engine.stats(room).active == 5  # a quarter of 20


def test_a_lease_of_an_older_epoch_is_refused(engine: Engine) -> None:
    room = line_of(engine, 10)
    assert engine.apply_lease(room, 7, 2, START + 10_000, 10_000, 0)[:2] == (True, 7)
    assert engine.apply_lease(room, 6, 100, START + 10_000, 10_000, 0)[:2] == (False, 7)
    tick(engine, room)
    assert engine.stats(room).dealt_total == 2


def test_a_regional_room_lets_nobody_straight_in(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=600)
    engine.set_clock(room, START)
    engine.apply_lease(room, 1, -1, 0, 0, 0)
    engine.shift_clock(room, 2_000)  # a full bank, an empty line
    answer = engine.enter(room, "first", "s", 10)
    assert answer.status == "waiting"
    engine.leave_regions(room)  # one region again: the bank lets the next one straight in
    assert engine.enter(room, "second", "s", 10).status == "admitted"


def test_the_summary_counts_the_waiting_by_arrival(engine: Engine) -> None:
    room = line_of(engine, 12, gap_ms=50)
    now, dealt, active, waiting, rate, _cap, buckets, tail = engine.region_summary(room, 8, 100, 4)
    assert (dealt, active, waiting, rate) == (0, 0, 12, 600)
    assert now == START + 12 * 50
    # the head's 8 in buckets of 100 ms: two arrivals each
    assert buckets == [(START + 100 * i, 2) for i in range(4)]
    # beyond the head: a sample of (rank, arrival) for positions
    assert tail and all(START + 50 * (rank - 1) == t for rank, t in tail)


def test_joining_twice_keeps_the_lease_held(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=600)
    engine.set_clock(room, START)
    assert engine.join_regions(room, 0.5)
    assert engine.apply_lease(room, 3, 9, START, 10_000, 0.5)[0]
    assert not engine.join_regions(room, 0.5)
    assert not engine.apply_lease(room, 2, 9, START, 10_000, 0.5)[0]  # epoch 3 still held
