"""A per-process snapshot of each room, for far polls answered without Redis.

One read-only script call (lua/snapshot.lua) gives a room's generation, status, pace and
opening, budget, whether a regrouping is under way, the line's length and its blocks (see
line_blocks.py), live admissions and the admissions of the last minute (the pace at capacity),
and its revocations (read again only when their count ``rvn`` changed). A snapshot is used for
at most ``max_age`` seconds (one): a process reads each room it answers far polls for at most
once a second, whatever its number of polls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from anteroom.queue.connection.script_replies import SNAPSHOT_AT
from anteroom.queue.line import revocations
from anteroom.queue.line.line_blocks import LineBlocks
from anteroom.queue.line.poll_cadence import DEFAULT_POLL_BUDGET

MAX_AGE_SEC = 1.0


@dataclass(frozen=True)
class RoomSnapshot:
    """What a far poll needs to know of a room, as read at ``read_at`` (monotonic seconds)."""

    read_at: float
    now_ms: int  # the room's clock when read
    pinned: bool  # the room's clock is pinned (tests): it does not move between reads
    generation: int
    status: str
    opens_at_ms: int
    rate: int
    capacity: int
    hold_score: int
    abandon_after_sec: int
    poll_budget: int
    regrouping: bool
    counted: bool  # the room counts its line's blocks (rooms since creation or last close)
    revocation_count: str
    line: int
    active: int
    admitted_last_minute: int
    blocks: LineBlocks
    revocations: dict[str, int]
    # A passthrough room admits its whole line within a few calls, far faster than the
    # far poll's allowance for admissions since the snapshot: Redis answers its polls.
    passthrough: bool = False
    # A random room's spots have no place to answer, only odds: Redis answers its polls too.
    random: bool = False
    # The next scheduled event's boundary (room clock ms, 0: none): from then on the rate,
    # capacity and mode above may be another's, so Redis answers until the next read.
    boundary_ms: int = 0
    # gracePeriodSec: how long beyond its cadence's allowance a quiet spot is kept.
    grace_period_sec: int = 0

    def clock(self, monotonic: float) -> int:
        """The room's clock now (ms), from the clock when read and the time since."""
        if self.pinned:
            return self.now_ms
        return self.now_ms + int((monotonic - self.read_at) * 1000)

    def revoked(self, vid: str, session_jti: str, now_ms: int) -> bool:
        """A revocation of the visitor or its session counts at ``now_ms`` (the room's clock)."""
        return revocations.is_revoked(self.revocations, vid, session_jti, now_ms)


def _pairs(flat: Any) -> dict[str, int]:
    return {str(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}


def decode(raw: list[Any], read_at: float, known: RoomSnapshot | None) -> RoomSnapshot | None:
    """lua/snapshot.lua's reply (None when the room is gone); revocations kept from ``known``
    when the script did not send them (their count is unchanged)."""
    if not raw:
        return None
    s = SNAPSHOT_AT  # the reply's slots by name (script_replies.SNAPSHOT)
    revocations = raw[s.revocations]
    if revocations == 0 or revocations == "0":
        held = known.revocations if known is not None else {}
    else:
        held = _pairs(revocations)
    mode = raw[s.mode] if len(raw) > s.mode else ""
    return RoomSnapshot(
        read_at=read_at,
        now_ms=int(raw[s.now]),
        pinned=bool(int(raw[s.pinned])),
        generation=int(raw[s.generation]),
        status=str(raw[s.status]),
        opens_at_ms=int(raw[s.opensAt] or 0),
        rate=int(raw[s.rate] or 0),
        capacity=int(raw[s.capacity] or 0),
        hold_score=int(raw[s.holdScore] or 0),
        abandon_after_sec=int(raw[s.abandonAfterSec] or 0),
        poll_budget=int(raw[s.pollBudget] or DEFAULT_POLL_BUDGET),
        regrouping=bool(int(raw[s.regrouping])),
        counted=bool(int(raw[s.counted])),
        revocation_count=str(raw[s.revocationCount]),
        line=int(raw[s.line]),
        active=int(raw[s.active]),
        admitted_last_minute=int(raw[s.admittedLastMinute]),
        blocks=LineBlocks.from_counts(_pairs(raw[s.blocks])),
        revocations=held,
        passthrough=mode == "passthrough",
        random=mode == "random",
        boundary_ms=int(raw[s.boundary]) if len(raw) > s.boundary else 0,
        grace_period_sec=int(raw[s.gracePeriodSec] or 0) if len(raw) > s.gracePeriodSec else 0,
    )


class SnapshotCache:
    """This process's snapshots, each read again once older than ``max_age`` seconds.

    ``read(room_id, rvn)`` runs the snapshot script (the engine's read-only path); ``clock``
    is injectable so tests move time without sleeping.
    """

    def __init__(
        self,
        read: Callable[[str, str], list[Any]],
        max_age: float = MAX_AGE_SEC,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.read = read
        self.max_age = max_age
        self.clock = clock
        self.reads = 0  # snapshot scripts run by this process (the benchmark divides by polls)
        self._snapshots: dict[str, RoomSnapshot | None] = {}
        self._lock = threading.Lock()

    def get(self, room_id: str) -> RoomSnapshot | None:
        """The room's snapshot, read now if the last is too old (None: no such room)."""
        now = self.clock()
        known = self._snapshots.get(room_id)
        if known is not None and now - known.read_at < self.max_age:
            return known
        with self._lock:  # one read per room at a time; the others take what it read
            known = self._snapshots.get(room_id)
            if known is not None and self.clock() - known.read_at < self.max_age:
                return known
            rvn = known.revocation_count if known is not None else ""
            raw = self.read(room_id, rvn)
            self.reads += 1
            snapshot = decode(raw, self.clock(), known)
            self._snapshots[room_id] = snapshot
            return snapshot

    def forget(self, room_id: str | None = None) -> None:
        """Drop one room's snapshot (or all): the next far poll reads it again."""
        with self._lock:
            if room_id is None:
                self._snapshots.clear()
            else:
                self._snapshots.pop(room_id, None)
