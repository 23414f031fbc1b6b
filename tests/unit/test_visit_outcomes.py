"""A rendered queue answer becomes one tagged outcome: its state is the class, not its nulls."""

from __future__ import annotations

import pytest

from anteroom.visit.outcomes import Admitted, Held, Idle, InDraw, Waiting, spot_of


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"status": "waiting", "position": 3, "odds": None}, Waiting),
        ({"status": "waiting", "position": None, "odds": 0.25}, InDraw),
        ({"status": "held", "position": None, "odds": None}, Held),
        ({"status": "admitted", "token": "ab1.x"}, Admitted),
        ({"status": "idle"}, Idle),
    ],
)
def test_spot_of(body: dict[str, object], kind: type) -> None:
    spot = spot_of(body, 2)
    assert type(spot) is kind
    assert spot.body is body and spot.retry_after == 2
