"""The global line's arithmetic: a round of the coordinator, as pure functions.

Every region reports a :class:`Summary` of its part of a room's line; the coordinator turns the
summaries into one :class:`Lease` per region. Pure (no I/O, times passed in), so the bounds
below are tested on their own (tests/unit/test_global_line.py).

The budget is a bank held by the coordinator: its ``headroom`` grows at the room's rate and is
spent by granting; what a round leaves unspent is kept up to one interval's admissions (a
quiet spell earns no burst, a round that came late grants all it earned). A region's lease
names a *ceiling* on its own admission counter, not a count to spend: its count reported, plus
what is in flight (grants of earlier rounds not yet dealt, at most its waiting: they are its
oldest waiting, granted already), plus its new share. A lease replacing another carries the
grants in flight instead of adding to them, so leases never stack, and a lease that arrives
late loses nothing. Grants whose visitors left before their turn come back to the headroom.
The round's budget is the headroom, within the capacity left (the room's capacity less the
active sessions the regions report and the grants in flight).

The watermark: the waiting of all regions, merged by arrival time in buckets of
``BUCKET_MS``, are taken oldest first until the budget is spent or the oldest report's time
is reached (who arrived later is not known in every region yet); each region's share is the
number of its own waiting taken, the watermark the end of the last bucket taken. A bucket only
partly taken is split among its regions by largest remainder, so two regions' visitors may be
admitted out of arrival order by at most one bucket plus the clocks' skew and one interval (a
region admits its share over the interval, at the room's pace).

Capacity: all leases of one round together grant at most the capacity left when the summaries
were taken (each summary's active count and admission count are read in one script, so an
admission is counted in one or the other, and the grants in flight are set aside). A region
may still hold the previous round's lease when another holds the new one, and sessions that
end between a report and the round are counted as active, so the overshoot is bounded by one
round's grants: the stated bound, one interval's admissions at the room's rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# 100 ms: a tenth of the interval, so the order a bucket cannot tell apart (its width) is small
# beside the interval's own (a region admits its share over a second); finer buckets would
# only lengthen the summaries (a second of arrivals is ten buckets).
BUCKET_MS = 100
INTERVAL_MS = 1_000
# A lease lasts three intervals: one lost report or lease costs nothing, a lost coordinator
# stops the regions (or hands them to their fallback) within three seconds.
LEASE_MS = 3 * INTERVAL_MS


@dataclass(frozen=True)
class Summary:
    """One region's report of a room's line, read in one script of its Redis."""

    region: str
    at_ms: int  # the region's room clock when read
    admitted: int  # its admission counter (the opening's dealt)
    active: int  # active sessions there
    waiting: int  # spots waiting in its line
    buckets: tuple[tuple[int, int], ...]  # (bucket start ms, waiting that arrived in it)
    rate: int  # the room's rate per minute, as that region has it
    capacity: int  # and its capacity (0: no bound)
    # beyond the head's buckets: (rank in its line, arrival ms) samples, for positions
    tail: tuple[tuple[int, int], ...] = ()

    def arrived_before(self, arrival_ms: int) -> int:
        """How many of this region's waiting arrived before ``arrival_ms`` (from its buckets
        and, beyond them, its samples: the count at the last sample at or before it)."""
        count = 0
        for start, n in self.buckets:
            if start + BUCKET_MS <= arrival_ms:
                count += n
            elif start < arrival_ms:
                # part of a bucket: its arrivals are spread over it
                count += n * (arrival_ms - start) // BUCKET_MS
        for rank, since in self.tail:
            if since < arrival_ms:
                count = max(count, rank)
        return count


@dataclass(frozen=True)
class Lease:
    """What one region may admit until ``expires_ms`` (coordinator wall clock)."""

    region: str
    epoch: int
    ceiling: int  # its admission counter may reach this, no further
    watermark: int  # it admits only those who arrived at or before this (ms)
    expires_ms: int
    share: int  # the part of this round's budget it got (for reports)


@dataclass
class CoordinatorState:
    """What the coordinator keeps between rounds (in etcd, so a new leader goes on)."""

    headroom: float = 0.0  # admissions earned at the rate and not yet granted
    at_ms: int = 0  # when it was last grown (0: never)
    granted: dict[str, int] = field(default_factory=dict)  # each region's ceiling last granted

    def to_json(self) -> dict[str, object]:
        """For etcd."""
        return {"headroom": self.headroom, "at": self.at_ms, "granted": self.granted}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CoordinatorState:
        """From etcd (what :meth:`to_json` wrote)."""
        granted = data.get("granted") or {}
        return cls(
            headroom=float(data.get("headroom", 0.0)),
            at_ms=int(data.get("at", 0)),
            granted={str(k): int(v) for k, v in dict(granted).items()},
        )


@dataclass(frozen=True)
class Round:
    """One round's outcome."""

    budget: int
    watermark: int
    leases: dict[str, Lease] = field(default_factory=dict)
    in_flight: int = 0  # grants of earlier rounds not yet dealt (kept in the new ceilings)


def room_terms(summaries: Sequence[Summary]) -> tuple[int, int]:
    """The rate and capacity to coordinate by: the least any region has (a change reaches the
    regions one by one; until all have it, the stricter setting holds)."""
    rate = min(s.rate for s in summaries)
    caps = [s.capacity for s in summaries if s.capacity > 0]
    return rate, (min(caps) if caps else 0)


def in_flight(state: CoordinatorState, summaries: Sequence[Summary]) -> tuple[dict[str, int], int]:
    """Each region's grants still to deal (its last ceiling less its count, at most its
    waiting: those are its oldest waiting, already granted), and the grants given back (a
    region whose waiting left before their turn)."""
    covered, returned = {}, 0
    for s in summaries:
        granted = state.granted.get(s.region)
        out = max(0, granted - s.admitted) if granted is not None else 0
        covered[s.region] = min(out, s.waiting)
        returned += out - covered[s.region]
    return covered, returned


def split_by_arrival(
    summaries: Sequence[Summary],
    budget: int,
    covered: Mapping[str, int] | None = None,
    horizon: int | None = None,
) -> tuple[dict[str, int], int | None]:
    """Each region's share of ``budget`` taken oldest arrival first, and the watermark (the end
    of the last bucket taken; None when nothing is). ``covered``: each region's oldest waiting
    already granted in earlier rounds, taken again at no cost to the budget. ``horizon``: no
    bucket from then on is taken (the oldest report's time: who arrived later is not known in
    every region yet, and granting them would pass over those not reported)."""
    free = dict(covered or {})
    by_start: dict[int, dict[str, int]] = {}
    free_at: set[int] = set()
    for s in summaries:
        for start, n in s.buckets:
            skip = min(n, free.get(s.region, 0))
            if skip:
                free[s.region] -= skip
                free_at.add(start)
            if n - skip > 0:
                by_start.setdefault(start, {})[s.region] = n - skip
    shares = {s.region: 0 for s in summaries}
    watermark = max(free_at) + BUCKET_MS - 1 if free_at else None
    left = budget
    for start in sorted(by_start):
        if left <= 0 or (horizon is not None and start >= horizon):
            break
        counts = by_start[start]
        total = sum(counts.values())
        watermark = max(watermark or 0, start + BUCKET_MS - 1)
        if total <= left:
            for region, n in counts.items():
                shares[region] += n
            left -= total
            continue
        # part of this bucket: split by largest remainder, in proportion to each one's count
        exact = {region: n * left / total for region, n in counts.items()}
        given = {region: math.floor(x) for region, x in exact.items()}
        rest = left - sum(given.values())
        for region in sorted(exact, key=lambda r: (given[r] - exact[r], r))[:rest]:
            given[region] += 1
        for region, n in given.items():
            shares[region] += n
        left = 0
    return shares, watermark


def plan_round(
    summaries: Sequence[Summary],
    state: CoordinatorState,
    epoch: int,
    now_ms: int,
    lease_ms: int = LEASE_MS,
    absent: Mapping[str, float] | None = None,
) -> Round:
    """One round: the budget, its split by arrival and each region's lease.

    ``absent``: regions whose summary is missing or stale, by their fallback share: each may be
    admitting that share of the rate and capacity on its own, so it is set aside (and its
    ceiling forgotten: on its return it starts from its count then)."""
    if not summaries:
        return Round(0, 0)
    rate, capacity = room_terms(summaries)
    aside = sum((absent or {}).values())
    own_rate = rate * max(0.0, 1.0 - aside)
    burst = max(1.0, own_rate * INTERVAL_MS / 60_000)
    elapsed = max(0, now_ms - state.at_ms) if state.at_ms else 0
    covered, returned = in_flight(state, summaries)
    # all of a long round's earnings may be granted; what is left unspent keeps one interval's
    headroom = state.headroom + returned + own_rate * elapsed / 60_000
    budget = max(0, math.floor(headroom))
    flying = sum(covered.values())
    if capacity > 0:
        left = capacity - sum(s.active for s in summaries) - flying - math.ceil(capacity * aside)
        budget = min(budget, max(0, left))
    horizon = min(s.at_ms for s in summaries)
    shares, watermark = split_by_arrival(summaries, budget, covered, horizon)
    if watermark is None:
        watermark = horizon
    state.headroom = min(headroom - sum(shares.values()), burst)
    state.at_ms = now_ms
    leases = {
        s.region: Lease(
            region=s.region,
            epoch=epoch,
            ceiling=s.admitted + covered[s.region] + shares[s.region],
            watermark=watermark,
            expires_ms=now_ms + lease_ms,
            share=shares[s.region],
        )
        for s in summaries
    }
    state.granted = {region: lease.ceiling for region, lease in leases.items()}
    return Round(budget, watermark, leases, flying)


def global_position(
    summaries: Mapping[str, Summary], region: str, local_position: int, arrival_ms: int
) -> int:
    """A visitor's place in the global line: its place in its own region's line plus, in every
    other region, those who arrived before it (from their latest summaries). Off by at most one
    bucket's arrivals in each other region, plus what they admitted since their report."""
    others = sum(s.arrived_before(arrival_ms) for r, s in summaries.items() if r != region)
    return local_position + others
