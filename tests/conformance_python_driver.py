"""The conformance kit's reference client: an app's call through the site SDK's queue-through.

``python tests/conformance_python_driver.py [--http requests|httpx|urllib] [--broken HOW]``
reads the kit's environment (docs/conformance.md), calls ``ANTEROOM_RESOURCE`` through the
queue-through hook, prints each state change as a JSON line and exits 0 when the resource
answered 200, 2 when the room closed or refused us for good, 1 otherwise.

``--broken`` makes it a deliberately wrong client the kit must fail by name:
``ignore-retry-after`` (waits 0.2 s whatever it is told after a refusal), ``reenter-on-error``
(takes a new spot after any error), ``admission-twice`` (sends its admission again),
``fast-poll`` (polls every 0.2 s whatever pollAfterMs says).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend"))

from anteroom.sdk.queue_through import (
    ADMISSION_HEADER,
    QueueThrough,
    httpx_transport,
    open_through,
    requests_session,
)
from anteroom.sdk.visitor_line import Answer, LineClosed, LineError, VisitorLine


def say(state: dict[str, Any]) -> None:
    print(json.dumps(state), flush=True)


class IgnoresRetryAfter(VisitorLine):
    def wait_after_failure(self, answer: Answer, failures: int) -> float | None:
        told = super().wait_after_failure(answer, failures)
        return None if told is None else 0.2


class FastPoll(VisitorLine):
    def wait_after_answer(self, body: Mapping[str, Any], retry_after: float | None) -> float:
        return 0.2


class ReentersOnError(VisitorLine):
    def call(self, path: str, body: Mapping[str, Any]) -> Answer:
        answer = super().call(path, body) if path != "queue/poll" else self.once(path, body)
        return answer

    def once(self, path: str, body: Mapping[str, Any]) -> Answer:
        answer = self.post_json(f"{self.api}/{path}", body, self.headers, self.timeout)
        if answer.status != 200:
            self.sleep(0.3)
            return Answer(410, {"error": "TicketGone"})  # treats any error as a lost spot
        return answer


BROKEN = {
    "ignore-retry-after": IgnoresRetryAfter,
    "fast-poll": FastPoll,
    "reenter-on-error": ReentersOnError,
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", choices=["requests", "httpx", "urllib"], default="requests")
    parser.add_argument("--broken", choices=[*BROKEN, "admission-twice"])
    args = parser.parse_args()
    resource = os.environ["ANTEROOM_RESOURCE"]
    deadline = int(os.environ.get("ANTEROOM_DEADLINE_MS", "60000")) / 1000
    line = BROKEN.get(args.broken or "", VisitorLine)
    qt = QueueThrough(os.environ["ANTEROOM_ROOM"], line_factory=line, on_state=say,
                      max_wait=deadline)  # fmt: skip
    try:
        status, sent = call(args.http, resource, qt)
        if args.broken == "admission-twice" and sent:
            request = urllib.request.Request(resource, headers={ADMISSION_HEADER: sent})
            with urllib.request.urlopen(request, timeout=10) as again:
                again.read()
    except LineClosed as closed:
        say({"state": "closed", "code": closed.code})
        return 2
    except LineError as failed:
        say({"state": "error", "code": failed.code})
        return 1
    if status == 200:
        say({"state": "done"})
        return 0
    say({"state": "error", "code": f"HTTP{status}"})
    return 1


def call(http: str, url: str, qt: QueueThrough) -> tuple[int, str | None]:
    """GET ``url`` through the queue-through hook: (status, the admission it was sent with)."""
    if http == "requests":
        session = requests_session(qt)
        response = session.get(url, timeout=10)
        return response.status_code, response.request.headers.get(ADMISSION_HEADER)
    if http == "httpx":
        import httpx

        with httpx.Client(transport=httpx_transport(qt), timeout=10) as client:
            answer = client.get(url)
            return answer.status_code, answer.request.headers.get(ADMISSION_HEADER)
    request = urllib.request.Request(url)
    try:
        with open_through(request, qt) as response:
            return response.status, request.get_header(ADMISSION_HEADER.capitalize())
    except urllib.error.HTTPError as refused:
        return refused.code, None


if __name__ == "__main__":
    sys.exit(main())
