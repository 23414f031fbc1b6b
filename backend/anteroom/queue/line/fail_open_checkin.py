"""Each process checks in with the failMode-open rooms it serves, so no drain deals a spot that
another process let in during an outage before that process has booked it.

A process's outage admissions (:mod:`anteroom.queue.line.fail_open_ledger`) reach Redis only when
its room ticker books them, and the processes find Redis again one by one: the first one back
would otherwise drain spots the others let in. So every room ticker, at each step and once its
ledger is booked, checks in with each open failMode-open room (lua/check_in_fail_open.lua):
the room registers the process's last check-in and keeps the time until which every
registered process is known to have booked its own; from then the drain deals nothing until
all of them check in again. A process that saw Redis unreachable says so as it checks in:
every other process must then check in anew, however short the outage was. A process that
does not come back (it died holding its ledger) is waited for ``GRACE_MS`` at most from the
first check-in that found it missing; one that stops cleanly leaves the registers
(:meth:`FailOpenCheckIn.leave`). A process no register knows (it had not checked in yet when
Redis went) is waited for by the booking itself: lua/book_fail_open.lua holds the drain for
``GRACE_MS`` after it.

A check-in is sent with the latest time it may arrive (on the room's clock, from the last
reply): one held in a socket through a partition and delivered later vouches for nothing.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable

from anteroom.queue.line.room_engine import Engine

STALE_MS = 3_000  # a check-in vouches for its process this long (the ticker's step: ~0.5 s)
LATE_MS = 1_000  # a check-in that arrives later than this after it was sent is ignored
GRACE_MS = 10_000  # a missing process is waited for this long, from when it was found missing
log = logging.getLogger("anteroom")


class FailOpenCheckIn:
    """This process's check-ins with failMode-open rooms (called from the room ticker)."""

    def __init__(
        self,
        engine: Engine,
        ready: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``ready``: False while this process's requests may still admit offline (their
        breaker is open after an outage): no check-in vouches for it then."""
        self.engine = engine
        self.ready = ready
        self.clock = clock
        self._pid = 0
        self._process = ""
        # room id -> (its clock ms, this process's clock s) at the last reply
        self._clocks: dict[str, tuple[int, float]] = {}
        self._outage: set[str] | None = set()  # rooms to tell of an outage (None: every one)

    @property
    def process(self) -> str:
        """This process's name in the registers: host, pid, and a random part (a pid is
        reused after a restart, and a forked worker is a process of its own)."""
        pid = os.getpid()
        if pid != self._pid:
            self._pid, self._clocks, self._outage = pid, {}, set()
            self._process = f"{socket.gethostname()[:40]}:{pid}:{secrets.token_hex(4)}"
        return self._process

    def saw_outage(self) -> None:
        """Redis was unreachable (or this process admitted offline): every room hears of it."""
        self.process  # noqa: B018 (a fork first, so the mark is this process's own)
        self._outage = None

    def check_in(self, room_ids: Iterable[str]) -> int:
        """Check in with ``room_ids`` (their outage admissions booked); rooms checked in.

        A room never heard from is probed first (its clock read): the next step checks in.
        While this process is not ready, it only tells the rooms of an outage it saw, so that
        nobody drains on the strength of a check-in made before it. Raises
        StorageUnavailable as the engine does.
        """
        process, ready = self.process, self.ready()
        now = self.clock()
        checks = []
        for room_id in sorted(room_ids):
            told = self._outage is None or room_id in self._outage
            known = self._clocks.get(room_id)
            if not ready:
                if told:
                    checks.append((room_id, 0, True))
                continue
            valid = 0 if known is None else known[0] + int((now - known[1]) * 1000) + LATE_MS
            checks.append((room_id, valid, told))
        if not checks:
            return 0
        replies = self.engine.check_in_fail_open(process, checks, STALE_MS, GRACE_MS)
        received = self.clock()
        pending: set[str] = set()
        clocks: dict[str, tuple[int, float]] = {} if ready else dict(self._clocks)
        checked = 0
        for (room_id, _, told), reply in zip(checks, replies, strict=True):
            if reply is None:
                if told:
                    pending.add(room_id)  # told at its next check-in
                continue
            done, room_now = reply
            clocks[room_id] = (room_now, received)
            checked += done
        self._clocks = clocks  # when ready, rooms no longer served are forgotten
        self._outage = pending
        return checked

    def leave(self, room_ids: Iterable[str]) -> None:
        """Leave the registers of ``room_ids`` (a process that stops, its ledger booked)."""
        checks = [(room_id, 0, False) for room_id in sorted(room_ids)]
        if checks and self._pid == os.getpid():
            self.engine.check_in_fail_open(self.process, checks, STALE_MS, GRACE_MS, leaving=True)
