"""The edge's HTTP client: makes the calls to Anteroom a decision asks for, and feeds it back.

``decide`` never does I/O: when it needs Anteroom (a ticket's poll, an admission's renewal) it
returns a ``call``. ``settle`` makes that call through ``AnteroomClient`` and hands the answer to
``call.then``, until the decision is one an adapter can carry out. The transport is ``urllib``
by default; tests give canned answers. Standard library only.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from anteroom.sdk.edge_decision import Call, Decision

__all__ = ["MAX_ANSWER_BYTES", "AnteroomClient", "Transport", "http_transport", "settle"]

# Anteroom's answers are small; a bigger one is not Anteroom's.
MAX_ANSWER_BYTES = 65_536

Transport = Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]


def http_transport(base_url: str, timeout: float) -> Transport:
    """POST JSON to Anteroom with urllib: (HTTP status, JSON object); (0, {}) if unreachable."""

    def post(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            base_url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            with exc:
                status, raw = exc.code, exc.read(MAX_ANSWER_BYTES + 1)
        except (urllib.error.URLError, http.client.HTTPException, OSError):
            return 0, {}
        try:
            answer = json.loads(raw) if raw and len(raw) <= MAX_ANSWER_BYTES else {}
        except ValueError:
            answer = {}
        return status, answer if isinstance(answer, dict) else {}

    return post


class AnteroomClient:
    """Makes the calls decisions ask for through ``transport``; ``calls`` counts them."""

    def __init__(self, transport: Transport, clock: Callable[[], float]) -> None:
        self.transport = transport
        self.clock = clock
        self.calls = 0

    def answer(self, call: Call) -> Decision:
        """Make ``call`` and decide with its answer (and the time it came)."""
        self.calls += 1
        status, answer = self.transport(call.path, call.body)
        return call.then(status, answer, self.clock())


def settle(decision: Decision, client: AnteroomClient) -> Decision:
    """``decision`` once every call it asks for is made: pass, admit or respond."""
    while decision.call is not None and decision.kind == "call":
        decision = client.answer(decision.call)
    return decision
