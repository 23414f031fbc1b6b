"""The fail-open admissions a process dealt during an outage, kept until Redis can book them.

A ``failMode: open`` room admits without Redis; Redis then still holds the visitor's spot in the
line, and once it is back the drain would deal that spot a real admission nobody will use (a
ghost holding a slot until it expires). The room ticker books what is recorded here at its next
tick (:meth:`~anteroom.queue.line.room_engine.Engine.book_fail_open`), before it drains.

Kept in the process's memory: a worker that dies before Redis is back loses its entries (their
spots are then dealt as before); bounded, so an outage of hours cannot grow it without end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class FailOpenAdmission:
    """One admission dealt without Redis: whose, from which spot, until when."""

    vid: str
    ticket: int | None  # the spot's ticket (a poll's); None for an entry (no spot known)
    generation: int
    expires_at: float  # epoch seconds, the admission's ``exp``


class FailOpenLedger:
    """Fail-open admissions by room, until booked."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._rooms: dict[str, list[FailOpenAdmission]] = {}
        self._count = 0
        self._lock = threading.Lock()

    def record(self, room_id: str, admission: FailOpenAdmission) -> None:
        """Remember ``admission`` of ``room_id`` (dropped when the ledger is full)."""
        with self._lock:
            if self._count >= MAX_ENTRIES:
                return  # its spot is dealt as before: a ghost, not a lost place
            self._rooms.setdefault(room_id, []).append(admission)
            self._count += 1

    def rooms(self) -> list[str]:
        """Rooms with admissions to book."""
        with self._lock:
            return list(self._rooms)

    def take(self, room_id: str) -> list[FailOpenAdmission]:
        """The admissions of ``room_id`` (expired ones too: they free their spots), removed."""
        with self._lock:
            taken = self._rooms.pop(room_id, [])
            self._count -= len(taken)
        return taken

    def put_back(self, room_id: str, admissions: list[FailOpenAdmission]) -> None:
        """Return admissions that could not be booked (Redis failed again)."""
        for admission in admissions:
            self.record(room_id, admission)

    def __len__(self) -> int:
        return self._count
