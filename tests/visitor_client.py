"""A small visitor for tests: challenge → identify → enter → poll through the real app."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from anteroom.identity import proof_of_work as pow

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


class LiveVisitor:
    """A visitor (or an app) speaking the visitor API of a live Anteroom over HTTP."""

    def __init__(self, base_url: str, api_key: str, address: str | None = None) -> None:
        import requests  # only the live-server suites need it

        self.base = base_url + "/api/v1/"
        self.api_key = api_key
        self.http = requests.Session()
        self.http.headers.update(HUMAN)
        if address:
            # Live servers in these tests trust one proxy hop, so this is the address they see.
            self.http.headers["X-Forwarded-For"] = address
        self.session: str | None = None
        self.ticket: str | None = None

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        body = {"apiKey": self.api_key} | body
        response = self.http.post(self.base + path, json=body, timeout=10)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def enter(self, room: str) -> dict[str, Any]:
        if self.session is None:
            challenge = self.post("challenge", {})
            solution = pow.solve(challenge["challenge"], challenge["difficulty"])
            signals = {"webdriver": False, "languages": 2}
            body = {"challenge": challenge["challenge"], "solution": solution, "signals": signals}
            self.session = self.post("identify", body)["sessionToken"]
        answer = self.post("queue/enter", {"room": room, "sessionToken": self.session})
        self.ticket = answer.get("queueToken") or self.ticket
        return answer

    def poll(self) -> dict[str, Any]:
        return self.post("queue/poll", {"ticket": self.ticket})

    def admitted(self, room: str) -> str:
        """Enter ``room`` and return the admission it deals at once."""
        answer = self.enter(room)
        assert answer["status"] == "admitted", answer
        token: str = answer["token"]
        return token
