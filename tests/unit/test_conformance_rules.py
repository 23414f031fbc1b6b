"""The conformance kit's judges (``ops/conformance_rules.py``) on recorded journeys written out
by hand: where each rule's line is, and that a client keeping to it passes."""

from __future__ import annotations

from typing import Any

from anteroom.ops.conformance_rules import (
    Outcome,
    admission_used_once,
    enters_again_only_when_gone,
    judge,
    no_storm,
    stops_when_closed,
    waits_as_told,
)
from anteroom.ops.conformance_server import Record


def rec(kind: str, at: float, status: int = 200, **fields: Any) -> Record:
    return Record(at=at, done=at + 0.01, kind=kind, method="POST", path="", status=status, **fields)


def test_a_call_sooner_than_retry_after_is_named_with_its_figures() -> None:
    limited = rec("poll", 1.0, 429, retry_after=2, error="RateLimited")
    assert waits_as_told([limited, rec("poll", 1.01 + 1.95)]) == []  # within the slack
    (broken,) = waits_as_told([limited, rec("poll", 1.01 + 0.2)])
    assert broken == (
        "ignored Retry-After: called poll 0.20 s after a 429 RateLimited (on poll) that said 2 s"
    )


def test_polling_sooner_than_poll_after_ms_is_named() -> None:
    waiting = rec("poll", 0.0, answer="waiting", poll_after_ms=1500, retry_after=2)
    # pollAfterMs is the finer figure: 1.5 s is on time even though Retry-After says 2.
    assert waits_as_told([waiting, rec("poll", 0.01 + 1.5)]) == []
    (broken,) = waits_as_told([waiting, rec("poll", 0.01 + 1.0)])
    assert broken.startswith("polled faster than told: called poll 1.00 s after a 'waiting'")


def test_the_resource_may_be_retried_at_once_with_an_admission_but_not_without() -> None:
    refused = rec("resource", 0.0, 429, retry_after=5, error="QueueRequired")
    line = [rec("arrive", 0.02), rec("join", 0.03, answer="admitted")]
    assert waits_as_told([refused, *line, rec("resource", 0.05, admission="a1")]) == []
    (broken,) = waits_as_told([refused, rec("resource", 0.5)])
    assert "called the resource again without an admission 0.49 s after" in broken


def test_an_outage_without_retry_after_needs_a_growing_backoff() -> None:
    def proxy(at: float) -> Record:
        return rec("poll", at, 503)

    backed_off = [proxy(0.0), proxy(0.7), proxy(2.0), rec("poll", 4.5)]
    assert no_storm(backed_off) == []
    fixed = [proxy(0.0), proxy(0.4), proxy(0.8), proxy(1.2), rec("poll", 1.6)]
    assert no_storm(fixed) == [
        "stormed after a 503 (no JSON body) without Retry-After: 3 calls within 1.5 s of it "
        "(at most 2: back off exponentially, with jitter)"
    ]
    assert no_storm([proxy(0.0), rec("poll", 0.1)])[0].startswith("no backoff after a 503")


def test_entering_again_is_right_after_a_410_only() -> None:
    joined = rec("join", 0.0, answer="waiting", poll_after_ms=1000)
    gone = rec("poll", 1.0, 410, error="TicketGone", ticket="t1")
    again = rec("enter", 1.1, answer="waiting")
    assert enters_again_only_when_gone([joined, gone, again]) == []
    down = rec("poll", 1.0, 503, retry_after=1, error="Unavailable", ticket="t1")
    (broken,) = enters_again_only_when_gone([joined, down, rec("enter", 2.1)])
    assert broken.startswith("entered again while its spot was kept: enter at 2.10 s after a 503")
    stale = rec("poll", 2.0, 410, ticket="t1")
    assert "polled a ticket again" in enters_again_only_when_gone([joined, gone, again, stale])[0]
    assert enters_again_only_when_gone([joined, gone]) == [
        "did not enter again after a 410 TicketGone on poll at 1.00 s (the spot is gone: take a "
        "new one)"
    ]


def test_an_admission_is_counted_per_token_and_calls_after_a_closed_room_are_named() -> None:
    twice = [rec("resource", 0.0, admission="a"), rec("resource", 0.1, admission="a")]
    assert admission_used_once(twice) == ["used an admission 2 times (retry the refused call "
                                          "once with it)"]  # fmt: skip
    assert admission_used_once([twice[0], rec("resource", 0.1, admission="b")]) == []
    closed = rec("enter", 1.0, answer="idle")
    assert stops_when_closed([closed]) == []
    (broken,) = stops_when_closed([closed, rec("poll", 1.5), rec("arrive", 2.0)])
    assert broken.startswith("kept calling after the room closed: 2 call(s) (arrive, poll)")


def test_the_outcome_is_judged_by_exit_code_state_and_the_resource() -> None:
    case = {"expect": {"exit": [0], "state": "admitted", "resource": 200}}
    good = [rec("resource", 0.0, 429), rec("resource", 1.0, 200, admission="a")]
    assert judge(case, good, Outcome(0, [{"state": "admitted"}])) == []
    assert judge(case, good[:1], Outcome(1, [{"state": "error"}])) == [
        "exited 1, expected 0 (last state printed: {'state': 'error'})",
        'never said {"state": "admitted"} on its standard output',
        "never got the resource: no 200 from it (retry it with the admission)",
    ]
    assert judge(case, [], Outcome(None, [], 25.0)) == ["did not finish within 25 s (killed)"]


def test_a_case_that_expects_a_new_spot_needs_the_loss_and_the_entry_after_it() -> None:
    case = {"expect": {"exit": [0], "reenter": True}}
    gone = rec("poll", 1.0, 410, error="TicketGone")
    assert judge(case, [gone, rec("enter", 1.1)], Outcome(0)) == []
    assert judge(case, [rec("enter", 0.5), rec("poll", 1.0)], Outcome(0)) == [
        "never took a new spot after a 410 or 401 on its poll"
    ]


def test_calling_the_resource_more_than_the_call_and_its_retry_is_named() -> None:
    case = {"expect": {"exit": [1], "resourceCalls": 2}}
    calls = [rec("resource", t, 429, admission=str(t) if t else None) for t in (0.0, 1.0, 2.0)]
    assert judge(case, calls[:2], Outcome(1)) == []
    assert judge(case, calls, Outcome(1)) == [
        "called the resource 3 times (at most 2: the call, then one retry with the admission; "
        "a refused retry is the app's answer)"
    ]
