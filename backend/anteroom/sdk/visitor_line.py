"""An app's place in line, over the visitor API: arrive, prove, join, poll as told, admitted.

``VisitorLine(api, public_key).admission(room)`` takes a ticket for ``room`` and waits in line
until it is admitted, then returns the admission token (``ab1.…``) the app sends to its own API
in the ``Anteroom-Admission`` header. It waits exactly what it is told (``pollAfterMs`` of a
waiting answer, ``Retry-After`` of a ``429``), backs off with jitter after an outage (a ``5xx``
or no answer: never sooner than its ``Retry-After``), takes a new spot only when told its spot
is gone (``410``, or a ``401`` on the ticket) and a new session only when told the session
expired, and stops for good when the room is closed or refuses the visitor (``LineClosed``).
Standard library only: ``urllib``, ``hashlib`` for the proof of work.

The clock, the sleep and the random source are injectable, and every decision of how long to
wait is a method a test (or a deliberately broken client) can override.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Answer",
    "LineClosed",
    "LineError",
    "VisitorLine",
    "backoff_delay",
    "solve_puzzle",
]

# Answers of the visitor API are small; a bigger one is not Anteroom's.
MAX_ANSWER_BYTES = 262_144
BACKOFF_BASE_SEC = 1.0
BACKOFF_CAP_SEC = 60.0
DEFAULT_POLL_SEC = 5.0
MIN_POLL_SEC = 0.25  # a hot loop is never right, whatever an answer says
MAX_RECOVERIES = 3  # spots or sessions lost in a row before giving up
# Refusals that end the journey: the room takes no one (closed, denied, revoked, no such room).
FINAL_ERRORS = frozenset({"RoomClosed", "QueueDenied", "SessionRevoked", "RoomNotFound"})
USER_AGENT = "anteroom-sdk-python (queue-through)"


class LineError(Exception):
    """The journey failed: ``code`` is the API's error code (``NetworkError`` for no answer)."""

    def __init__(self, code: str, message: str = "", status: int = 0) -> None:
        super().__init__(message or code)
        self.code = code
        self.status = status


class LineClosed(LineError):
    """The room is closed, or refuses this visitor for good: queueing again will not help."""


@dataclass(frozen=True)
class Answer:
    """One HTTP answer of the visitor API: status (0: none came), JSON body, Retry-After (s)."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)
    retry_after: float | None = None

    @property
    def error(self) -> str:
        """The error code of a refusal ('' when the body names none)."""
        code = self.body.get("error")
        return code if isinstance(code, str) else ""


def backoff_delay(failures: int, rng: Callable[[], float] = random.random) -> float:
    """Seconds to wait after the ``failures``-th consecutive failure (0 for the first):
    exponential with equal jitter, 0.5-1 s, 1-2 s, 2-4 s, ... up to 30-60 s, as the browser
    agent does: half is always waited (a crowd never retries at once), half spreads it."""
    ceiling = min(BACKOFF_CAP_SEC, BACKOFF_BASE_SEC * 2**failures)
    return ceiling / 2 + rng() * ceiling / 2


def solve_puzzle(prefix: str, difficulty: int) -> str:
    """The first decimal counter whose SHA-256 of ``prefix:counter`` starts with ``difficulty``
    zero bits (the visitor API's proof of work)."""
    if not 0 <= difficulty <= 256:
        raise ValueError("difficulty must be between 0 and 256 bits")
    base = hashlib.sha256(f"{prefix}:".encode())
    shift = 256 - difficulty
    counter = 0
    while True:
        attempt = base.copy()
        text = str(counter)
        attempt.update(text.encode("ascii"))
        if int.from_bytes(attempt.digest(), "big") >> shift == 0:
            return text
        counter += 1


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (delta-seconds only; a date is read as absent)."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def urllib_post(
    url: str, body: Mapping[str, Any], headers: Mapping[str, str], timeout: float
) -> Answer:
    """POST ``body`` as JSON with urllib: the answer, or status 0 when none came."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw, retry = (
                response.status,
                response.read(MAX_ANSWER_BYTES + 1),
                (response.headers.get("Retry-After")),
            )
    except urllib.error.HTTPError as exc:
        with exc:
            status, raw, retry = (
                exc.code,
                exc.read(MAX_ANSWER_BYTES + 1),
                exc.headers.get("Retry-After"),
            )
    except (urllib.error.URLError, http.client.HTTPException, OSError):
        return Answer(0)
    try:
        parsed = json.loads(raw) if raw and len(raw) <= MAX_ANSWER_BYTES else {}
    except ValueError:
        parsed = {}
    return Answer(status, parsed if isinstance(parsed, dict) else {}, parse_retry_after(retry))


Post = Callable[[str, Mapping[str, Any], Mapping[str, str], float], Answer]


class VisitorLine:
    """One visitor's journey through the visitor API at ``api`` (``https://queue.example/api/v1``)
    with the room's ``public_key``.

    ``on_state`` is told each change an app would show: ``{"state": "waiting", "position": 12}``,
    ``{"state": "admitted"}``, ``{"state": "closed"}``, ``{"state": "error", "code": …}`` (a
    transient failure, retried). ``max_wait`` bounds the whole journey (seconds).
    """

    def __init__(
        self,
        api: str,
        public_key: str,
        *,
        on_state: Callable[[dict[str, Any]], None] | None = None,
        max_wait: float = 3600.0,
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        post: Post = urllib_post,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if not api.startswith(("http://", "https://")):
            raise ValueError(f"api must be an absolute http(s) URL, not {api!r}")
        if not public_key.startswith("pk_"):
            raise ValueError("public_key must be a room's public key (pk_…)")
        self.api = api.rstrip("/")
        self.public_key = public_key
        self.on_state = on_state
        self.max_wait = max_wait
        self.timeout = timeout
        self.headers = {"User-Agent": USER_AGENT, "Accept-Language": "en"} | dict(headers or {})
        self.post_json = post
        self.clock = clock
        self.sleep = sleep
        self.rng = rng
        self.session: str | None = None
        self.previous: str | None = None  # an expired session, named when joining again
        self.ticket: str | None = None
        self.deadline = float("inf")  # set by admission()

    # -- what to wait: the decisions a client can get wrong ------------------------------------

    def wait_after_failure(self, answer: Answer, failures: int) -> float | None:
        """Seconds before repeating a call that failed, or None when it must not be repeated.
        A 429 is waited exactly as told; an outage backs off, never sooner than told, and so
        does a call a load balancer sent to another region than the ticket's (WrongRegion: the
        spot is kept there)."""
        if answer.status == 429 and answer.error not in ("QueueRequired",):
            told = answer.retry_after
            return told if told is not None else backoff_delay(failures, self.rng)
        if answer.status == 0 or answer.status >= 500 or answer.error == "WrongRegion":
            return max(backoff_delay(failures, self.rng), answer.retry_after or 0.0)
        return None

    def wait_after_answer(self, body: Mapping[str, Any], retry_after: float | None) -> float:
        """Seconds before the next poll of a waiting answer: its ``pollAfterMs``."""
        poll_after = body.get("pollAfterMs")
        if (
            isinstance(poll_after, int | float)
            and not isinstance(poll_after, bool)
            and poll_after > 0
        ):
            return max(MIN_POLL_SEC, poll_after / 1000)
        return max(MIN_POLL_SEC, retry_after if retry_after is not None else DEFAULT_POLL_SEC)

    def spot_lost(self, answer: Answer) -> bool:
        """A poll's refusal that says the spot (or its ticket) is gone: enter again."""
        return answer.status in (401, 410)

    # -- the journey ------------------------------------------------------------------------

    def admission(self, room: str) -> str:
        """Queue for ``room`` until admitted; the admission token. Raises ``LineClosed`` when
        the room is closed or refuses us, ``LineError`` when the journey cannot go on."""
        self.deadline = self.clock() + self.max_wait
        recoveries = 0
        while True:
            self.check_deadline()
            if self.ticket:
                answer = self.call("queue/poll", {"apiKey": self.public_key, "ticket": self.ticket})
                if answer.status != 200 and self.spot_lost(answer):
                    recoveries = self.recover(recoveries, answer)
                    self.ticket = None
                    continue
            elif self.session:
                body = {"apiKey": self.public_key, "room": room, "sessionToken": self.session}
                answer = self.call("queue/enter", body)
                if answer.status == 401:  # the session expired or no longer verifies
                    recoveries = self.recover(recoveries, answer)
                    # An expired session still says who we were (the next join names it); an
                    # invalid one says nothing.
                    self.previous = self.session if answer.error == "TokenExpired" else None
                    self.session = None
                    continue
            else:
                answer = self.arrive(room)
            if answer.status != 200:
                self.refused(answer)
            recoveries = 0
            body = answer.body
            status = body.get("status")
            if status == "admitted" and isinstance(body.get("token"), str):
                self.ticket = None
                self.tell({"state": "admitted"})
                return str(body["token"])
            if status in ("waiting", "held"):
                if isinstance(body.get("queueToken"), str):
                    self.ticket = body["queueToken"]
                self.tell({"state": "waiting", "position": body.get("position")})
                self.sleep(self.wait_after_answer(body, answer.retry_after))
                continue
            self.ticket = None
            if status == "idle":  # not open: before its opening, or closed
                self.tell({"state": "closed"})
                raise LineClosed("RoomClosed", "the room is not open", 200)
            raise LineError("BadResponse", f"unreadable answer: status {status!r}", 200)

    def arrive(self, room: str) -> Answer:
        """The two calls to a ticket: a challenge, then the proof, the session and the spot.
        Answers as ``queue/enter`` does (the queue answer), the session kept."""
        issued = self.call("arrive", {"apiKey": self.public_key, "room": room})
        if issued.status != 200:
            return issued
        puzzles = issued.body.get("puzzles")
        challenge = issued.body.get("challenge")
        if not isinstance(puzzles, list) or not isinstance(challenge, str):
            raise LineError("BadResponse", "the arrival carries no puzzles", 200)
        floor = int(issued.body.get("minPuzzles") or len(puzzles))
        solutions = [solve_puzzle(str(p["prefix"]), int(p["difficulty"])) for p in puzzles[:floor]]
        body = {"apiKey": self.public_key, "room": room, "challenge": challenge,
                "solutions": solutions}  # fmt: skip
        if self.previous:
            body["previousSession"] = self.previous
        joined = self.call("queue/join", body)  # the same body again answers the same spot
        if joined.status != 200:
            return joined
        session = joined.body.get("session")
        queue = joined.body.get("queue")
        if not isinstance(session, dict) or not isinstance(queue, dict):
            raise LineError("BadResponse", "the join carries no session or queue", 200)
        self.session = session.get("sessionToken")
        return Answer(200, queue, joined.retry_after)

    def call(self, path: str, body: Mapping[str, Any]) -> Answer:
        """POST to the visitor API, repeating transient failures as told (see
        ``wait_after_failure``); a refusal is returned as it came."""
        failures = 0
        while True:
            answer = self.post_json(f"{self.api}/{path}", body, self.headers, self.timeout)
            if answer.status == 200:
                return answer
            wait = self.wait_after_failure(answer, failures)
            if wait is None:
                return answer
            if not (answer.status == 429 and answer.retry_after is not None):
                failures += 1
            self.tell({"state": "error", "code": answer.error or f"HTTP{answer.status}"})
            self.sleep(wait)
            self.check_deadline()  # an outage that outlasts the journey's bound ends it

    def check_deadline(self) -> None:
        """Raise ``LineError("Timeout")`` once the journey has taken ``max_wait``."""
        if self.clock() > self.deadline:
            raise LineError("Timeout", "still waiting after max_wait")

    def recover(self, recoveries: int, answer: Answer) -> int:
        """Count one lost spot or session; too many in a row end the journey."""
        if recoveries >= MAX_RECOVERIES:
            raise LineError(answer.error or "Gone", "lost the spot again and again", answer.status)
        return recoveries + 1

    def refused(self, answer: Answer) -> None:
        """Raise for a refusal: ``LineClosed`` for good, ``LineError`` otherwise."""
        code = answer.error or f"HTTP{answer.status}"
        message = str(answer.body.get("message") or "")
        self.ticket = None
        if code in FINAL_ERRORS or answer.status == 403:
            self.tell({"state": "closed"})
            raise LineClosed(code, message, answer.status)
        self.tell({"state": "error", "code": code})
        raise LineError(code, message, answer.status)

    def tell(self, state: dict[str, Any]) -> None:
        """Tell the app a state change."""
        if self.on_state is not None:
            self.on_state(state)
