"""The rig's order measure (tests/region_rig.py), on visitors made up here: what it counts as an
inversion, and that its window ends where the faults begin."""

from __future__ import annotations

from region_rig import order_inversions


def visitor(region: str, arrival: int, admitted: int | None) -> dict[str, object]:
    return {
        "region": region,
        "vid": f"{region}-{arrival}",
        "arrival": arrival,
        "admitted": admitted,
    }


def test_an_admission_ahead_of_an_earlier_arrival_of_another_region_is_one() -> None:
    early, late = visitor("ap", 0, 5_000), visitor("eu", 2_000, 3_000)
    assert order_inversions([early, late], 1_300, 10_000) == 1
    assert order_inversions([early, late], 2_500, 10_000) == 0  # within the bound
    # one still waiting at the window's end counts as admitted after it
    assert order_inversions([visitor("ap", 0, None), late], 1_300, 10_000) == 1
    # the same region's order is the region's own affair (its line is in arrival order)
    assert order_inversions([visitor("eu", 0, 5_000), late], 1_300, 10_000) == 0


def test_admissions_after_the_window_are_not_judged() -> None:
    # both admitted after the window (during a partition, say): no verdict on their order
    assert (
        order_inversions([visitor("ap", 0, 23_000), visitor("eu", 2_000, 22_000)], 1_300, 12_000)
        == 0
    )
    # admitted within it, ahead of one admitted after it: an inversion
    assert (
        order_inversions([visitor("ap", 0, 23_000), visitor("eu", 2_000, 11_000)], 1_300, 12_000)
        == 1
    )
