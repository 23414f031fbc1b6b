"""The coordinator's round as pure arithmetic: budget, watermark, leases and their bounds."""

from __future__ import annotations

import random

from anteroom.queue.regions.global_line import (
    BUCKET_MS,
    CoordinatorState,
    Summary,
    global_position,
    plan_round,
    split_by_arrival,
)


def summary(region: str, arrivals: list[int], admitted: int = 0, active: int = 0, **kw) -> Summary:
    buckets: dict[int, int] = {}
    for t in arrivals:
        start = t - t % BUCKET_MS
        buckets[start] = buckets.get(start, 0) + 1
    fields = {"rate": 600, "capacity": 0, "at_ms": 10_000} | kw
    return Summary(
        region=region,
        admitted=admitted,
        active=active,
        waiting=len(arrivals),
        buckets=tuple(sorted(buckets.items())),
        **fields,
    )


def test_the_budget_goes_to_the_earliest_arrivals_whatever_their_region() -> None:
    eu = summary("eu", [1000, 1010, 1500, 2500])
    us = summary("us", [1200, 1300, 2600])
    shares, watermark = split_by_arrival([eu, us], 4)
    assert shares == {"eu": 2, "us": 2}  # 1000, 1010, 1200, 1300; 1500 waits
    assert watermark == 1399


def test_a_bucket_taken_in_part_is_split_by_largest_remainder() -> None:
    eu = summary("eu", [1000, 1001, 1002])
    us = summary("us", [1050])
    shares, _ = split_by_arrival([eu, us], 2)
    assert sum(shares.values()) == 2
    assert shares == {"eu": 2, "us": 0} or shares == {"eu": 1, "us": 1}
    assert shares["eu"] >= 1  # three quarters of the bucket is eu's


def test_rounds_grant_the_rooms_rate_and_never_stack() -> None:
    # 600 a minute = 10 a second; three regions with long lines, each round one second apart
    rng = random.Random(7)
    state, admitted = CoordinatorState(), {"eu": 0, "us": 0, "ap": 0}
    now = 100_000
    granted_total = 0
    for _ in range(60):
        now += 1_000
        summaries = [
            summary(r, sorted(rng.randrange(0, 90_000) for _ in range(200)), admitted[r])
            for r in admitted
        ]
        round_ = plan_round(summaries, state, epoch=5, now_ms=now)
        for region, lease in round_.leases.items():
            assert lease.epoch == 5 and lease.expires_ms == now + 3_000
            # each region spends its whole ceiling before the next report
            granted_total += lease.ceiling - admitted[region]
            admitted[region] = lease.ceiling
    # the first round grants nothing (the bank starts at what is admitted): 59 s at 10 a second
    assert granted_total == 590


def test_grants_in_flight_are_carried_not_lost_nor_doubled() -> None:
    state = CoordinatorState()
    line = [1000 + i for i in range(500)]
    plan_round([summary("eu", line)], state, 1, now_ms=50_000)
    first = plan_round([summary("eu", line)], state, 1, now_ms=51_000)
    assert first.leases["eu"].ceiling == 10
    # eu's lease came late and it admitted 4 of them: the 6 left are carried, 10 more granted
    second = plan_round([summary("eu", line[4:], admitted=4)], state, 1, now_ms=52_000)
    assert (second.in_flight, second.leases["eu"].ceiling) == (6, 20)
    # a second late report of the same count: nothing more is earned than the second's 10
    third = plan_round([summary("eu", line[4:], admitted=4)], state, 1, now_ms=53_000)
    assert third.leases["eu"].ceiling == 30


def test_grants_whose_visitors_left_come_back_to_the_headroom() -> None:
    state = CoordinatorState()
    eu_line, us_line = [1000 + i for i in range(20)], [5000 + i for i in range(50)]
    plan_round([summary("eu", eu_line), summary("us", us_line)], state, 1, now_ms=50_000)
    first = plan_round([summary("eu", eu_line), summary("us", us_line)], state, 1, 51_000)
    assert first.leases["eu"].share == 10  # eu's waiting came first
    # eu's ten granted all left before their turn: given back, with the second's ten earned,
    # the budget goes to us
    later = plan_round([summary("eu", []), summary("us", us_line)], state, 1, 52_000)
    assert later.leases["us"].share == 20
    assert later.budget == 20 and state.headroom == 0


def test_the_capacity_left_bounds_a_round() -> None:
    state = CoordinatorState()
    line = [1000 + i for i in range(500)]
    regions = [summary("eu", line, active=40, capacity=50), summary("us", line, active=5)]
    plan_round(regions, state, 1, now_ms=50_000)
    round_ = plan_round(regions, state, 1, now_ms=51_000)
    assert round_.budget == 5
    assert sum(lease.share for lease in round_.leases.values()) == 5


def test_the_stricter_rate_holds_while_a_change_spreads() -> None:
    state = CoordinatorState()
    line = [1000 + i for i in range(500)]
    regions = [summary("eu", line, rate=600), summary("us", line, rate=60)]
    plan_round(regions, state, 1, now_ms=50_000)
    assert plan_round(regions, state, 1, now_ms=51_000).budget == 1


def test_nothing_waiting_puts_the_watermark_at_the_oldest_report() -> None:
    state = CoordinatorState()
    round_ = plan_round(
        [summary("eu", [], at_ms=7_000), summary("us", [], at_ms=6_500)], state, 1, 9_000
    )
    assert round_.watermark == 6_500 and all(lease.share == 0 for lease in round_.leases.values())


def test_the_global_position_adds_those_who_arrived_earlier_elsewhere() -> None:
    eu = summary("eu", [1000, 1100, 1200, 1300])
    us = summary("us", [1050, 1150, 1250])
    ap = summary("ap", [900])
    summaries = {"eu": eu, "us": us, "ap": ap}
    # the us visitor who arrived at 1250 is third in us; before it: ap's one and eu's three
    exact = 3 + 1 + 3
    shown = global_position(summaries, "us", 3, 1250)
    assert abs(shown - exact) <= 1  # within one bucket of each other region


def test_an_absent_regions_fallback_share_is_set_aside_and_its_return_costs_nothing() -> None:
    state = CoordinatorState()
    line = [1000 + i for i in range(500)]
    plan_round([summary("eu", line), summary("ap", line)], state, 1, now_ms=50_000)
    # ap is cut off, on its fallback of a quarter: eu's rounds grant three quarters of the rate
    eu_admitted, budgets = 0, []
    for second in range(1, 5):
        round_ = plan_round(
            [summary("eu", line, eu_admitted)],
            state,
            1,
            50_000 + 1_000 * second,
            absent={"ap": 0.25},
        )
        assert round_.budget in (7, 8)  # 7.5 a second: halves carry to the next round
        budgets.append(round_.budget)
        eu_admitted = round_.leases["eu"].ceiling - (round_.leases["eu"].ceiling - eu_admitted) // 2
    assert sum(budgets) == 30  # four seconds at three quarters of 10 a second
    # ap comes back having admitted 40 on its own: not charged again to the room's headroom
    back = plan_round([summary("eu", line, eu_admitted), summary("ap", line, 40)], state, 1, 55_000)
    assert back.budget == 10


def test_the_coordinators_state_survives_its_json() -> None:
    state = CoordinatorState(headroom=3.5, at_ms=9, granted={"eu": 4})
    assert CoordinatorState.from_json(state.to_json()) == state


def test_nobody_is_granted_past_the_oldest_report() -> None:
    # ap last reported at 2_000; eu's arrivals after it wait for ap's next report, which may
    # hold earlier arrivals of its own
    state = CoordinatorState()
    eu = summary("eu", [1_500, 1_900, 2_100, 2_500], at_ms=3_000)
    ap = summary("ap", [1_800], at_ms=2_000)
    plan_round([eu, ap], state, 1, now_ms=50_000)
    round_ = plan_round([eu, ap], state, 1, now_ms=51_000)
    assert round_.leases["eu"].share == 2 and round_.leases["ap"].share == 1
    assert round_.watermark < 2_000
