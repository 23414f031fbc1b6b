"""Last-seen of far polls, booked in batches: one script call per room per process per second.

A far poll answered from a snapshot (far_poll.py) still proves its visitor is there. Rather
than a write per poll, the spot is noted here and :meth:`SeenBookings.flush` books every noted
spot of a room in one call of lua/book_seen_many.lua (the room ticker's thread flushes every
half second; a poll flushes too when a second has passed). The script names the spots it did
not find waiting under their ticket (gone, admitted, another ticket): their next poll goes to
Redis (``is_gone``), which answers what became of them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

FLUSH_EVERY_SEC = 1.0
BATCH = 1_000  # spots per script call (Lua's unpack stays far below its limit)
MAX_GONE = 100_000  # gone spots remembered per process, the oldest forgotten first


class SeenBookings:
    """Spots to book, by room; ``run(room_id, args)`` calls book_seen_many and returns its reply."""

    def __init__(
        self,
        run: Callable[[str, list[Any]], list[str]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.run = run
        self.clock = clock
        self.calls = 0  # book_seen_many calls made (the benchmark divides by polls)
        self._pending: dict[str, dict[str, tuple[int, int, int]]] = {}
        self._gone: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._lock = threading.Lock()
        # Since the last flush, or the first booking noted: read from ``clock`` only once it
        # is in use (a clock swapped after construction, as in tests, is then the one read).
        self._flushed: float | None = None

    def note(self, room_id: str, vid: str, ticket: int, generation: int, ahead_ms: int) -> None:
        """Book ``vid``'s last-seen at least ``ahead_ms`` ahead of the room's clock, soon."""
        with self._lock:
            if self._flushed is None:
                self._flushed = self.clock()
            room = self._pending.setdefault(room_id, {})
            was = room.get(vid)
            if was is None or was[2] < ahead_ms or was[:2] != (ticket, generation):
                room[vid] = (ticket, generation, ahead_ms)

    def is_gone(self, room_id: str, vid: str, ticket: int) -> bool:
        """The last booking did not find this spot waiting under this ticket."""
        return self._gone.get((room_id, vid)) == ticket

    def due(self) -> bool:
        """Something is pending and a second has passed since the last flush."""
        flushed = self._flushed
        return (
            bool(self._pending)
            and flushed is not None
            and self.clock() - flushed >= FLUSH_EVERY_SEC
        )

    def flush(self) -> int:
        """Book everything pending; the number of spots sent. A failure keeps them pending."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._flushed = self.clock()
        sent = 0
        try:
            for room_id, spots in list(pending.items()):
                self._book_room(room_id, spots)
                sent += len(spots)
                del pending[room_id]
        finally:
            if pending:  # put back what was not booked (Redis failed): the next flush retries
                with self._lock:
                    for room_id, spots in pending.items():
                        self._pending.setdefault(room_id, {}).update(spots)
        return sent

    def _book_room(self, room_id: str, spots: dict[str, tuple[int, int, int]]) -> None:
        by_generation: dict[int, list[Any]] = {}
        for vid, (ticket, generation, ahead_ms) in spots.items():
            by_generation.setdefault(generation, []).extend((vid, ticket, ahead_ms))
        for generation, args in by_generation.items():
            for start in range(0, len(args), 3 * BATCH):
                gone = self.run(room_id, [generation, *args[start : start + 3 * BATCH]])
                self.calls += 1
                with self._lock:
                    for vid in gone:
                        self._gone[(room_id, str(vid))] = spots[str(vid)][0]
                        self._gone.move_to_end((room_id, str(vid)))
                    while len(self._gone) > MAX_GONE:
                        self._gone.popitem(last=False)
