"""When a process's batched last-seen bookings fall due (queue/line/seen_bookings.py)."""

from __future__ import annotations

from typing import Any

from anteroom.queue.line.seen_bookings import SeenBookings


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_bookings_fall_due_a_second_after_the_first_whatever_clock_is_read() -> None:
    sent: list[list[Any]] = []
    bookings = SeenBookings(lambda room, args: sent.append(args) or [])
    # A clock swapped in after construction, far from the one it replaced (a test's stand-in,
    # or a machine up for less time than the stand-in's start): nothing is due before a booking.
    clock = bookings.clock = Clock(1_000_000.0)
    assert not bookings.due()
    bookings.note("r1", "v1", 7, 1, 60_000)
    assert not bookings.due()  # noted just now
    clock.now += 0.5
    assert not bookings.due()
    clock.now += 0.5
    assert bookings.due()
    assert bookings.flush() == 1 and sent == [[1, "v1", 7, 60_000]]
    bookings.note("r1", "v2", 8, 1, 60_000)
    assert not bookings.due()  # a second after the last flush, not after this booking
    clock.now += 1.0
    assert bookings.due()
