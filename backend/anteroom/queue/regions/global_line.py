"""The global line's arithmetic: a round of the coordinator, as pure functions.

Every region reports a :class:`Summary` of its part of a room's line; the coordinator turns the
summaries into one :class:`Lease` per region. Pure (no I/O, times passed in), so the bounds
below are tested on their own (tests/unit/test_global_line.py).

The budget is a bank held by the coordinator: ``allowed`` grows at the room's rate and is the
most all regions together may have admitted (``admitted`` = the sum of their reported counts);
it never runs more than one interval's admissions ahead of them, so a quiet spell earns no
burst. The round's budget is ``allowed - admitted``, within the capacity left (the room's
capacity less the active sessions the regions report). A region's lease names a *ceiling* on
its own admission counter (its reported count plus its share), not a count to spend: a lease
that replaces an unused one adds nothing to it, so leases never stack.

The watermark: the waiting of all regions, merged by arrival time in buckets of
``BUCKET_MS``, are taken oldest first until the budget is spent; each region's share is the
number of its own waiting taken, the watermark the end of the last bucket taken. A bucket only
partly taken is split among its regions by largest remainder, so two regions' visitors may be
admitted out of arrival order by at most one bucket plus the clocks' skew and one interval (a
region admits its share over the interval, at the room's pace).

Capacity: all leases of one round together grant at most the capacity left when the summaries
were taken (each summary's active count and admission count are read in one script, so an
admission is counted in one or the other). Regions hold leases of at most two rounds at once
(a round's lease may reach one region before the previous round's reaches another), so active
sessions exceed the capacity by at most one round's grants: the stated bound, one interval's
admissions at the room's rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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

    allowed: float = -1.0  # the most all regions may have admitted; < 0: not started
    at_ms: int = 0  # when ``allowed`` was last grown


@dataclass(frozen=True)
class Round:
    """One round's outcome."""

    budget: int
    watermark: int
    leases: dict[str, Lease] = field(default_factory=dict)


def room_terms(summaries: Sequence[Summary]) -> tuple[int, int]:
    """The rate and capacity to coordinate by: the least any region has (a change reaches the
    regions one by one; until all have it, the stricter setting holds)."""
    rate = min(s.rate for s in summaries)
    caps = [s.capacity for s in summaries if s.capacity > 0]
    return rate, (min(caps) if caps else 0)


def grow_allowed(state: CoordinatorState, admitted: int, rate: int, now_ms: int) -> float:
    """Grow the bank at ``rate`` a minute since the last round, at most one interval's
    admissions (and at least one) ahead of what the regions have admitted."""
    if state.allowed < 0 or state.at_ms <= 0:
        state.allowed, state.at_ms = float(admitted), now_ms
    elapsed = max(0, now_ms - state.at_ms)
    burst = max(1.0, rate * INTERVAL_MS / 60_000)
    state.allowed = min(state.allowed + rate * elapsed / 60_000, admitted + burst)
    state.at_ms = now_ms
    return state.allowed


def split_by_arrival(
    summaries: Sequence[Summary], budget: int
) -> tuple[dict[str, int], int | None]:
    """Each region's share of ``budget`` taken oldest arrival first, and the watermark (the end
    of the last bucket taken; None when nothing waits)."""
    by_start: dict[int, dict[str, int]] = {}
    for s in summaries:
        for start, n in s.buckets:
            if n > 0:
                by_start.setdefault(start, {})[s.region] = n
    shares = {s.region: 0 for s in summaries}
    if not by_start:
        return shares, None
    left, watermark = budget, None
    for start in sorted(by_start):
        counts = by_start[start]
        total = sum(counts.values())
        if left <= 0:
            break
        watermark = start + BUCKET_MS - 1
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
) -> Round:
    """One round: the budget, its split by arrival and each region's lease."""
    if not summaries:
        return Round(0, 0)
    rate, capacity = room_terms(summaries)
    admitted = sum(s.admitted for s in summaries)
    allowed = grow_allowed(state, admitted, rate, now_ms)
    budget = max(0, math.floor(allowed - admitted))
    if capacity > 0:
        budget = min(budget, max(0, capacity - sum(s.active for s in summaries)))
    shares, watermark = split_by_arrival(summaries, budget)
    if watermark is None:
        watermark = min(s.at_ms for s in summaries)
    leases = {
        s.region: Lease(
            region=s.region,
            epoch=epoch,
            ceiling=s.admitted + shares[s.region],
            watermark=watermark,
            expires_ms=now_ms + lease_ms,
            share=shares[s.region],
        )
        for s in summaries
    }
    return Round(budget, watermark, leases)


def global_position(
    summaries: Mapping[str, Summary], region: str, local_position: int, arrival_ms: int
) -> int:
    """A visitor's place in the global line: its place in its own region's line plus, in every
    other region, those who arrived before it (from their latest summaries). Off by at most one
    bucket's arrivals in each other region, plus what they admitted since their report."""
    others = sum(s.arrived_before(arrival_ms) for r, s in summaries.items() if r != region)
    return local_position + others
