"""The conformance kit's server: the real app on an embedded Redis, a fault-scripting layer in
front of its visitor API, and a protected resource behind the real edge middleware.

One server serves every case of a run, one case at a time. ``begin(case)`` creates the case's
own room (a fresh slug: nothing a client kept from another case matches it) and its resource
path, loads the case's script and clears the record; ``end()`` returns what was recorded.

The layer in front of ``/api/v1/…`` numbers each call by kind (``arrive``, ``join``, ``poll``,
…). A script step ``{"call": "poll", "nth": [1, 2], "answer": {…}}`` answers those calls itself
(status, headers, a JSON or text body) without the app seeing them; ``"then": "close-room"``
lets the app answer and then closes the room for real. Every request is recorded with when it
arrived and when its answer left, and what the judges read of it (``conformance_rules``).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from anteroom.config import Settings
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.sdk.edge_client import AnteroomClient, http_transport
from anteroom.sdk.tokens import AdmissionClaims, Keyring
from anteroom.sdk.wsgi_edge import ADMISSION_ENVIRON, AnteroomMiddleware

ENVIRONMENT = "conformance"
PUBLIC_KEY = "pk_conformance"
API_PREFIX = "/api/v1/"
KINDS = {
    "arrive": "arrive", "challenge": "challenge", "identify": "identify",
    "queue/join": "join", "queue/enter": "enter", "queue/poll": "poll",
    "queue/leave": "leave", "admission/refresh": "refresh",
}  # fmt: skip
PAGE = (
    b"<!doctype html><html lang=en><head><meta charset=utf-8><title>Anteroom conformance"
    b"</title></head><body><main id=kit>conformance kit</main></body></html>"
)
# The room every case gets unless it says otherwise. Its clock is pinned: a visitor waits until
# the kit moves it, at the case's ``admitOnAppPoll``-th poll the app answers (default the first).
ROOM_DEFAULTS: dict[str, Any] = {"ratePerMinute": 600, "holdScore": 100}
ADMIT_SHIFT_MS = 2_000
MAX_BODY = 1 << 20

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@dataclass
class Record:
    """One request the client made, as the judges read it (times in s since the case began)."""

    at: float
    done: float
    kind: str
    method: str
    path: str
    status: int
    retry_after: float | None = None
    poll_after_ms: float | None = None
    answer: str | None = None  # the body's "status" (waiting, admitted, idle)
    error: str | None = None
    ticket: str | None = None  # a poll's ticket (hashed)
    challenge: str | None = None  # a join's challenge (hashed)
    admission: str | None = None  # the admission a resource request carried (hashed)
    scripted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _short(value: Any) -> str | None:
    """A short stable digest of a token: the record never holds a token in full."""
    if not isinstance(value, str) or not value:
        return None
    return hashlib.sha256(value.encode()).hexdigest()[:12]


def _retry_after(headers: Iterable[tuple[str, str]]) -> float | None:
    for name, value in headers:
        if name.lower() == "retry-after":
            try:
                return float(value)
            except ValueError:
                return None
    return None


class CaseState:
    """The case being run: its room, script, call counts and record."""

    def __init__(self, case: dict[str, Any], room_id: str, slug: str, resource: WSGIApp) -> None:
        self.case = case
        self.room_id = room_id
        self.slug = slug
        self.resource = resource
        self.script: list[dict[str, Any]] = list(case.get("script", []))
        self.counts: dict[str, int] = {}
        self.records: list[Record] = []
        self.uses: dict[str, int] = {}  # admission jti -> requests the edge let through with it
        self.app_polls = 0  # polls the app answered
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.started

    def step_for(self, kind: str) -> tuple[int, dict[str, Any] | None]:
        """Number this call of ``kind``; the script step that answers it, if any."""
        with self.lock:
            nth = self.counts[kind] = self.counts.get(kind, 0) + 1
        for step in self.script:
            if step.get("call") == kind and nth in step.get("nth", []):
                return nth, step
        return nth, None


class KitServer:
    """The kit's server on 127.0.0.1 (a free port): ``start()``, ``begin(case)``, ``end()``,
    ``stop()``. ``url`` is its base URL."""

    def __init__(self, data_dir: Path | None = None, port: int = 0) -> None:
        self.owned_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="anteroom-conformance-"))
        self.port = port
        self.redis: EmbeddedRedis | None = None
        self.server: Any = None
        self.thread: threading.Thread | None = None
        self.app: Any = None
        self.engine: Any = None
        self.keys = Keyring.generate().serialize()
        self.case: CaseState | None = None
        self.url = ""

    # -- life -------------------------------------------------------------------------------

    def start(self) -> KitServer:
        """Start Redis, the app and the HTTP server; return once it answers."""
        from werkzeug.serving import make_server

        from anteroom.queue.connection.redis_link import connect
        from anteroom.queue.line.room_engine import Engine
        from anteroom.web.app_factory import create_app

        for name in ("werkzeug", "anteroom", "anteroom.request"):
            logging.getLogger(name).setLevel(logging.ERROR)
        self.redis = EmbeddedRedis(self.data_dir / "redis", port=_free_port()).start()
        settings = Settings(
            redis_url=self.redis.url, keys=self.keys, pow_difficulty=4,
            data_dir=str(self.data_dir), limit_challenge="10000/minute",
            limit_identify="10000/minute", limit_enter="10000/minute",
        )  # fmt: skip
        self.app = create_app(settings)
        self.engine = Engine(connect(self.redis.url), settings.key_prefix)
        self.engine.redis.hset(self.engine.keys.public_keys(), PUBLIC_KEY, ENVIRONMENT)
        self.server = make_server("127.0.0.1", self.port, self.dispatch, threaded=True)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop the HTTP server, the app's threads and Redis (stopping twice is harmless)."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        if self.app is not None:
            from anteroom.web.app_factory import close_app

            close_app(self.app)
            self.app = None
        if self.engine is not None:
            self.engine.redis.close()
            self.engine = None
        if self.redis is not None:
            self.redis.stop()
            self.redis = None
        if self.owned_dir:
            import shutil

            shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- cases ------------------------------------------------------------------------------

    def begin(self, case: dict[str, Any]) -> dict[str, str]:
        """Set up ``case``: its room and resource; the driver's environment variables."""
        name = str(case["name"])
        slug = f"{name}-{secrets.token_hex(3)}"
        config = (
            {
                "slug": slug,
                "name": f"Conformance: {name}",
                "redirectUrl": f"{self.url}/kit/{slug}/done",
            }
            | ROOM_DEFAULTS
            | dict(case.get("room", {}))
        )
        room_id = str(self.engine.create_room(ENVIRONMENT, config)["id"])
        self.engine.open(room_id)
        # Pinned: the line moves only when the kit moves the room's clock (see ``scripted``), so
        # a client that starts slowly (a JVM, a browser) finds the line as one that starts fast.
        self.engine.set_clock(room_id, self.engine.stats(room_id).now_ms)
        ahead = float(case.get("edgeClockAheadSec", 0))
        self.case = CaseState(case, room_id, slug, self.resource_app(slug, ahead))
        return {
            "ANTEROOM_URL": self.url,
            "ANTEROOM_ROOM": PUBLIC_KEY,
            "ANTEROOM_RESOURCE": f"{self.url}/kit/{slug}/resource",
            "ANTEROOM_CASE": name,
        }

    def end(self) -> CaseState:
        """The case just run, its record complete; no case is current afterwards."""
        state, self.case = self.case, None
        assert state is not None, "end() without begin()"
        return state

    def resource_app(self, slug: str, ahead: float = 0.0) -> WSGIApp:
        """The app's own protected API call, behind the real edge; counts each admission.

        ``ahead``: seconds the edge's clock runs ahead of the service's (its injected clock),
        so an admission is already past its expiry when the client shows it."""

        def resource(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
            # The edge put the verified admission's claims here when it let the call through
            # on one (none: let through otherwise, counted under "?").
            given = environ.get(ADMISSION_ENVIRON)
            jti = AdmissionClaims.from_wire(given).admission_id if given else "?"
            state = self.case
            uses = 0
            if state is not None:
                with state.lock:
                    uses = state.uses[jti] = state.uses.get(jti, 0) + 1
            data = json.dumps({"ok": True, "uses": uses}).encode()
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(data)))])  # fmt: skip
            return [data]

        edge = AnteroomMiddleware(
            resource, keys=self.keys, base_url=self.url, public_key=PUBLIC_KEY,
            routes={f"/kit/{slug}": slug}, secure_cookie=False,
            clock=lambda: time.time() + ahead,
        )  # fmt: skip
        # The edge's own calls to Anteroom (a ticket's poll, a renewal) go past the fault layer
        # and the record: they are the edge's, not the client's.
        edge.anteroom = AnteroomClient(
            http_transport(f"{self.url}/_kit/anteroom", edge.config.timeout), edge.config.clock
        )
        return edge

    # -- serving ----------------------------------------------------------------------------

    def dispatch(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Route a request: the edge's own calls, the case's resource, the page, the API."""
        path = str(environ.get("PATH_INFO", ""))
        if path.startswith("/_kit/anteroom/"):
            environ["PATH_INFO"] = path[len("/_kit/anteroom") :]
            if environ["PATH_INFO"] == API_PREFIX + "queue/poll" and self.case is not None:
                self.app_polled(self.case)  # a client queueing through with Anteroom-Ticket
            return self.app(environ, start_response)
        if path == "/kit/page":
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                      ("Content-Length", str(len(PAGE)))])  # fmt: skip
            return [PAGE]
        state = self.case
        if state is None:
            return self.app(environ, start_response)
        if path.startswith(f"/kit/{state.slug}/"):
            token = environ.get("HTTP_ANTEROOM_ADMISSION")
            return self.recorded(state, "resource", environ, start_response, state.resource,
                                 admission=_short(token))  # fmt: skip
        if path.startswith(API_PREFIX) and environ.get("REQUEST_METHOD") == "POST":
            kind = KINDS.get(path[len(API_PREFIX) :], "other")
            return self.scripted(state, kind, environ, start_response)
        return self.app(environ, start_response)

    def scripted(
        self, state: CaseState, kind: str, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        """A visitor API call: answered by the case's script, or by the app."""
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(min(length, MAX_BODY)) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        try:
            sent = json.loads(raw) if raw else {}
        except ValueError:
            sent = {}
        sent = sent if isinstance(sent, dict) else {}
        extra = {"ticket": _short(sent.get("ticket")), "challenge": _short(sent.get("challenge"))}
        _, step = state.step_for(kind)
        if step is not None and "answer" in step:
            return self.recorded(state, kind, environ, start_response,
                                 _canned(step["answer"]), scripted=True, **extra)  # fmt: skip
        if kind == "poll":
            self.app_polled(state)
        answer = self.recorded(state, kind, environ, start_response, self.app, **extra)
        if step is not None and step.get("then") == "close-room":
            self.engine.close(state.room_id)
        elif step is not None and step.get("then") == "fall-silent":
            # The app slept: the room's clock moves past the time a silent spot is kept, so
            # the line drops it (a real 410 at the next poll), as a phone asleep would find.
            kept = int(self.engine.get_room(state.room_id)["abandonAfterSec"])
            self.engine.shift_clock(state.room_id, (kept + 120) * 1000)
        return answer

    def app_polled(self, state: CaseState) -> None:
        """A poll the app answers (the client's, or the edge's for an Anteroom-Ticket): the line
        moves at the case's ``admitOnAppPoll``-th, by two seconds of the room's clock."""
        with state.lock:
            state.app_polls += 1
            due = state.app_polls == state.case.get("admitOnAppPoll", 1)
        if due:
            self.engine.shift_clock(state.room_id, ADMIT_SHIFT_MS)

    def recorded(
        self,
        state: CaseState,
        kind: str,
        environ: dict[str, Any],
        start_response: StartResponse,
        app: WSGIApp,
        scripted: bool = False,
        **extra: Any,
    ) -> Iterable[bytes]:
        """Serve ``environ`` with ``app``, the whole answer read, and record it."""
        at = state.now()
        seen: dict[str, Any] = {}

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            seen["status"], seen["headers"] = int(status.split()[0]), headers
            return start_response(status, headers, exc_info)

        chunks = app(environ, start)
        try:
            body = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        parsed: Any = None
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        parsed = parsed if isinstance(parsed, dict) else {}
        queue = parsed.get("queue") if isinstance(parsed.get("queue"), dict) else parsed
        poll_after = queue.get("pollAfterMs")
        record = Record(
            at=at,
            done=state.now(),
            kind=kind,
            method=str(environ.get("REQUEST_METHOD", "")),
            path=str(environ.get("PATH_INFO", "")),
            status=seen.get("status", 0),
            retry_after=_retry_after(seen.get("headers", [])),
            poll_after_ms=poll_after if isinstance(poll_after, int | float) else None,
            answer=queue.get("status") if isinstance(queue.get("status"), str) else None,
            error=parsed.get("error") if isinstance(parsed.get("error"), str) else None,
            scripted=scripted,
            **extra,
        )
        with state.lock:
            state.records.append(record)
        return [body]


def _canned(answer: dict[str, Any]) -> WSGIApp:
    """A WSGI app giving a script step's answer: ``status``, ``headers``, ``json`` or ``text``."""
    status = int(answer.get("status", 200))
    headers = [(str(k), str(v)) for k, v in answer.get("headers", {}).items()]
    if "json" in answer:
        data = json.dumps(answer["json"]).encode()
        headers.append(("Content-Type", "application/json"))
    else:
        data = str(answer.get("text", "")).encode()
        headers.append(("Content-Type", "text/html; charset=utf-8"))
    headers += [
        ("Content-Length", str(len(data))),
        ("Access-Control-Allow-Origin", "*"),
        ("Access-Control-Expose-Headers", "Retry-After"),
        ("Cache-Control", "no-store"),
    ]
    phrase = {200: "OK", 401: "Unauthorized", 403: "Forbidden", 400: "Bad Request",
              410: "Gone", 429: "Too Many Requests", 503: "Service Unavailable"}  # fmt: skip

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        start_response(f"{status} {phrase.get(status, 'Scripted')}", list(headers))
        return [data]

    return app


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
