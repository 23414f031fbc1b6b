"""A room's numbers over time, kept in Redis beside the room (issue 14, item 1).

Every 10 s one sample of a room is written: the gauges of that moment (status, waiting, held,
active, rate, capacity) and the room's cumulative counters (admissions dealt, entries, refusals,
leaves, abandoned) and wait histogram (ticket taken → admission dealt, by bucket). Cumulative
values make every reader's arithmetic a difference, survive a missed sample (the next one carries
the counts), and make the per-minute series a mere copy of the first sample of each minute.

Samples live in two sorted sets under the room's hash tag, scored by sample time (room clock):
``s10`` (every 10 s, 24 h) and ``s60`` (every minute, 14 days), trimmed on each write and given a
TTL, so a deleted room's series vanish by themselves. One script call samples a room and claims
its 10 s slot in the same step (the slot is taken when the newest sample is in it), so instances
racing for a room write it once (``series_sampler`` decides who calls, and when). Nothing is
added to any visitor call.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from anteroom.queue.connection import lua_scripts as scripts
from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.queue.line.room_engine import WAIT_BUCKETS
from anteroom.queue.rooms.key_layout import ABANDON_FIELDS, KeySpace
from anteroom.queue.rooms.room_hash import stored  # the wait histogram's buckets, declared once

FINE_MS = 10_000
COARSE_MS = 60_000
FINE_KEEP_MS = 24 * 3_600_000
COARSE_KEEP_MS = 14 * 86_400_000
# Cumulative counters of the room hash (stored name → the name the API and room_hash.py give
# them), in sample order.
COUNTERS = {
    stored(name): name
    for name in (
        "admitted",
        "entries",
        "refusedFull",
        "refusedDenied",
        "refusedBusy",
        "leaves",
        "abandoned",
    )
}
# Counters sampled after the abandon buckets (added to the sample's end, so readers of the older
# shape read newer samples unchanged); a window's increase of each is a column like COUNTERS'.
# Samples older than a counter have fewer of them: the missing ones read as zeros.
LATER_COUNTERS = {
    stored(name): name
    for name in (
        "unusedAdmissions",
        "agentsQueued",
        "agentsRefused",
        "agentsInvalid",
        "agentsLane",
    )
}
GAUGES = ("waiting", "held", "active", "rate", "capacity")
# The safety net's state in a sample (lua/_safety_net.lua): 0 none (and older samples), 1, 2.
NET_STATES = {1: "calm", 2: "queueing"}
STATUS_CODES = {"idle": 0, "open": 1, "paused": 2}


WEB_REFUSALS = (stored("refusedDenied"), stored("refusedBusy"))
# Signed agents' arrivals by outcome, counted by the web tier as its refusals are.
AGENT_COUNTS = {
    "queued": stored("agentsQueued"),
    "refused": stored("agentsRefused"),
    "invalid": stored("agentsInvalid"),
    "lane": stored("agentsLane"),
}
WEB_TALLIES = (*WEB_REFUSALS, *AGENT_COUNTS.values())


@dataclass(frozen=True)
class Sample:
    """One stored sample: the moment's gauges, cumulative counters and wait histogram."""

    at_ms: int
    status: int
    gauges: tuple[int, ...]  # GAUGES
    counters: tuple[int, ...]  # COUNTERS
    waits: tuple[int, ...]  # WAIT_BUCKETS, cumulative counts per bucket
    net: int = 0  # the safety net's state (NET_STATES; 0: none)
    # spots that left before their turn, cumulative per WAIT_BUCKETS bucket of how long they had
    # waited (zeros in samples older than this count)
    abandoned: tuple[int, ...] = (0,) * len(WAIT_BUCKETS)
    later: tuple[int, ...] = (0,) * len(LATER_COUNTERS)  # LATER_COUNTERS (zeros when older)

    @classmethod
    def parse(cls, member: str) -> Sample:
        """A sorted-set member back into a sample."""
        parts = [int(float(x)) for x in member.split(":")]
        g, c = 2 + len(GAUGES), 2 + len(GAUGES) + len(COUNTERS)
        w = c + len(WAIT_BUCKETS)
        net = parts[w] if len(parts) > w else 0
        a = w + 1 + len(WAIT_BUCKETS)
        left = tuple(parts[w + 1 : a])
        if len(left) != len(WAIT_BUCKETS):
            left = (0,) * len(WAIT_BUCKETS)
        later = tuple(parts[a : a + len(LATER_COUNTERS)])
        later += (0,) * (len(LATER_COUNTERS) - len(later))
        g_, c_, w_ = tuple(parts[2:g]), tuple(parts[g:c]), tuple(parts[c:w])
        return cls(parts[0], parts[1], g_, c_, w_, net, left, later)


def quantile(histogram: Sequence[int], q: float) -> float | None:
    """The ``q`` quantile (seconds) of a bucketed histogram, interpolated inside its bucket.

    None when the histogram is empty; in the last (unbounded) bucket its lower bound.
    """
    total = sum(histogram)
    if total <= 0:
        return None
    rank = q * total
    seen, lower = 0, 0.0
    for bound, count in zip(WAIT_BUCKETS, histogram, strict=True):
        if count and seen + count >= rank:
            if bound == "inf":
                return lower
            upper = float(bound)
            return round(lower + (upper - lower) * (rank - seen) / count, 3)
        seen += count
        lower = float(bound) if bound != "inf" else lower
    return lower


def _increase(previous: Sequence[int], current: Sequence[int]) -> list[int]:
    """Per-field increase of cumulative counts; a drop is a reset (a close), counted from 0."""
    return [c - p if c >= p else c for p, c in zip(previous, current, strict=True)]


@dataclass(frozen=True)
class SeriesWindow:
    """What :func:`aggregate` makes of the samples: one row per step, column-wise."""

    times: list[int]
    status: list[int | None]
    gauges: dict[str, list[int | None]]
    counters: dict[str, list[int | None]]
    waits: list[list[int] | None]
    quantiles: dict[str, list[float | None]]
    safety_net: list[str | None]  # its state at the window's last sample (None: none, no sample)
    abandoned: list[list[int] | None]  # left before their turn, per bucket of their wait


def aggregate(samples: Sequence[Sample], from_ms: int, to_ms: int, step_ms: int) -> SeriesWindow:
    """Samples (sorted, the first may precede ``from_ms``) → one row per ``step_ms`` window.

    A window's gauges are its last sample's; its counters and histogram are the increase over
    the window (from the sample before it). A window with no sample is null throughout.
    """
    starts = list(range(from_ms - from_ms % step_ms, to_ms, step_ms))
    index = {t: i for i, t in enumerate(starts)}
    n = len(starts)
    status: list[int | None] = [None] * n
    gauges: dict[str, list[int | None]] = {g: [None] * n for g in GAUGES}
    names = [*COUNTERS.values(), *LATER_COUNTERS.values()]
    counters: dict[str, list[int | None]] = {c: [None] * n for c in names}
    waits: list[list[int] | None] = [None] * n
    left: list[list[int] | None] = [None] * n
    net: list[str | None] = [None] * n
    previous: Sample | None = None
    for sample in samples:
        slot = sample.at_ms - sample.at_ms % step_ms
        i = index.get(slot)
        if i is not None:
            status[i] = sample.status
            net[i] = NET_STATES.get(sample.net)
            for name, value in zip(GAUGES, sample.gauges, strict=True):
                gauges[name][i] = value
            if previous is not None:
                more = _increase(
                    (*previous.counters, *previous.later), (*sample.counters, *sample.later)
                )
                for name, value in zip(names, more, strict=True):
                    counters[name][i] = (counters[name][i] or 0) + value
                waits[i] = _added(waits[i], _increase(previous.waits, sample.waits))
                left[i] = _added(left[i], _increase(previous.abandoned, sample.abandoned))
            else:
                for name in names:
                    counters[name][i] = counters[name][i] or 0
        previous = sample
    quantiles = {
        f"waitP{int(q * 100)}": [None if h is None else quantile(h, q) for h in waits]
        for q in (0.5, 0.9, 0.99)
    }
    return SeriesWindow(starts, status, gauges, counters, waits, quantiles, net, left)


def _added(so_far: list[int] | None, more: list[int]) -> list[int]:
    """A window's histogram with one more sample's increase added."""
    return [a + b for a, b in zip(so_far or [0] * len(more), more, strict=True)]


class RoomSeries:
    """Writes and reads the series of rooms on one Redis under one key prefix."""

    def __init__(self, client: redis.Redis, keys: KeySpace) -> None:
        self.redis = client
        self.keys = keys
        self._sample = scripts.register_standalone(client, "sample_series")
        self._count = scripts.register_standalone(client, "count_refusals")
        self._args = [FINE_MS, COARSE_MS, FINE_KEEP_MS, COARSE_KEEP_MS, *COUNTERS, "|"]
        self._args += [*WAIT_BUCKETS, "|", *ABANDON_FIELDS, "|", *LATER_COUNTERS]
        self._tallies: dict[str, dict[str, int]] = {}
        self._tally_lock = threading.Lock()

    def sample(self, room_id: str) -> tuple[bool, int | None]:
        """Sample ``room_id`` now unless its slot is taken: (written, ms until the next slot).

        One script call; ``(False, None)`` for a room that no longer exists.
        """
        with storage_errors():
            reply = self._sample(keys=[self.keys.room_base(room_id)], args=self._args)
        if int(reply[0]) < 0:
            return False, None
        return bool(int(reply[0])), int(reply[1])

    def tally(self, room_id: str, field: str) -> None:
        """Count what the web tier decided (``WEB_TALLIES``: its refusals, signed agents'
        arrivals), in memory for now.

        Nothing is sent on the refusal's path (a flood of them must not become a flood of
        writes, and a Busy Redis refuses writes anyway): :meth:`flush_tallies` adds them up.
        """
        if field not in WEB_TALLIES:
            raise ValueError(f"not a web-tier counter: {field}")
        with self._tally_lock:
            counts = self._tallies.setdefault(room_id, {})
            counts[field] = counts.get(field, 0) + 1

    def flush_tallies(self) -> None:
        """Add the tallied refusals to their rooms' counters (a call per room); kept on failure."""
        with self._tally_lock:
            pending, self._tallies = self._tallies, {}
        for room_id, counts in pending.items():
            args = [x for pair in counts.items() for x in pair]
            try:
                with storage_errors():
                    self._count(keys=[self.keys.room(room_id)], args=args)
            except Exception:
                with self._tally_lock:
                    again = self._tallies.setdefault(room_id, {})
                    for field, n in counts.items():
                        again[field] = again.get(field, 0) + n
                raise

    def now_ms(self, room_id: str) -> int:
        """The room's clock (Redis TIME plus its test offset), as the engine reads it."""
        return self.clock(room_id)[0]

    def clock(self, room_id: str) -> tuple[int, int]:
        """``(the room's clock, Redis TIME)`` read at one instant, in ms: the two differ only
        in a room whose clock was moved or pinned (tests, rehearsals)."""
        with storage_errors():
            pipe = self.redis.pipeline(transaction=False)
            pipe.hmget(self.keys.room(room_id), stored("clockOffset"), stored("pinnedClock"))
            pipe.time()
            (clk, fix), (sec, usec) = pipe.execute()
        offset, pinned = int(clk or 0), int(fix or 0)
        real = sec * 1000 + usec // 1000
        return (pinned + offset if pinned > 0 else real + offset), real

    def samples(self, room_id: str, from_ms: int, to_ms: int, coarse: bool) -> list[Sample]:
        """Stored samples in [from_ms, to_ms), plus the one before (for the first increase)."""
        key = self.keys.room_base(room_id) + ("s60" if coarse else "s10")
        with storage_errors():
            pipe = self.redis.pipeline(transaction=False)
            pipe.zrevrangebyscore(key, f"({from_ms}", "-inf", start=0, num=1)
            pipe.zrangebyscore(key, from_ms, f"({to_ms}")
            before, inside = pipe.execute()
        return [Sample.parse(m) for m in (*before, *inside)]


def held_by_score(client: redis.Redis, keys: KeySpace, room_id: str) -> dict[int, int]:
    """Held spots per score (the engine keeps one sorted set per held score, listed in ``bks``).

    Raising ``holdScore`` to N releases every held spot scoring below N.
    """
    base = keys.room_base(room_id)
    with storage_errors():
        scores = sorted(int(x) for x in client.smembers(base + "bks"))
        pipe = client.pipeline(transaction=False)
        for score in scores:
            pipe.zcard(f"{base}b:{score}")
        counts = pipe.execute()
    return {score: int(n) for score, n in zip(scores, counts, strict=True) if int(n)}
