"""Edge enforcement: protect a site's paths with offline-verified admissions.

``AnteroomMiddleware`` wraps any WSGI app (Flask, Django, plain WSGI). Unprotected paths pass
untouched. On a protected path a valid admission (cookie ``_abq`` or header
``Anteroom-Admission``) passes after an offline check, with no call to Anteroom; once older than
``refresh_after`` seconds it is renewed through ``/api/v1/admission/refresh``. A ``?abq=`` hand-over
becomes the cookie with a 307 to the clean URL. Everything else is refused: a browser navigation
is sent (303) to the room's hosted page, anything else gets 429 + ``Retry-After`` + JSON
``QueueRequired``. An app may queue through by sending its ticket in ``Anteroom-Ticket``.
Every refusal names its reason in ``Anteroom-Enforcement``. Standard library only.
"""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from .tokens import Keyring
from .verify import verify_admission

__all__ = ["AnteroomEdge", "AnteroomMiddleware", "EdgeConfig"]

COOKIE = "_abq"
ADMISSION_HEADER = "Anteroom-Admission"
TICKET_HEADER = "Anteroom-Ticket"
REASON_HEADER = "Anteroom-Enforcement"
QUEUE_RETRY_SEC = 5
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@dataclass
class EdgeConfig:
    """What the middleware needs: the keyring, where Anteroom is, and what to protect."""

    keys: str | Mapping[str, bytes] | Keyring
    base_url: str
    public_key: str
    routes: Mapping[str, str]  # path prefix → room slug
    refresh_after: float = 15.0
    timeout: float = 2.0
    client_ip: Callable[[dict[str, Any]], str | None] = field(
        default=lambda environ: environ.get("REMOTE_ADDR")
    )
    session_jti: Callable[[dict[str, Any]], str | None] = field(default=lambda environ: None)
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self.keys = Keyring.coerce(self.keys)
        self.base_url = self.base_url.rstrip("/")
        # Longest prefix first, so /api/cart wins over /api.
        self.routes = dict(sorted(self.routes.items(), key=lambda kv: -len(kv[0])))


def _header(environ: dict[str, Any], name: str) -> str:
    return str(environ.get("HTTP_" + name.upper().replace("-", "_"), ""))


def _cookie(environ: dict[str, Any], name: str) -> str | None:
    for part in _header(environ, "Cookie").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _host_is_local(environ: dict[str, Any]) -> bool:
    host = _header(environ, "Host") or str(environ.get("SERVER_NAME", ""))
    host = host[: host.find("]") + 1] if host.startswith("[") else host.split(":", 1)[0]
    return host in _LOCAL_HOSTS


def _url(environ: dict[str, Any], query: str | None = None) -> str:
    scheme = environ.get("wsgi.url_scheme", "http")
    host = _header(environ, "Host") or f"{environ.get('SERVER_NAME')}:{environ.get('SERVER_PORT')}"
    path = quote(str(environ.get("SCRIPT_NAME", "")) + str(environ.get("PATH_INFO", "")))
    query = environ.get("QUERY_STRING", "") if query is None else query
    return f"{scheme}://{host}{path}" + (f"?{query}" if query else "")


def _is_navigation(environ: dict[str, Any]) -> bool:
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
        return False
    mode = _header(environ, "Sec-Fetch-Mode")
    if mode and mode != "navigate":
        return False
    accept = _header(environ, "Accept")
    return "text/html" in accept and "application/json" not in accept.split(",")[0]


class AnteroomMiddleware:
    """WSGI middleware enforcing admissions on the configured path prefixes."""

    def __init__(self, app: WSGIApp, config: EdgeConfig | None = None, **options: Any) -> None:
        self.app = app
        self.config = config or EdgeConfig(**options)

    def room_for(self, path: str) -> str | None:
        """Slug protecting ``path``, or None."""
        for prefix, slug in self.config.routes.items():
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return slug
        return None

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        room = self.room_for(str(environ.get("PATH_INFO", "")))
        if room is None:
            return self.app(environ, start_response)
        return self._enforce(environ, start_response, room)

    # -- the checks -------------------------------------------------------------------------

    def _verify(self, token: str, environ: dict[str, Any], room: str) -> tuple[str | None, dict]:
        """(refusal reason or None, claims) for an admission token."""
        c = self.config
        result = verify_admission(
            token,
            c.keys,
            room=room,
            client_ip=c.client_ip(environ),
            session_jti=c.session_jti(environ),
            now=c.clock(),
        )
        if result.valid:
            return None, result.claims or {}
        reason = result.reason or "malformed"
        if reason in ("malformed", "forged", "expired", "unknown-key"):
            return f"queue:admission-{reason}", {}
        return f"queue:{reason}", {}

    def _enforce(
        self, environ: dict[str, Any], start_response: StartResponse, room: str
    ) -> Iterable[bytes]:
        query = parse_qsl(str(environ.get("QUERY_STRING", "")), keep_blank_values=True)
        handed = [v for k, v in query if k == "abq"]
        if handed:
            reason, claims = self._verify(handed[-1], environ, room)
            if reason is None:
                clean = urlencode([(k, v) for k, v in query if k != "abq"])
                headers = [("Location", _url(environ, clean)), ("Cache-Control", "no-store")]
                headers.append(("Set-Cookie", self._cookie(environ, handed[-1], claims)))
                start_response("307 Temporary Redirect", [*headers, ("Content-Length", "0")])
                return [b""]
            return self._refuse(environ, start_response, room, reason)

        ticket = _header(environ, TICKET_HEADER)
        token = _header(environ, ADMISSION_HEADER) or _cookie(environ, COOKIE)
        if token:
            reason, claims = self._verify(token, environ, room)
            if reason is None:
                return self._pass(environ, start_response, token, claims)
            if not ticket:
                return self._refuse(environ, start_response, room, reason)
        if ticket:
            return self._queue_through(environ, start_response, room, ticket)
        return self._refuse(environ, start_response, room, "queue:no-admission")

    # -- outcomes ---------------------------------------------------------------------------

    def _cookie(self, environ: dict[str, Any], token: str, claims: dict) -> str:
        life = max(0, int(claims.get("exp", 0) - self.config.clock()))
        cookie = f"{COOKIE}={token}; Path=/; Max-Age={life}; HttpOnly; SameSite=Lax"
        return cookie if _host_is_local(environ) else cookie + "; Secure"

    def _pass(
        self,
        environ: dict[str, Any],
        start_response: StartResponse,
        token: str,
        claims: dict,
        issued_header: bool = False,
    ) -> Iterable[bytes]:
        """Let the request through; renew an old admission on the way (best effort)."""
        extra: list[tuple[str, str]] = []
        if issued_header:
            extra.append((ADMISSION_HEADER, token))
        elif self.config.clock() - float(claims.get("iat", 0)) >= self.config.refresh_after:
            fresh = self._refresh(token)
            if fresh:
                fresh_claims = self._verify(fresh, environ, str(claims.get("q", "")))[1]
                if _header(environ, ADMISSION_HEADER):
                    extra.append((ADMISSION_HEADER, fresh))
                else:
                    extra.append(("Set-Cookie", self._cookie(environ, fresh, fresh_claims)))

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, list(headers) + extra, exc_info)

        return self.app(environ, start)

    def _refuse(
        self, environ: dict[str, Any], start_response: StartResponse, room: str, reason: str
    ) -> Iterable[bytes]:
        c = self.config
        page = f"{c.base_url}/queue/{quote(room)}?" + urlencode(
            {"key": c.public_key, "return": _url(environ)}
        )
        if _is_navigation(environ) and not _header(environ, TICKET_HEADER):
            headers = [("Location", page), (REASON_HEADER, reason), ("Cache-Control", "no-store")]
            start_response("303 See Other", [*headers, ("Content-Length", "0")])
            return [b""]
        return self._too_many(start_response, room, reason, QUEUE_RETRY_SEC, {"queuePage": page})

    def _too_many(
        self,
        start_response: StartResponse,
        room: str,
        reason: str,
        retry: int,
        extra: dict[str, Any],
    ) -> Iterable[bytes]:
        # 429, never 503: a line is not an outage, and must not light up the site's alerts.
        body = {
            "error": "QueueRequired",
            "message": "This resource is behind a waiting room; queue first.",
            "room": room,
            "api": f"{self.config.base_url}/api/v1",
            "retryAfter": retry,
        } | extra
        body.setdefault(
            "queuePage", f"{self.config.base_url}/queue/{quote(room)}?key={self.config.public_key}"
        )
        data = json.dumps(body).encode()
        start_response(
            "429 Too Many Requests",
            [
                ("Content-Type", "application/json"),
                ("Retry-After", str(retry)),
                (REASON_HEADER, reason),
                ("Cache-Control", "no-store"),
                ("Content-Length", str(len(data))),
            ],
        )
        return [data]

    def _queue_through(
        self, environ: dict[str, Any], start_response: StartResponse, room: str, ticket: str
    ) -> Iterable[bytes]:
        """Poll the app's ticket: 429 while it waits, pass once admitted."""
        answer = self._post(
            "/api/v1/queue/poll", {"apiKey": self.config.public_key, "ticket": ticket}
        )
        if answer is None or answer.get("status") not in ("waiting", "held", "admitted"):
            return self._too_many(
                start_response, room, "queue:no-admission", QUEUE_RETRY_SEC, {"status": "unknown"}
            )
        if answer["status"] == "admitted" and answer.get("token"):
            reason, claims = self._verify(answer["token"], environ, room)
            if reason is None:
                return self._pass(environ, start_response, answer["token"], claims, True)
            return self._too_many(start_response, room, reason, QUEUE_RETRY_SEC, {})
        retry = max(1, math.ceil((answer.get("pollAfterMs") or 5000) / 1000))
        figures = {k: answer.get(k) for k in ("status", "position", "etaSeconds")}
        return self._too_many(start_response, room, "queue:no-admission", retry, figures)

    # -- talking to Anteroom ------------------------------------------------------------------

    def _refresh(self, token: str) -> str | None:
        answer = self._post(
            "/api/v1/admission/refresh", {"apiKey": self.config.public_key, "token": token}
        )
        fresh = answer.get("token") if answer else None
        return fresh if isinstance(fresh, str) else None

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """POST JSON to Anteroom; None when it is unreachable or answers an error."""
        request = urllib.request.Request(
            self.config.base_url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as response:
                answer = json.loads(response.read(65536))
        except (urllib.error.URLError, OSError, ValueError):
            return None
        return answer if isinstance(answer, dict) else None


class AnteroomEdge:
    """Flask extension: ``AnteroomEdge(app, keys=…, base_url=…, public_key=…, routes=…)``.

    It only wraps ``app.wsgi_app`` with :class:`AnteroomMiddleware`, so it needs no Flask import.
    """

    def __init__(self, app: Any = None, **options: Any) -> None:
        self.options = options
        self.middleware: AnteroomMiddleware | None = None
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Any) -> None:
        """Protect ``app`` (a Flask app) with the configured routes."""
        options = dict(self.options)
        for name in ("keys", "base_url", "public_key", "routes"):
            options.setdefault(name, app.config.get("ANTEROOM_EDGE_" + name.upper()))
        self.middleware = AnteroomMiddleware(app.wsgi_app, **options)
        app.wsgi_app = self.middleware
