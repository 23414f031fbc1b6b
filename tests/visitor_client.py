"""One visitor for tests and bench/: challenge → solve → identify → enter → poll → leave.

It speaks the visitor API through the Flask test client or over HTTP to a live server; either
way every call returns the answer as it came (``status_code``, ``json``, ``headers``, ``text``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Protocol, Self

import requests
from flask.testing import FlaskClient

from anteroom.identity import proof_of_work as pow

HUMAN = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0", "Accept-Language": "en"}
SIGNALS = {"webdriver": False, "languages": 2}  # what the browser agent reports for a person
FLASK_ADDRESS = "203.0.113.7"  # the REMOTE_ADDR of a test-client visitor who names none


class Answer(Protocol):
    """An HTTP answer: werkzeug's ``TestResponse`` is one, ``HttpAnswer`` another."""

    status_code: int
    headers: Any

    @property
    def json(self) -> Any: ...

    @property
    def text(self) -> str: ...


class Transport(Protocol):
    """How requests reach the app; ``address`` is the visitor's (None: the transport's own)."""

    def post(
        self, path: str, body: Any, headers: Mapping[str, str], address: str | None
    ) -> Answer: ...

    def close(self) -> None: ...


class FlaskTransport:
    """Through the Flask test client; the address is the REMOTE_ADDR the app sees."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client

    def post(self, path: str, body: Any, headers: Mapping[str, str], address: str | None) -> Answer:
        remote = FLASK_ADDRESS if address is None else address
        return self.client.post(
            path, json=body, headers=dict(headers), environ_base={"REMOTE_ADDR": remote}
        )

    def close(self) -> None:
        pass


class HttpAnswer:
    """A ``requests`` response, shaped like werkzeug's (``json`` is the parsed body or None)."""

    def __init__(self, response: requests.Response) -> None:
        self.response = response
        self.status_code = response.status_code
        self.headers = response.headers
        self.text = response.text

    @property
    def json(self) -> Any:
        try:
            return self.response.json()
        except ValueError:
            return None


class HttpTransport:
    """Over HTTP to a live server, on keep-alive connections. The address goes in
    X-Forwarded-For: the live servers in these tests trust one proxy hop."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.session = requests.Session()

    def post(self, path: str, body: Any, headers: Mapping[str, str], address: str | None) -> Answer:
        sent = dict(headers) | ({"X-Forwarded-For": address} if address else {})
        response = self.session.post(self.base_url + path, json=body, headers=sent, timeout=10)
        return HttpAnswer(response)

    def close(self) -> None:
        self.session.close()


def solve(api_key: str, issued: Mapping[str, Any]) -> dict[str, str]:
    """The identify body answering ``issued`` (a challenge answer), the proof of work done."""
    token = issued["challenge"]
    return {
        "apiKey": api_key,
        "challenge": token,
        "solution": pow.solve(token, issued["difficulty"]),
    }


def solve_arrival(issued: Mapping[str, Any], count: int | None = None) -> list[str]:
    """Solutions to the first ``count`` (default: ``minPuzzles``) puzzles of an arrival."""
    puzzles = issued["puzzles"][: count or issued["minPuzzles"]]
    return [pow.solve(p["prefix"], p["difficulty"]) for p in puzzles]


class Visitor:
    """One browser-like visitor of one environment, speaking the visitor API.

    ``via`` is a Flask test client, a live server's base URL, or a transport to share.
    """

    def __init__(
        self,
        via: FlaskClient | str | Transport,
        api_key: str,
        address: str | None = None,
        headers: Mapping[str, str] = HUMAN,
    ) -> None:
        if isinstance(via, str):
            via = HttpTransport(via)
        elif isinstance(via, FlaskClient):
            via = FlaskTransport(via)
        self.transport: Transport = via
        self.api_key = api_key
        self.address = address
        self.headers = dict(headers)
        self.session: str | None = None
        self.ticket: str | None = None
        self.last: dict[str, Any] = {}

    def post(self, path: str, body: Any, **headers: str) -> Answer:
        """POST ``body`` as it is to /api/v1/``path``."""
        return self.transport.post("/api/v1/" + path, body, self.headers | headers, self.address)

    def solved(self, **headers: str) -> dict[str, str]:
        """A fresh challenge, solved: an identify body without signals."""
        issued = self.post("challenge", {"apiKey": self.api_key}, **headers)
        assert issued.status_code == 200, issued.text
        return solve(self.api_key, issued.json)

    def identify(self, signals: dict[str, Any] | None = None, **headers: str) -> Answer:
        body: dict[str, Any] = self.solved(**headers)
        body["signals"] = SIGNALS if signals is None else signals
        if self.session:
            body["previousSession"] = self.session
        response = self.post("identify", body, **headers)
        if response.status_code == 200:
            self.session = response.json["sessionToken"]
        return response

    def enter(self, room: str, invite: str | None = None) -> Answer:
        """Enter ``room`` (with an ``invite``), identifying first if this visitor has no session
        yet."""
        if self.session is None:
            identified = self.identify()
            assert identified.status_code == 200, identified.text
        body = {"apiKey": self.api_key, "room": room, "sessionToken": self.session}
        if invite is not None:
            body["invite"] = invite
        response = self.post("queue/enter", body)
        self._keep(response)
        return response

    def arrive(self, room: str, **headers: str) -> Answer:
        """An arrival's first call: the challenge for ``room``."""
        return self.post("arrive", {"apiKey": self.api_key, "room": room}, **headers)

    def join_body(self, room: str, issued: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
        """The join body answering ``issued`` (its floor's puzzles solved)."""
        body = {"apiKey": self.api_key, "room": room, "challenge": issued["challenge"]}
        body |= {"solutions": solve_arrival(issued), "signals": SIGNALS}
        if self.session:
            body["previousSession"] = self.session
        return body | {k: v for k, v in extra.items() if v is not None}

    def join(self, body: Mapping[str, Any], **headers: str) -> Answer:
        """An arrival's second call; keeps the session and the ticket it answers."""
        response = self.post("queue/join", body, **headers)
        if response.status_code == 200:
            self.session = response.json["session"]["sessionToken"]
            self.last = response.json["queue"]
            self.ticket = self.last.get("queueToken") or self.ticket
        return response

    def arrive_and_join(
        self, room: str, invite: str | None = None, **headers: str
    ) -> tuple[Answer, Answer]:
        """The whole two-call arrival: the challenge, then the proof, session and spot."""
        issued = self.arrive(room, **headers)
        assert issued.status_code == 200, issued.text
        body = self.join_body(room, issued.json, invite=invite)
        return issued, self.join(body, **headers)

    def poll(self) -> Answer:
        response = self.post("queue/poll", {"apiKey": self.api_key, "ticket": self.ticket})
        self._keep(response)
        return response

    def leave(self) -> Answer:
        return self.post("queue/leave", {"apiKey": self.api_key, "ticket": self.ticket})

    def admitted(self, room: str) -> str:
        """Enter ``room`` and return the admission it deals at once."""
        answer = self.enter(room)
        assert answer.status_code == 200 and answer.json["status"] == "admitted", answer.text
        token: str = answer.json["token"]
        return token

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _keep(self, response: Answer) -> None:
        if response.status_code == 200:
            self.last = response.json
            self.ticket = self.last.get("queueToken") or self.ticket
