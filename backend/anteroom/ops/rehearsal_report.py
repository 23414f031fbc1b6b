"""What a rush rehearsal saw, and the figures its report gives (no Locust, no network here).

:class:`Tally` collects each simulated visitor's journey as ``anteroom rehearse`` runs it;
:func:`report` turns it into the JSON report: admissions per minute against the room's rate,
order inversions, one-spot-per-visitor violations, poll latency, error answers by code and the
wait-time distribution.
"""

from __future__ import annotations

import base64
import bisect
import json
import math
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Wait-time histogram: upper bounds in seconds (the last bucket is open).
WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600)


@dataclass
class Journey:
    """One simulated visitor: what it was told, when (load-generator clock, seconds)."""

    entered_at: float = 0.0
    ticket: int | None = None
    generation: int = 0  # the room's opening its spot belongs to (a close starts a new one)
    admitted_at: float | None = None
    dealt_at: int | None = None  # the admission's ``iat`` (Redis clock, whole seconds)
    admission: str | None = None  # the admission's ``jti``
    lost: str | None = None  # why it stopped short of an admission
    reentries: int = 0  # times its spot was gone and it entered again


@dataclass
class Tally:
    """Shared by every simulated visitor of one rehearsal (greenlets or threads)."""

    journeys: list[Journey] = field(default_factory=list)
    poll_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    requests: Counter[str] = field(default_factory=Counter)
    violations: Counter[str] = field(default_factory=Counter)
    recoveries: Counter[str] = field(default_factory=Counter)
    resends: int = 0  # requests sent again on a fresh connection (rehearse.STALE_CONNECTION)
    difficulty: int | None = None
    solve_sec: float = 0.0
    finished: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def new_journey(self) -> Journey:
        journey = Journey()
        with self.lock:
            self.journeys.append(journey)
        return journey

    def error(self, status: int, body: Any) -> None:
        """Count an error answer as ``"<status> <error code>"``; status 0 is no answer at all,
        named by the transport's exception (``"0 ConnectionResetError"``)."""
        code = body.get("error") if isinstance(body, dict) else None
        name = str(code or ("connection" if status == 0 else "(no JSON error)"))
        with self.lock:
            self.errors[f"{status} {name}"] += 1

    def violation(self, kind: str) -> None:
        with self.lock:
            self.violations[kind] += 1

    def resend(self) -> None:
        """Count a request sent again because its kept-alive connection had been closed."""
        with self.lock:
            self.resends += 1

    def recovery(self, kind: str) -> None:
        """Count a visitor starting a step over, as the browser agent would."""
        with self.lock:
            self.recoveries[kind] += 1

    def finish(self) -> int:
        """Mark one visitor's journey over; returns how many are."""
        with self.lock:
            self.finished += 1
            return self.finished


def token_claims(token: str) -> dict[str, Any]:
    """The claims of a token (``ab1`` admission, ``qt1`` ticket), read without verifying: the
    site verifies; the rehearsal only needs when an admission was dealt, its id, and which
    opening of the room a ticket belongs to."""
    payload = token.split(".")[2]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return claims if isinstance(claims, dict) else {}


def percentiles(values: list[float], points: tuple[int, ...] = (50, 95, 99)) -> dict[str, Any]:
    """Nearest-rank percentiles of ``values`` (None when there are none), with max and count."""
    ordered = sorted(values)
    out: dict[str, Any] = {"count": len(ordered)}
    for p in points:
        rank = max(1, math.ceil(p / 100 * len(ordered)))
        out[f"p{p}"] = round(ordered[rank - 1], 2) if ordered else None
    out["max"] = round(ordered[-1], 2) if ordered else None
    return out


def order_inversions(dealt: list[tuple[tuple[int, int], int]]) -> int:
    """Pairs ((generation, ticket), second dealt) where a later spot was dealt in an earlier
    second.

    Tickets queue strictly in order after opening (docs/queue.md, invariant 3), and a closed room's
    spots are all gone before the next opening's, so any such pair is an inversion. Seconds
    are the admissions' ``iat``: two deals within one second cannot be told apart, so this
    counts inversions at one-second resolution.
    """
    inversions = 0
    seen: list[int] = []  # seconds of the tickets behind, sorted
    for _ticket, second in sorted(dealt, reverse=True):
        # Tickets behind this one (seen already) dealt in an earlier second than it.
        inversions += bisect.bisect_left(seen, second)
        bisect.insort(seen, second)
    return inversions


def rate_excess(seconds: list[int], rate_per_minute: int) -> int:
    """The most any run of whole seconds dealt beyond the rate allows (0: the rate held).

    Over an interval of length T a room deals at most floor(rate * T / 60) + ceil(rate / 60)
    (docs/queue.md, invariant 2). Admissions stamped in seconds s..s+k were dealt within k + 1
    seconds.
    """
    if not seconds:
        return 0
    counts = Counter(seconds)
    first, last = min(counts), max(counts)
    per_second = [counts.get(s, 0) for s in range(first, last + 1)]
    burst = math.ceil(rate_per_minute / 60)
    worst = 0
    for start in range(len(per_second)):
        total = 0
        for k in range(start, len(per_second)):
            total += per_second[k]
            allowed = (rate_per_minute * (k - start + 1)) // 60 + burst
            worst = max(worst, total - allowed)
    return worst


def wait_histogram(waits: list[float]) -> dict[str, int]:
    """How many waited up to each bound (``"<=5s"``), and beyond the last."""
    out = {f"<={b}s": 0 for b in WAIT_BUCKETS} | {f">{WAIT_BUCKETS[-1]}s": 0}
    for wait in waits:
        bound = next((b for b in WAIT_BUCKETS if wait <= b), None)
        out[f"<={bound}s" if bound else f">{WAIT_BUCKETS[-1]}s"] += 1
    return out


def report(tally: Tally, setup: dict[str, Any], room: dict[str, Any] | None) -> dict[str, Any]:
    """The rehearsal's figures; ``room`` is its configuration when the operator's key could
    read it (``ratePerMinute``, ``capacity``, and ``dealtDuring``: admissions the room dealt
    during the rehearsal, by its own count)."""
    journeys = list(tally.journeys)
    admitted = [j for j in journeys if j.dealt_at is not None]
    seconds = [j.dealt_at for j in admitted if j.dealt_at is not None]
    violations = Counter(tally.violations)
    tickets = Counter((j.generation, j.ticket) for j in journeys if j.ticket is not None)
    violations["ticket shared by two visitors"] += sum(n - 1 for n in tickets.values() if n > 1)
    admissions = Counter(j.admission for j in admitted)
    violations["admission dealt twice"] += sum(n - 1 for n in admissions.values() if n > 1)
    rate = room.get("ratePerMinute") if room else setup.get("rate")
    dealt_during = room.get("dealtDuring") if room else None
    generations = {j.generation for j in journeys if j.ticket is not None}
    if len(generations) > 1:
        dealt_during = None  # the room was closed meanwhile: its count started again at 0
    if dealt_during is not None and dealt_during < len(admitted):
        # Visitors saw more admissions than the room dealt: one spot answered for two.
        violations["room dealt fewer than visitors admitted"] += len(admitted) - dealt_during
    span = (max(seconds) - min(seconds) + 1) if seconds else 0
    achieved = round(len(admitted) * 60 / span, 1) if span else None
    per_second = setup.get("arrivals_per_second")
    arrivals = round(per_second * 60, 1) if per_second else None
    waits = [j.admitted_at - j.entered_at for j in admitted if j.admitted_at is not None]
    lost = Counter(j.lost for j in journeys if j.lost)
    figures: dict[str, Any] = {
        "setup": setup,
        "room": room,
        "visitors": {
            "started": len(journeys),
            "admitted": len(admitted),
            "not_admitted": len(journeys) - len(admitted),
            "lost_by_reason": dict(lost),
            # Admissions the room dealt meanwhile to others than the rehearsal's visitors.
            "room_openings_seen": len(generations),
            "room_dealt_to_others": (
                dealt_during - len(admitted) if dealt_during is not None else None
            ),
        },
        "admissions_per_minute": {
            "achieved": achieved,
            "room_rate": rate,
            "ratio": round(achieved / rate, 3) if achieved and rate else None,
            "arrivals_per_minute": arrivals,
            "bound_by": bound_by(arrivals, rate),
            "over_seconds": span,
            "rate_excess": rate_excess(seconds, int(rate)) if rate else None,
        },
        "order_inversions": order_inversions(
            [
                ((j.generation, j.ticket), j.dealt_at)
                for j in admitted
                if j.ticket is not None and j.dealt_at is not None
            ]
        ),
        "one_spot_violations": sum(violations.values()),
        "violations_by_kind": {k: v for k, v in violations.items() if v},
        # Spots that were gone when polled (a failover's lost writes, or abandonment) and
        # sessions earned twice: what the visitors had to start over.
        "recoveries_by_kind": dict(tally.recoveries),
        "poll_latency_ms": percentiles(tally.poll_ms),
        "requests": dict(tally.requests),
        "errors_by_code": dict(tally.errors),
        "stale_connection_resends": tally.resends,
        "wait_seconds": percentiles(waits, (50, 90, 99)) | {"histogram": wait_histogram(waits)},
        "pow": {"difficulty": tally.difficulty, "solve_seconds_total": round(tally.solve_sec, 2)},
    }
    return figures


def bound_by(arrivals_per_minute: float | None, rate: float | None) -> str | None:
    """What limited admissions: ``"arrivals"`` when visitors came slower than the room deals
    (the room could not admit who had not come), else ``"room rate"``; None if unknown."""
    if not rate:
        return None
    if arrivals_per_minute is not None and arrivals_per_minute < rate:
        return "arrivals"
    return "room rate"


def bound_text(a: dict[str, Any]) -> str:
    """The limit that bound admissions, in words: "200.0 achieved" is no shortfall when only
    200 a minute arrived."""
    if a.get("bound_by") == "arrivals":
        return (
            f"bound by the arrivals ({a['arrivals_per_minute']} a minute, "
            f"under the room rate {a['room_rate']})"
        )
    if a.get("bound_by") == "room rate":
        arrivals = a["arrivals_per_minute"]
        return f"bound by the room rate {a['room_rate']} (arrivals {arrivals} a minute)"
    return f"room rate {a['room_rate']}"


def summary(figures: dict[str, Any], path: str) -> str:
    """The report in a few lines for the terminal."""
    v, a = figures["visitors"], figures["admissions_per_minute"]
    lat, wait = figures["poll_latency_ms"], figures["wait_seconds"]
    lines = [
        f"visitors: {v['started']} arrived, {v['admitted']} admitted, "
        f"{v['not_admitted']} not ({v['lost_by_reason'] or 'none lost'})",
        f"admissions a minute: {a['achieved']} achieved, {bound_text(a)}; "
        f"beyond the rate at worst: {a['rate_excess']}",
        f"order inversions: {figures['order_inversions']}; "
        f"one-spot violations: {figures['one_spot_violations']}"
        + (f" {figures['violations_by_kind']}" if figures.get("violations_by_kind") else ""),
        f"poll latency ms: p50 {lat['p50']} p95 {lat['p95']} p99 {lat['p99']} ({lat['count']})",
        f"wait s: p50 {wait['p50']} p90 {wait['p90']} p99 {wait['p99']} max {wait['max']}",
        f"errors: {figures['errors_by_code'] or 'none'}"
        + f"; resent on a fresh connection: {figures.get('stale_connection_resends', 0)}",
        f"started over: {figures['recoveries_by_kind'] or 'nobody'}",
        f"report: {path}",
    ]
    return "\n".join(lines)
