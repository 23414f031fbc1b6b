"""The fail-open rooms' registers of processes (lua/check_in_fail_open.lua, issue 32): once a
process may hold outage admissions not yet booked, no drain deals until it checks in again,
or until it has been missing for the grace period; a process that leaves is not waited for,
and a check-in delivered late vouches for nothing. On the room's clock, moved by the test."""

from __future__ import annotations

import pytest

from anteroom.engine import Engine
from anteroom.queue.line.fail_open_checkin import GRACE_MS, STALE_MS
from helpers import make_room

pytestmark = pytest.mark.redis


def fail_open_room(engine: Engine, fail_mode: str = "open") -> str:
    """An open room with a line of 300 and 100 admissions a second, its clock pinned."""
    room = make_room(engine, ratePerMinute=6000, failMode=fail_mode)
    engine.set_clock(room, 1_800_000_000_000)
    engine.open(room)  # its bank empty, and nothing earned while the clock stands still
    for i in range(300):
        assert engine.enter(room, f"v{i}", f"s{i}", 10).status == "waiting"
    return room


def check_in(engine: Engine, room: str, process: str, late: bool = False,
             outage: bool = False, leaving: bool = False) -> bool:  # fmt: skip
    """``process`` checks in (sent 1 s before it must arrive, or arriving past that)."""
    now = engine.stats(room).now_ms
    valid = now - 1 if late else now + 1_000
    answer = engine.check_in_fail_open(process, [(room, valid, outage)], STALE_MS, GRACE_MS,
                                       leaving)[0]  # fmt: skip
    assert answer is not None
    return answer[0]


def dealt_after(engine: Engine, room: str, ms: int) -> int:
    """Admissions the tick deals once ``ms`` more of the room's clock have earned some."""
    before = engine.stats(room).dealt_total
    engine.shift_clock(room, ms)
    engine.tick(room, 1)
    return engine.stats(room).dealt_total - before


def test_after_an_outage_every_process_checks_in_before_the_next_drain(engine: Engine) -> None:
    room = fail_open_room(engine)
    assert check_in(engine, room, "a") and check_in(engine, room, "b")
    assert dealt_after(engine, room, 20) == 2
    # a comes back from an outage first: b's last check-in, made before it, vouches for nothing
    assert check_in(engine, room, "a", outage=True)
    assert dealt_after(engine, room, 20) == 0
    ticket = engine.line(room)[0]
    head = engine.poll(room, ticket.visitor, ticket.ticket, 1)  # a poll's drain waits too
    assert head.status == "waiting"
    assert check_in(engine, room, "b")  # b has booked its own
    assert dealt_after(engine, room, 20) == 4


def test_a_silent_process_is_waited_for_the_grace_period_at_most(engine: Engine) -> None:
    room = fail_open_room(engine)
    check_in(engine, room, "a")
    check_in(engine, room, "b")
    assert dealt_after(engine, room, STALE_MS - 10) > 0  # b's check-in still vouches for it
    check_in(engine, room, "a")
    assert dealt_after(engine, room, 10) == 0  # b silent for STALE_MS: it may hold some
    check_in(engine, room, "a")  # finds b missing: from now on b is waited for GRACE_MS
    assert dealt_after(engine, room, GRACE_MS - 10) == 0
    check_in(engine, room, "a")
    assert dealt_after(engine, room, 0) == 0
    engine.shift_clock(room, 10)
    check_in(engine, room, "a")  # b is given up (it died): the line moves again
    assert dealt_after(engine, room, 10) > 0


def test_a_process_that_leaves_is_not_waited_for(engine: Engine) -> None:
    room = fail_open_room(engine)
    check_in(engine, room, "a")
    check_in(engine, room, "b")
    check_in(engine, room, "b", leaving=True)
    engine.shift_clock(room, STALE_MS)
    check_in(engine, room, "a")
    assert dealt_after(engine, room, 10) > 0
    check_in(engine, room, "a", leaving=True)  # nobody left in the register: nobody to wait for
    assert dealt_after(engine, room, STALE_MS + GRACE_MS) > 0


def test_a_check_in_delivered_late_vouches_for_nothing(engine: Engine) -> None:
    room = fail_open_room(engine)
    check_in(engine, room, "a")
    check_in(engine, room, "b")
    engine.shift_clock(room, STALE_MS)
    check_in(engine, room, "a")
    # b's check-in, held in a socket past the time it had to arrive by, registers nothing
    assert not check_in(engine, room, "b", late=True)
    assert dealt_after(engine, room, 10) == 0
    assert check_in(engine, room, "b")
    assert dealt_after(engine, room, 10) > 0


def test_a_fail_closed_room_never_waits(engine: Engine) -> None:
    room = fail_open_room(engine, fail_mode="closed")
    check_in(engine, room, "a", outage=True)  # a process that served it while it was open
    assert dealt_after(engine, room, STALE_MS + 10) > 0


def test_a_booking_holds_the_drain_for_processes_the_register_never_knew(engine: Engine) -> None:
    """Processes that had not checked in yet when Redis went (started a moment before, or during
    the outage) are in no register: the first booking of outage admissions holds the drain for
    the grace period, so they can come back and book theirs before their spots are dealt."""
    room = fail_open_room(engine)
    generation = int(engine.redis.hget(engine.keys.room(room), "gen") or 0)
    first, second = engine.line(room)[:2]
    # a: the first process back, never registered, books its one; b (unknown) holds the second
    assert engine.book_fail_open(room, generation, [(first.visitor, first.ticket, 60_000)],
                                 GRACE_MS) == (1, 0)  # fmt: skip
    assert check_in(engine, room, "a", outage=True)
    assert dealt_after(engine, room, 20) == 0
    assert check_in(engine, room, "a")
    assert dealt_after(engine, room, GRACE_MS - 40) == 0  # b is waited for
    engine.book_fail_open(room, generation, [(second.visitor, second.ticket, 60_000)], GRACE_MS)
    assert check_in(engine, room, "b", outage=True)
    assert check_in(engine, room, "a")
    # b's booking waits for a third in its turn; then the line moves, b's spot not dealt again
    assert dealt_after(engine, room, GRACE_MS - 10) == 0
    engine.shift_clock(room, 20)
    assert check_in(engine, room, "a") and check_in(engine, room, "b")
    assert dealt_after(engine, room, 20) > 0
    spots = {t.visitor for t in engine.line(room)}
    assert first.visitor not in spots and second.visitor not in spots
    assert engine.stats(room).active == 2 + engine.stats(room).dealt_total


def test_a_booking_in_a_room_nobody_checks_in_with_does_not_stop_its_line(engine: Engine) -> None:
    """A booking's hold ends by itself: a process's own tick (no register at all) deals again."""
    room = fail_open_room(engine)
    generation = int(engine.redis.hget(engine.keys.room(room), "gen") or 0)
    head = engine.line(room)[0]
    engine.book_fail_open(room, generation, [(head.visitor, head.ticket, 60_000)], GRACE_MS)
    assert dealt_after(engine, room, 20) == 0
    assert dealt_after(engine, room, GRACE_MS) > 0
