"""An opening's numbers for its public fairness report (docs/draw.md).

Read from what the service records, never from visitors' data:

- the room hash's opening counts (room_hash.py; kept by the scripts): admissions from the
  pre-queue and later, later arrivals admitted out of arrival order, spots held and released,
  the longest pause on the room's clock (a pause still going counts up to now);
- the wait histogram (``waits``, bucketed: the quantiles are interpolated inside a bucket), less
  what it held before the opening, as the newest series sample before ``opensAt`` tells (the
  histogram outlives a close);
- the series (room_series.py) for the most admissions dealt in any clock minute;
- the spots that left before their turn (the ``a<bound>`` fields of ``waits``), less what the
  sample before the opening held, as for the wait histogram.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.queue.line.room_engine import WAIT_BUCKETS, Engine
from anteroom.queue.rooms.room_hash import stored
from anteroom.queue.series.room_series import COARSE_MS, RoomSeries, aggregate, quantile

COUNTS = (
    "admittedFromPreQueue",
    "admittedLater",
    "outOfOrder",
    "heldCount",
    "releasedCount",
    "pausedAt",
    "longestPause",
)


@dataclass(frozen=True)
class OpeningFigures:
    """What one opening dealt, as its fairness report states it."""

    admitted_from_pre_queue: int
    admitted_later: int
    out_of_order: int
    wait_seconds: dict[str, float | None]  # p50, p90, p99; None with nobody admitted
    held: int
    released: int
    longest_pause_sec: float
    rate_per_minute: int
    most_dealt_in_minute: int | None  # None before any minute was sampled
    left_before_turn: int = 0


def _counts(engine: Engine, room_id: str) -> dict[str, int]:
    with storage_errors():
        values = engine.redis.hmget(engine.keys.room(room_id), [stored(n) for n in COUNTS])
    return {name: int(float(v or 0)) for name, v in zip(COUNTS, values, strict=True)}


def _opening_waits(
    engine: Engine, series: RoomSeries, room_id: str, opens_at: int
) -> tuple[list[int], int]:
    """The wait histogram's counts since ``opens_at`` and the spots that left before their turn
    since then: now less the sample before it."""
    now = engine.waits(room_id)
    current = [now[bound] for bound in WAIT_BUCKETS]
    left = sum(engine.departures_of([room_id])[0][0])
    before = series.samples(room_id, opens_at, opens_at, coarse=False)
    before = before or series.samples(room_id, opens_at, opens_at, coarse=True)
    if not before:
        return current, left
    # A close restarts nothing in the histogram, so a drop means it was deleted: start from 0.
    waits = [c - p if c >= p else c for p, c in zip(before[-1].waits, current, strict=True)]
    left_before = sum(before[-1].abandoned)
    return waits, left - left_before if left >= left_before else left


def _most_in_a_minute(series: RoomSeries, room_id: str, opens_at: int, now: int) -> int | None:
    """The most admissions dealt in one clock minute since ``opens_at`` (10 s samples, kept a
    day; minute samples beyond)."""
    if now <= opens_at:
        return None
    samples = series.samples(room_id, opens_at, now + 1, coarse=False)
    if len(samples) < 2:
        samples = series.samples(room_id, opens_at, now + 1, coarse=True)
    window = aggregate(samples, opens_at, now + 1, COARSE_MS)
    dealt = [n for n in window.counters["admitted"] if n is not None]
    return max(dealt) if dealt else None


def opening_figures(engine: Engine, series: RoomSeries, room: dict[str, Any]) -> OpeningFigures:
    """The figures of ``room``'s current (or, once closed, last) opening."""
    room_id = room["id"]
    counts = _counts(engine, room_id)
    now = series.now_ms(room_id)
    pause_ms = counts["longestPause"]
    if room["status"] == "paused" and counts["pausedAt"] > 0:
        pause_ms = max(pause_ms, now - counts["pausedAt"])
    # A close sets opensAt back to 0: the closed opening's waits and minutes are not told apart
    # from the room's life any more, so the report leaves them out.
    opens_at = int(room.get("opensAt") or 0)
    waits, left = _opening_waits(engine, series, room_id, opens_at) if opens_at else ([], 0)
    most = _most_in_a_minute(series, room_id, opens_at, now) if opens_at else None
    return OpeningFigures(
        admitted_from_pre_queue=counts["admittedFromPreQueue"],
        admitted_later=counts["admittedLater"],
        out_of_order=counts["outOfOrder"],
        wait_seconds={
            f"p{int(q * 100)}": quantile(waits, q) if waits else None for q in (0.5, 0.9, 0.99)
        },
        held=counts["heldCount"],
        released=counts["releasedCount"],
        longest_pause_sec=round(pause_ms / 1000, 3),
        rate_per_minute=int(room["ratePerMinute"]),
        most_dealt_in_minute=most,
        left_before_turn=left,
    )
