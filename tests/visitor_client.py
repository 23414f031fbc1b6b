"""A small visitor for tests: challenge → identify → enter → poll through the real app."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from anteroom import pow

HUMAN = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0", "Accept-Language": "en"}


class Visitor:
    """One browser-like visitor of one environment, speaking the visitor API."""

    def __init__(self, client: FlaskClient, api_key: str, address: str = "203.0.113.7") -> None:
        self.client = client
        self.api_key = api_key
        self.address = address
        self.session: str | None = None
        self.ticket: str | None = None
        self.last: dict[str, Any] = {}

    def post(self, path: str, body: dict[str, Any], **headers: str) -> TestResponse:
        return self.client.post(
            "/api/v1/" + path,
            json=body,
            headers=HUMAN | headers,
            environ_base={"REMOTE_ADDR": self.address},
        )

    def identify(self, signals: dict[str, Any] | None = None, **headers: str) -> TestResponse:
        challenge = self.post("challenge", {"apiKey": self.api_key}, **headers)
        assert challenge.status_code == 200, challenge.json
        token, bits = challenge.json["challenge"], challenge.json["difficulty"]  # type: ignore[index]
        body = {
            "apiKey": self.api_key,
            "challenge": token,
            "solution": pow.solve(token, bits),
            "signals": signals if signals is not None else {"webdriver": False, "languages": 2},
        }
        if self.session:
            body["previousSession"] = self.session
        response = self.post("identify", body, **headers)
        if response.status_code == 200:
            self.session = response.json["sessionToken"]  # type: ignore[index]
        return response

    def enter(self, room: str) -> TestResponse:
        if self.session is None:
            assert self.identify().status_code == 200
        response = self.post(
            "queue/enter", {"apiKey": self.api_key, "room": room, "sessionToken": self.session}
        )
        self._keep(response)
        return response

    def poll(self) -> TestResponse:
        response = self.post("queue/poll", {"apiKey": self.api_key, "ticket": self.ticket})
        self._keep(response)
        return response

    def leave(self) -> TestResponse:
        return self.post("queue/leave", {"apiKey": self.api_key, "ticket": self.ticket})

    def _keep(self, response: TestResponse) -> None:
        if response.status_code == 200:
            self.last = response.json  # type: ignore[assignment]
            self.ticket = self.last.get("queueToken") or self.ticket
