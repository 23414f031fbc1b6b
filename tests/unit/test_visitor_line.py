"""The site SDK's visitor journey (``anteroom.sdk.visitor_line``) decision by decision, with
Anteroom's answers given in order and the sleeps recorded instead of slept."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from typing import Any

import pytest

from anteroom.sdk.queue_through import QueueThrough
from anteroom.sdk.visitor_line import (
    Answer,
    LineClosed,
    LineError,
    VisitorLine,
    backoff_delay,
    solve_puzzle,
)

API = "https://queue.example/api/v1"
ARRIVAL = Answer(200, {"challenge": "pc1.x", "puzzles": [{"prefix": "s.0", "difficulty": 4}],
                       "minPuzzles": 1})  # fmt: skip
SESSION = {"sessionToken": "st1.s", "expiresAt": 0}


def waiting(ticket: str = "qt1.a", poll_after: int = 1000) -> Answer:
    return Answer(200, {"status": "waiting", "position": 3, "pollAfterMs": poll_after,
                        "queueToken": ticket}, 1)  # fmt: skip


def joined(queue: Answer) -> Answer:
    return Answer(200, {"session": SESSION, "queue": queue.body}, queue.retry_after)


ADMITTED = Answer(200, {"status": "admitted", "token": "ab1.t"})


class Script:
    """Anteroom's answers, in order; what was called and slept."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.slept: list[float] = []

    def post(self, url: str, body: Mapping[str, Any], headers: Any, timeout: float) -> Answer:
        self.calls.append((url.removeprefix(API + "/"), dict(body)))
        return self.answers.pop(0)

    def line(self, **options: Any) -> VisitorLine:
        return VisitorLine(API, "pk_x", post=self.post, sleep=self.slept.append,
                           rng=lambda: 0.5, **options)  # fmt: skip

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.calls]


def test_a_visitor_arrives_joins_polls_as_told_and_gets_its_admission() -> None:
    script = Script(ARRIVAL, joined(waiting(poll_after=1500)), waiting("qt1.b", 2500), ADMITTED)
    assert script.line().admission("drop") == "ab1.t"
    assert script.paths == ["arrive", "queue/join", "queue/poll", "queue/poll"]
    assert script.slept == [1.5, 2.5]
    solution = script.calls[1][1]["solutions"][0]
    assert hashlib.sha256(f"s.0:{solution}".encode()).digest()[0] >> 4 == 0
    assert script.calls[3][1]["ticket"] == "qt1.b"  # the ticket each answer hands back


def test_a_rate_limit_is_waited_exactly_and_an_outage_backed_off_never_sooner_than_told() -> None:
    limited = Answer(429, {"error": "RateLimited"}, 2)
    down = Answer(503, {"error": "Unavailable"}, 1)
    proxy = Answer(502, {}, None)
    script = Script(ARRIVAL, joined(waiting()), limited, down, proxy, proxy, ADMITTED)
    script.line().admission("drop")
    # 1 s as told; 2 s exactly; 503: max(backoff 0.75, 1); then 1.5 and 3 s (no Retry-After).
    assert script.slept == [1.0, 2, 1.0, 1.5, 3.0]
    assert script.paths[2:] == ["queue/poll"] * 5  # the same spot throughout


def test_backoff_grows_with_equal_jitter_up_to_a_cap() -> None:
    assert [backoff_delay(n, lambda: 0.0) for n in range(3)] == [0.5, 1.0, 2.0]
    assert [backoff_delay(n, lambda: 1.0) for n in range(3)] == [1.0, 2.0, 4.0]
    assert backoff_delay(20, lambda: 0.0) == 30.0


def test_a_spot_gone_is_entered_again_with_the_session_and_never_polled_again() -> None:
    gone = Answer(410, {"error": "TicketGone"})
    script = Script(ARRIVAL, joined(waiting()), gone, waiting("qt1.new"), ADMITTED)
    script.line().admission("drop")
    assert script.paths == ["arrive", "queue/join", "queue/poll", "queue/enter", "queue/poll"]
    assert script.calls[3][1]["sessionToken"] == "st1.s"
    assert script.calls[4][1]["ticket"] == "qt1.new"


def test_an_expired_session_takes_a_new_arrival_that_names_the_old_one() -> None:
    expired = Answer(401, {"error": "TokenExpired"})
    gone = Answer(410, {"error": "TicketGone"})
    script = Script(ARRIVAL, joined(waiting()), gone, expired, ARRIVAL, joined(ADMITTED))
    assert script.line().admission("drop") == "ab1.t"
    assert script.paths[3:] == ["queue/enter", "arrive", "queue/join"]
    assert script.calls[5][1]["previousSession"] == "st1.s"


@pytest.mark.parametrize("refusal", ["RoomClosed", "QueueDenied", "SessionRevoked"])
def test_a_closed_room_or_a_final_refusal_stops_for_good(refusal: str) -> None:
    script = Script(ARRIVAL, Answer(403, {"error": refusal}))
    with pytest.raises(LineClosed) as closed:
        script.line().admission("drop")
    assert closed.value.code == refusal and script.paths == ["arrive", "queue/join"]


def test_a_room_not_open_says_closed() -> None:
    script = Script(ARRIVAL, joined(Answer(200, {"status": "idle"})))
    states: list[dict[str, Any]] = []
    with pytest.raises(LineClosed):
        script.line(on_state=states.append).admission("drop")
    assert states == [{"state": "closed"}]


def test_a_refused_proof_is_not_sent_again() -> None:
    script = Script(ARRIVAL, Answer(400, {"error": "BadRequest", "fields": {"solutions": "no"}}))
    with pytest.raises(LineError) as failed:
        script.line().admission("drop")
    assert failed.value.code == "BadRequest" and script.paths == ["arrive", "queue/join"]


def test_the_journey_gives_up_after_max_wait() -> None:
    now = [0.0]
    script = Script(ARRIVAL, joined(waiting()), waiting(), waiting())
    line = VisitorLine(API, "pk_x", post=script.post, clock=lambda: now[0], max_wait=1.5,
                       sleep=lambda s: now.__setitem__(0, now[0] + s))  # fmt: skip
    with pytest.raises(LineError) as failed:
        line.admission("drop")
    assert failed.value.code == "Timeout"


def test_an_outage_longer_than_max_wait_ends_the_journey() -> None:
    now = [0.0]
    down = Answer(503, {"error": "Unavailable"}, 5)
    script = Script(ARRIVAL, joined(waiting()), *[down] * 10)
    line = VisitorLine(API, "pk_x", post=script.post, clock=lambda: now[0], max_wait=12,
                       sleep=lambda s: now.__setitem__(0, now[0] + s))  # fmt: skip
    with pytest.raises(LineError) as failed:
        line.admission("drop")
    assert failed.value.code == "Timeout"
    assert script.paths.count("queue/poll") == 3  # at 1 s, 6 s and 11 s; not one more


def test_the_puzzle_solver_meets_the_difficulty() -> None:
    solution = solve_puzzle("abc.1", 8)
    assert hashlib.sha256(f"abc.1:{solution}".encode()).digest()[0] == 0
    with pytest.raises(ValueError, match="difficulty"):
        solve_puzzle("abc", 300)


@pytest.mark.parametrize(
    ("method", "status", "body", "queued"),
    [
        ("GET", 429, b'{"error": "QueueRequired", "room": "r", "api": "https://q/api/v1"}', True),
        (
            "DELETE",
            429,
            b'{"error": "QueueRequired", "room": "r", "api": "https://q/api/v1"}',
            True,
        ),
        ("POST", 429, b'{"error": "QueueRequired", "room": "r", "api": "https://q/api/v1"}', False),
        ("GET", 429, b'{"error": "RateLimited", "retryAfter": 2}', False),
        ("GET", 503, b'{"error": "QueueRequired", "room": "r", "api": "https://q/api/v1"}', False),
        ("GET", 429, b"<html>Too many</html>", False),
        ("GET", 429, b'{"error": "QueueRequired"}', False),
    ],
)
def test_only_the_edges_queue_required_on_an_idempotent_call_is_queued(
    method: str, status: int, body: bytes, queued: bool
) -> None:
    assert (QueueThrough("pk_x").refusal(method, status, body) is not None) is queued


def test_bad_options_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="api must be an absolute"):
        VisitorLine("queue.example", "pk_x")
    with pytest.raises(ValueError, match="public_key"):
        VisitorLine(API, "sk_secret")


@pytest.mark.parametrize("library", ["requests", "httpx"])
def test_an_app_without_the_library_gets_a_hook_error_naming_it(
    library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK imports requests and httpx only for their hooks: without them it still loads,
    and asking for the hook says what to install."""
    from anteroom.sdk import queue_through

    monkeypatch.setitem(sys.modules, library, None)  # as if not installed
    hook = (
        queue_through.requests_session if library == "requests" else queue_through.httpx_transport
    )
    with pytest.raises(ImportError, match=f"needs {library}: pip install {library}"):
        hook(QueueThrough("pk_x"))
