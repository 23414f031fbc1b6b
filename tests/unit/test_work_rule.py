"""The work rule (identity/work_rule.py) as tables: risk, pressure, policy, device, split."""

from __future__ import annotations

import math

import pytest

from anteroom.identity.work_rule import (
    FIT_TARGET_SEC,
    Policy,
    Pressure,
    Risk,
    Work,
    fit_to_device,
    pressure_class,
    risk_class,
    split,
    split_range,
    tail_factor,
    work_for,
)

CALM = Pressure(arrivals_per_minute=30, rate_per_minute=60)
BUSY = Pressure(arrivals_per_minute=200, rate_per_minute=60)
ATTACK = Pressure(arrivals_per_minute=30, rate_per_minute=60, identifies_per_minute=5000)
LOW = Risk(score=0, network_identifies=1, range_abuse=0)
HIGH = Risk(score=70, network_identifies=1, range_abuse=0)
AUTO = Policy()


@pytest.mark.parametrize(
    ("risk", "expected"),
    [
        (Risk(0, 0, 0), "low"),
        (Risk(19, 5, 0), "low"),
        (Risk(20, 0, 0), "medium"),  # e.g. no languages reported
        (Risk(0, 6, 0), "medium"),  # a few visitors behind one network
        (Risk(0, 0, 1), "medium"),  # the room refused this range once
        (Risk(49, 20, 2), "medium"),
        (Risk(50, 0, 0), "high"),
        (Risk(0, 21, 0), "high"),  # the signal rules' busy network
        (Risk(0, 0, 3), "high"),
        (Risk(100, 100, 100), "high"),
    ],
)
def test_risk_class(risk: Risk, expected: str) -> None:
    assert risk_class(risk) == expected


@pytest.mark.parametrize(
    ("pressure", "policy", "expected"),
    [
        (Pressure(), AUTO, "calm"),  # no room named, nothing known
        (Pressure(60, 60), AUTO, "calm"),  # arrivals as fast as the drain: the line holds
        (Pressure(61, 60), AUTO, "busy"),  # faster: the line grows
        (Pressure(10_000, 0), AUTO, "calm"),  # no room: its arrivals are not the visitor's
        (Pressure(0, 60, identifies_per_minute=2999), AUTO, "calm"),
        (Pressure(0, 60, identifies_per_minute=3000), AUTO, "attack"),
        (
            Pressure(0, 60, identifies_per_minute=300),
            Policy(attack_identifies_per_minute=300),
            "attack",
        ),
        (Pressure(0, 60, identifies_seen=19, identifies_failed=19), AUTO, "calm"),  # too few
        (Pressure(0, 60, identifies_seen=20, identifies_failed=9), AUTO, "calm"),
        (Pressure(0, 60, identifies_seen=20, identifies_failed=10), AUTO, "attack"),
        (Pressure(500, 60, identifies_seen=100, identifies_failed=60), AUTO, "attack"),
    ],
)
def test_pressure_class(pressure: Pressure, policy: Policy, expected: str) -> None:
    assert pressure_class(pressure, policy) == expected


@pytest.mark.parametrize(
    ("risk", "pressure", "tier", "bits", "floor_bits"),
    [
        (LOW, CALM, "low-calm", 15, 13),
        (LOW, BUSY, "low-busy", 15, 13),
        (LOW, ATTACK, "low-attack", 16, 14),
        (Risk(30, 0, 0), CALM, "medium-calm", 17, 16),
        (Risk(30, 0, 0), BUSY, "medium-busy", 18, 17),
        (Risk(30, 0, 0), ATTACK, "medium-attack", 19, 18),
        (HIGH, CALM, "high-calm", 20, 20),
        (HIGH, BUSY, "high-busy", 21, 21),
        (HIGH, ATTACK, "high-attack", 22, 22),
    ],
)
def test_work_by_tier(
    risk: Risk, pressure: Pressure, tier: str, bits: int, floor_bits: int
) -> None:
    assert work_for(risk, pressure, AUTO) == Work(tier, 2**bits, 2**floor_bits)


def test_under_attack_high_risk_pays_at_least_20x_low_risk_even_at_its_floor() -> None:
    low = work_for(LOW, ATTACK, AUTO)
    high = work_for(HIGH, ATTACK, AUTO)
    assert high.expected_hashes >= 20 * low.expected_hashes
    # A high-risk device claiming to be slow still pays all of it.
    assert fit_to_device(high, 1.0, 32) >= 20 * low.expected_hashes
    assert high.expected_hashes >= 20 * work_for(LOW, CALM, AUTO).expected_hashes


@pytest.mark.parametrize(
    ("policy", "risk", "pressure", "expected"),
    [
        (Policy(pin=4), HIGH, ATTACK, Work("pinned", 16, 16)),
        (Policy(pin=18), LOW, CALM, Work("pinned", 2**18, 2**18)),
        (Policy(min_bits=18), LOW, CALM, Work("low-calm", 2**18, 2**18)),
        (Policy(max_bits=17), HIGH, ATTACK, Work("high-attack", 2**17, 2**17)),
        (Policy(min_bits=14, max_bits=20), LOW, CALM, Work("low-calm", 2**15, 2**14)),
    ],
)
def test_the_operator_pins_or_bounds_it(
    policy: Policy, risk: Risk, pressure: Pressure, expected: Work
) -> None:
    assert work_for(risk, pressure, policy) == expected


@pytest.mark.parametrize(
    ("rate", "expected"),
    [
        (None, 2**15),  # not measured: the tier's work
        (0.0, 2**15),
        (10_000_000.0, 2**15),  # a fast device pays the tier's work, no more
        (1.0, 2**13),  # a "slow" one (or a liar) gets down to the floor, no lower
        (30_000.0, int(30_000 * FIT_TARGET_SEC / tail_factor(32))),  # in between: fitted
    ],
)
def test_fit_to_device(rate: float | None, expected: int) -> None:
    assert fit_to_device(work_for(LOW, CALM, AUTO), rate, 32) == expected


def test_a_fitted_low_risk_solve_stays_within_a_second_at_p95() -> None:
    # Gamma(k) p95 for k=16 is 1.42x the mean; the fit assumes tail_factor (1.5x) of it.
    for rate in (20_000.0, 60_000.0, 150_000.0, 1_000_000.0):
        hashes = fit_to_device(work_for(LOW, CALM, AUTO), rate, 16)
        floor = work_for(LOW, CALM, AUTO).floor_hashes
        if hashes > floor:
            assert hashes / rate * 1.42 <= 1.0


@pytest.mark.parametrize(
    ("expected", "max_puzzles", "puzzles", "bits"),
    [
        (2**16, 32, 32, 11),
        (2**22, 32, 32, 17),
        (2**16, 1, 1, 16),  # legacy: one puzzle of the whole work
        (40_000, 32, 20, 11),  # 20 x 2048 = 40,960
        (16, 32, 16, 0),
        (1, 32, 1, 0),
        (2**16, 8, 8, 13),
    ],
)
def test_split(expected: int, max_puzzles: int, puzzles: int, bits: int) -> None:
    assert split(expected, max_puzzles) == (puzzles, bits)
    total = puzzles * 2**bits
    assert expected / 2 <= total <= expected * 2 or expected < max_puzzles


def test_tail_factor_shrinks_with_puzzles() -> None:
    assert tail_factor(1) == 3.0
    assert math.isclose(tail_factor(32), 1 + 2 / math.sqrt(32))
    assert tail_factor(32) < tail_factor(8) < tail_factor(1)


@pytest.mark.parametrize(
    ("tier", "max_puzzles", "expected"),
    [
        # (puzzles, least, bits): the first `least` puzzles reach the floor, all the work
        (("low", "calm"), 16, (16, 4, 11)),  # 2^15, floor 2^13
        (("medium", "busy"), 16, (16, 8, 14)),  # 2^18, floor 2^17
        (("high", "attack"), 16, (16, 16, 18)),  # no floor below the work
        (("low", "calm"), 1, (1, 1, 15)),  # one puzzle: nothing left to fit
    ],
)
def test_split_range(tier: tuple[str, str], max_puzzles: int, expected: tuple[int, ...]) -> None:
    risk = {"low": Risk(0, 0, 0), "medium": Risk(20, 0, 0), "high": Risk(50, 0, 0)}[tier[0]]
    pressure = {
        "calm": Pressure(),
        "busy": Pressure(arrivals_per_minute=200, rate_per_minute=100),
        "attack": Pressure(identifies_per_minute=10_000),
    }[tier[1]]
    work = work_for(risk, pressure, Policy())
    assert work.tier == "-".join(tier)
    puzzles, least, bits = split_range(work, max_puzzles)
    assert (puzzles, least, bits) == expected
    assert puzzles * 2**bits >= work.expected_hashes * 0.9
    assert least * 2**bits >= work.floor_hashes  # the floor is never bought down
    assert (least - 1) * 2**bits < work.floor_hashes or least == 1
