"""An engine's queue answer becomes one tagged outcome: its state is the class, decided once
from the engine's status (visit/answers.tagged), never read back from the JSON's nulls."""

from __future__ import annotations

import pytest

from anteroom.engine import QueueAnswer
from anteroom.visit.answers import tagged
from anteroom.visit.outcomes import Admitted, Held, Idle, InDraw, Waiting


def answer(status: str, position: int | None = 3, odds: float | None = None) -> QueueAnswer:
    return QueueAnswer(status, 7, position, 10, None, 1000, "open", 1, None, "s1", odds=odds)


@pytest.mark.parametrize(
    ("engine", "kind"),
    [
        (answer("waiting"), Waiting),
        (answer("waiting", position=None, odds=0.25), InDraw),
        (answer("held", position=None), Held),
        (answer("admitted"), Admitted),
        (answer("idle", position=None), Idle),
    ],
)
def test_an_engine_answer_is_one_outcome(engine: QueueAnswer, kind: type) -> None:
    body = {"status": engine.status}
    spot = tagged(engine, body, 2)
    assert type(spot) is kind
    assert spot.body is body and spot.retry_after == 2


def test_an_unknown_status_is_no_outcome() -> None:
    with pytest.raises(ValueError, match="gone"):
        tagged(answer("gone"), {}, None)
