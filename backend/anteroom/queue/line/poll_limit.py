"""The per-ticket poll limit (90 a minute), counted in this process's memory.

Counting in Redis meant a write on every poll, which kept the far poll off replicas and put
every poll in the append-only file. Here each engine counts the polls and entries of each
ticket in fixed one-minute windows of the room's clock (the ``now`` every answer carries, so
a shifted or pinned room clock moves the windows too); once a ticket has used up a minute, its
next calls pass ``'<generation>:<ticket>:<minute>'`` to the script, which refuses them while
that minute lasts and writes nothing. A refusal is not counted.

Honest bounds: the count is per process. A visitor whose polls are spread over N processes
(gunicorn workers, instances) may poll up to 90 x N times a minute; two polls of one ticket
racing in one process may both pass at the 90th. At most ``MAX_TICKETS`` tickets are tracked
(least recently counted forgotten first, ~100 bytes each): a forgotten ticket starts a new
count. None of this can admit anyone sooner: the limit guards Redis and the web tier from a
hammering client, while admission order and rate are kept by the scripts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

POLLS_A_MINUTE = 90
MAX_TICKETS = 200_000
MINUTE_MS = 60_000


class PollCounter:
    """Polls of each (room, vid) ticket in the current minute of the room's clock."""

    def __init__(self, limit: int = POLLS_A_MINUTE, max_tickets: int = MAX_TICKETS) -> None:
        self.limit = limit
        self.max_tickets = max_tickets
        # (room, vid) → (generation, ticket, minute, polls that minute)
        self._counts: OrderedDict[tuple[str, str], tuple[int, int, int, int]] = OrderedDict()
        self._lock = threading.Lock()

    def spent(self, room_id: str, vid: str) -> str:
        """``'<generation>:<ticket>:<minute>'`` when that ticket has used up that minute, else ''.

        The script compares it with the spot it finds and the room's clock: a later minute, a
        new ticket or a new generation is not refused.
        """
        entry = self._counts.get((room_id, vid))
        if entry is None or entry[3] < self.limit:
            return ""
        generation, ticket, minute, _ = entry
        return f"{generation}:{ticket}:{minute}"

    def count(self, room_id: str, vid: str, generation: int, ticket: int, now_ms: int) -> None:
        """Count one poll (or entry) the script answered, in the minute of ``now_ms``."""
        key = (room_id, vid)
        minute = now_ms // MINUTE_MS
        with self._lock:
            entry = self._counts.get(key)
            if entry is not None and entry[:3] == (generation, ticket, minute):
                self._counts[key] = (generation, ticket, minute, entry[3] + 1)
            else:
                self._counts[key] = (generation, ticket, minute, 1)
            self._counts.move_to_end(key)
            if len(self._counts) > self.max_tickets:
                self._counts.popitem(last=False)
