"""The rehearsal report's figures: each shown to catch what it is there to catch."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from typing import Any

from anteroom.ops.rehearsal_report import (
    Journey,
    Tally,
    order_inversions,
    percentiles,
    rate_excess,
    report,
    summary,
    token_claims,
)


def test_order_inversions_count_later_tickets_dealt_in_earlier_seconds() -> None:
    def spots(*pairs: tuple[int, int], generation: int = 1) -> list[tuple[tuple[int, int], int]]:
        return [((generation, ticket), second) for ticket, second in pairs]

    assert order_inversions(spots((1, 100), (2, 100), (3, 101), (4, 102))) == 0
    # Ticket 3 dealt a second before tickets 1 and 2: two inversions.
    assert order_inversions(spots((1, 101), (2, 101), (3, 100), (4, 102))) == 2
    assert order_inversions(spots(*((t, 200 - t) for t in range(5)))) == 10  # 5 choose 2
    # A closed room's tickets start again at 1: the next opening's come after all of them.
    assert order_inversions(spots((5, 100)) + spots((1, 101), generation=2)) == 0


def test_rate_excess_applies_the_rooms_rate_over_every_run_of_seconds() -> None:
    # 60 a minute: one a second, plus one of bank; ten seconds at one each is within the rate.
    assert rate_excess(list(range(100, 110)), 60) == 0
    assert rate_excess([100, 100], 60) == 0  # the one second's worth of bank
    assert rate_excess([100, 100, 100], 60) == 1
    # Two a second for ten seconds at 60 a minute: 20 where 11 are allowed.
    assert rate_excess([s for s in range(100, 110) for _ in range(2)], 60) == 9


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentiles(values) == {"count": 100, "p50": 50.0, "p95": 95.0, "p99": 99.0,
                                   "max": 100.0}  # fmt: skip
    assert percentiles([])["p50"] is None


def admission(iat: int, jti: str) -> str:
    claims = base64.urlsafe_b64encode(json.dumps({"iat": iat, "jti": jti}).encode())
    return f"ab1.k1.{claims.decode().rstrip('=')}.sig"


def test_the_report_names_shared_tickets_double_deals_and_the_rooms_own_count() -> None:
    assert token_claims(admission(7, "x")) == {"iat": 7, "jti": "x"}
    tally = Tally()
    for ticket, dealt, jti in ((1, 100, "a"), (2, 100, "b"), (2, 101, "c"), (3, 101, "c")):
        journey = tally.new_journey()
        journey.entered_at, journey.admitted_at = 0.0, 2.0
        journey.ticket, journey.dealt_at, journey.admission = ticket, dealt, jti
    tally.new_journey().lost = "poll 410 TicketGone"
    tally.recovery("spot gone: entered again")
    room = {"ratePerMinute": 120, "dealtDuring": 3}
    figures = report(tally, {"visitors": 5}, room)
    assert figures["visitors"] == {"started": 5, "admitted": 4, "not_admitted": 1,
                                   "lost_by_reason": {"poll 410 TicketGone": 1},
                                   "room_openings_seen": 1, "room_dealt_to_others": -1}  # fmt: skip
    assert figures["violations_by_kind"] == {
        "ticket shared by two visitors": 1,
        "admission dealt twice": 1,
        "room dealt fewer than visitors admitted": 1,
    }
    assert figures["one_spot_violations"] == 3
    assert figures["recoveries_by_kind"] == {"spot gone: entered again": 1}
    assert figures["admissions_per_minute"]["achieved"] == 120.0  # 4 over 2 seconds
    assert figures["admissions_per_minute"]["rate_excess"] == 0
    assert figures["wait_seconds"]["p50"] == 2.0
    assert figures["wait_seconds"]["histogram"]["<=5s"] == 4


def test_a_clean_journey_reports_nothing_wrong() -> None:
    tally = Tally()
    journey: Journey = tally.new_journey()
    journey.ticket, journey.dealt_at, journey.admission = 1, 100, "a"
    journey.entered_at, journey.admitted_at = 0.0, 0.5
    figures = report(tally, {"rate": 60}, None)
    assert figures["order_inversions"] == 0 and figures["one_spot_violations"] == 0
    assert figures["admissions_per_minute"]["room_rate"] == 60


def test_the_report_names_the_limit_that_bound_admissions() -> None:
    def figures(arrivals_per_second: float, rate: int) -> dict[str, Any]:
        tally = Tally()
        for second in range(60):
            journey = tally.new_journey()
            journey.ticket, journey.dealt_at, journey.admission = second, 1000 + second, str(second)
            journey.entered_at, journey.admitted_at = 0.0, 1.0
        setup = {"visitors": 60, "arrivals_per_second": arrivals_per_second}
        return report(tally, setup, {"ratePerMinute": rate, "dealtDuring": 60})[
            "admissions_per_minute"
        ]

    # 200 a minute arrived for a room that deals 300: the arrivals were the limit, not the room.
    slow = figures(200 / 60, 300)
    assert slow["bound_by"] == "arrivals" and slow["arrivals_per_minute"] == 200.0
    assert "bound by the arrivals" in summary({"admissions_per_minute": slow} | BLANK, "r.json")
    busy = figures(10, 60)
    assert busy["bound_by"] == "room rate" and busy["arrivals_per_minute"] == 600.0
    assert "bound by the room rate" in summary({"admissions_per_minute": busy} | BLANK, "r.json")


BLANK: dict[str, Any] = {
    "visitors": {"started": 1, "admitted": 1, "not_admitted": 0, "lost_by_reason": {}},
    "poll_latency_ms": {"p50": 1, "p95": 1, "p99": 1, "count": 1},
    "wait_seconds": {"p50": 1, "p90": 1, "p99": 1, "max": 1},
    "order_inversions": 0,
    "one_spot_violations": 0,
    "errors_by_code": {},
    "recoveries_by_kind": {},
}


def test_rehearse_without_locust_says_what_to_install_and_exits_2() -> None:
    # Locust made unimportable in this interpreter, as in an install without the extra.
    code = (
        "import sys; sys.modules['locust'] = None; from anteroom.ops.cli import main; "
        "sys.exit(main(['rehearse', '--visitors', '10']))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert "pip install 'anteroom[rehearse]'" in run.stderr
    assert ".venv/bin/pip install -e '.[rehearse]'" in run.stderr
