"""The sizing model's polls a second (poll_cadence.polls_per_second) keep the budget the
cadence promises (docs/queue.md, invariant 11), whatever the line's length."""

from __future__ import annotations

import pytest

from anteroom.queue.line.poll_cadence import front_size, polls_per_second


@pytest.mark.parametrize("pace", [1, 10, 100, 1_000])
@pytest.mark.parametrize("line", [50, 1_000, 100_000, 1_000_000, 10_000_000])
def test_a_rooms_polls_stay_within_its_budget_and_its_front(pace: int, line: int) -> None:
    budget = 5_000
    front = min(line, front_size(pace))
    asked = polls_per_second(line, pace, budget)
    # The front polls every 1-2 s; everyone behind it adds up to at most the budget (a 1 %
    # allowance for the model's bucketing).
    assert asked <= front * 1.0 + budget * 1.01
    assert asked >= min(line, front) / 2  # the front is never starved


def test_the_docstrings_example_holds() -> None:
    behind_the_front = polls_per_second(100_000, 100) - polls_per_second(1_000, 100)
    assert 2_000 < behind_the_front <= 2_303 * 1.01
