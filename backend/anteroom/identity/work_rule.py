"""How much proof of work a visitor pays: one pure function of risk, pressure and policy.

The rule (docs/visitor-api.md, "Proof of work, fitted", which has the table):

* **Risk** of the visitor, one of ``low``, ``medium``, ``high``:
  ``high`` when the signal score is at least 50, the visitor's network made more than
  ``BUSY_NETWORK_PER_MINUTE`` identifies in the last minute, or its address range was refused by
  this room (held; denied on the plain page) at least 3 times in the last day; ``medium`` when
  the score is at least 20, the network made more than 5 identifies, or the range was refused
  once; else ``low``.
* **Pressure** on the room, one of ``calm``, ``busy``, ``attack``:
  ``attack`` when the environment's identifies in the last minute reach the policy's
  ``attack_identifies_per_minute``, or at least half of at least 20 recent identifies failed;
  ``busy`` when the room's arrivals in the last minute exceed its ``ratePerMinute``; else ``calm``.
* The **work** of the tier ``<risk>-<pressure>`` is 2^bits expected hashes, from
  :data:`WORK_BITS`; under attack a high-risk visitor pays 64x a low-risk one.
* The **floor** is what a device measured as slow can be brought down to: 1/4 of the work for
  ``low``, 1/2 for ``medium``, nothing off for ``high`` (so lying about a slow device buys at
  most the floor, and high risk keeps all of its work).
* The operator's **policy** per environment pins the work (``pin``: 2^pin hashes for everyone)
  or bounds it (``min``/``max`` bits, applied to work and floor alike).

:func:`fit_to_device` then sizes the work to the device's measured hash rate (never below the
floor nor above the tier's work) and :func:`split` cuts it into puzzles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from anteroom.identity.signal_rules import BUSY_NETWORK_PER_MINUTE

__all__ = [
    "FIT_TARGET_SEC",
    "WORK_BITS",
    "Policy",
    "Pressure",
    "Risk",
    "Work",
    "fit_to_device",
    "pressure_class",
    "risk_class",
    "split",
    "split_range",
    "tail_factor",
    "work_for",
]

RISKS = ("low", "medium", "high")
PRESSURES = ("calm", "busy", "attack")
# log2 of the expected hashes of each tier.
WORK_BITS: dict[tuple[str, str], int] = {
    ("low", "calm"): 15,
    ("low", "busy"): 15,
    ("low", "attack"): 16,
    ("medium", "calm"): 17,
    ("medium", "busy"): 18,
    ("medium", "attack"): 19,
    ("high", "calm"): 20,
    ("high", "busy"): 21,
    ("high", "attack"): 22,
}
# How far (in bits) a slow device may bring the work below its tier's.
FLOOR_DISCOUNT_BITS = {"low": 2, "medium": 1, "high": 0}
HIGH_SCORE, MEDIUM_SCORE = 50, 20
MEDIUM_NETWORK_PER_MINUTE = 5
HIGH_RANGE_ABUSE, MEDIUM_RANGE_ABUSE = 3, 1
MIN_FAILURE_SAMPLE, ATTACK_FAILURE_RATIO = 20, 0.5
# A low-risk visitor's solve should stay under 1 s at p95: the fit aims below it, leaving room
# for the round trips and the workers' start.
FIT_TARGET_SEC = 0.6


@dataclass(frozen=True)
class Risk:
    """What is known of the visitor when it asks for a challenge."""

    score: int  # the signal rules' score of the request (0-100)
    network_identifies: int  # identifies from its network in the last minute
    range_abuse: int  # entries of its address range this room refused in the last day


@dataclass(frozen=True)
class Pressure:
    """What is known of the room and the environment when the challenge is asked for."""

    arrivals_per_minute: float = 0.0  # the room's entries over the last minute (0: unknown)
    rate_per_minute: int = 0  # the room's ratePerMinute (0: no room named)
    identifies_per_minute: int = 0  # the environment's, over the last minute
    identifies_seen: int = 0  # recent identifies this process checked …
    identifies_failed: int = 0  # … and how many of them failed


@dataclass(frozen=True)
class Policy:
    """The operator's say, per environment: a pin, or bounds, in bits of expected work."""

    pin: int | None = None
    min_bits: int = 0
    max_bits: int = 40
    attack_identifies_per_minute: int = 3000


@dataclass(frozen=True)
class Work:
    """The work a challenge asks: its tier, expected hashes and the floor a device fit keeps."""

    tier: str
    expected_hashes: int
    floor_hashes: int


def risk_class(risk: Risk) -> str:
    """``low``, ``medium`` or ``high`` (module docstring)."""
    if (
        risk.score >= HIGH_SCORE
        or risk.network_identifies > BUSY_NETWORK_PER_MINUTE
        or risk.range_abuse >= HIGH_RANGE_ABUSE
    ):
        return "high"
    if (
        risk.score >= MEDIUM_SCORE
        or risk.network_identifies > MEDIUM_NETWORK_PER_MINUTE
        or risk.range_abuse >= MEDIUM_RANGE_ABUSE
    ):
        return "medium"
    return "low"


def pressure_class(pressure: Pressure, policy: Policy) -> str:
    """``calm``, ``busy`` or ``attack`` (module docstring)."""
    failing = (
        pressure.identifies_seen >= MIN_FAILURE_SAMPLE
        and pressure.identifies_failed >= ATTACK_FAILURE_RATIO * pressure.identifies_seen
    )
    if pressure.identifies_per_minute >= policy.attack_identifies_per_minute or failing:
        return "attack"
    if pressure.rate_per_minute and pressure.arrivals_per_minute > pressure.rate_per_minute:
        return "busy"
    return "calm"


def work_for(risk: Risk, pressure: Pressure, policy: Policy) -> Work:
    """The work of a challenge for this risk under this pressure and policy."""
    if policy.pin is not None:
        return Work("pinned", 2**policy.pin, 2**policy.pin)
    risky = risk_class(risk)
    tier = (risky, pressure_class(pressure, policy))
    bits = min(policy.max_bits, max(policy.min_bits, WORK_BITS[tier]))
    floor = min(bits, max(policy.min_bits, bits - FLOOR_DISCOUNT_BITS[risky]))
    return Work("-".join(tier), 2**bits, 2**floor)


def tail_factor(puzzles: int) -> float:
    """p95 of a solve over its mean, for ``puzzles`` exponential searches (a safe overestimate:
    the mean plus two standard deviations of their sum)."""
    return 1 + 2 / math.sqrt(max(1, puzzles))


def fit_to_device(work: Work, hashes_per_second: float | None, puzzles: int) -> int:
    """Expected hashes for a device hashing at ``hashes_per_second`` (None: not measured):
    what keeps its p95 within :data:`FIT_TARGET_SEC`, between the floor and the tier's work."""
    if hashes_per_second is None or hashes_per_second <= 0:
        return work.expected_hashes
    fits = hashes_per_second * FIT_TARGET_SEC / tail_factor(puzzles)
    return int(max(work.floor_hashes, min(work.expected_hashes, fits)))


def split(expected_hashes: int, max_puzzles: int) -> tuple[int, int]:
    """``(puzzles, bits)`` so that puzzles x 2^bits is about ``expected_hashes``, with as many
    puzzles as allowed (up to ``max_puzzles``): many small searches have a short tail."""
    expected_hashes = max(1, expected_hashes)
    if max_puzzles <= 1:
        return 1, max(0, round(math.log2(expected_hashes)))
    bits = max(0, math.ceil(math.log2(expected_hashes / max_puzzles)))
    return max(1, min(max_puzzles, round(expected_hashes / 2**bits))), bits


def split_range(work: Work, max_puzzles: int) -> tuple[int, int, int]:
    """``(puzzles, least, bits)`` for a challenge the device fits itself: ``puzzles`` of 2^bits
    hashes cover the tier's work, and solving the first ``least`` of them reaches its floor.

    The client times the first ``least`` (its measurement, with no round trip of its own) and
    solves as many more as keep its p95 within :data:`FIT_TARGET_SEC`; the server accepts any
    count from ``least`` to ``puzzles``, so a device claiming to be slow buys at most the floor,
    as a measurement sent apart did.
    """
    count, bits = split(work.expected_hashes, max_puzzles)
    least = math.ceil(max(1, work.floor_hashes) / 2**bits)
    return count, max(1, min(count, least)), bits
