"""Edge enforcement: protect a site's paths with offline-verified admissions.

``AnteroomMiddleware`` wraps any WSGI app (Flask, Django, plain WSGI); ``AnteroomEdge`` is the same
as a Flask extension::

    AnteroomEdge(app, keys=os.environ["ANTEROOM_KEYS"], base_url="https://queue.shop.example",
                 public_key="pk_…", routes={"/checkout": "spring-drop", "/api/cart": "spring-drop"})

Unprotected paths pass untouched. On a protected path a valid admission (cookie ``_abq`` or header
``Anteroom-Admission``) passes after an offline check, with no call to Anteroom; the app finds its
claims in ``environ["anteroom.admission"]``. Once older than ``refresh_after`` seconds it is renewed
through ``/api/v1/admission/refresh`` (best effort: while Anteroom is unreachable it counts until
its own expiry). A ``?abq=`` hand-over becomes the cookie with a 307 to the clean URL. Everything
else is refused: a browser navigation is sent (303) to the room's hosted page, anything else gets
429 + ``Retry-After`` + JSON ``QueueRequired``. An app may queue through by sending its ticket in
``Anteroom-Ticket``. Every refusal names its reason in ``Anteroom-Enforcement``. Standard library
only.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_plus, urlencode

from .tokens import Keyring
from .verify import verify_admission

__all__ = ["ADMISSION_ENVIRON", "AnteroomEdge", "AnteroomMiddleware", "EdgeConfig", "admission"]

COOKIE = "_abq"
HANDOVER_PARAM = "abq"
ADMISSION_HEADER = "Anteroom-Admission"
TICKET_HEADER = "Anteroom-Ticket"
REASON_HEADER = "Anteroom-Enforcement"
ADMISSION_ENVIRON = "anteroom.admission"
QUEUE_RETRY_SEC = 5
# Renewal attempts remembered per admission (jti), so a burst of requests renews once.
MAX_TRACKED_RENEWALS = 10_000
# Admissions already verified, kept so a visitor's next requests skip the signature and parsing.
MAX_VERIFIED = 4_096
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
# The WSGI spellings of the headers read on every protected request, computed once.
_ADMISSION_KEY = "HTTP_ANTEROOM_ADMISSION"
_TICKET_KEY = "HTTP_ANTEROOM_TICKET"

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def _remote_addr(environ: dict[str, Any]) -> str | None:
    return environ.get("REMOTE_ADDR")


def _no_session(environ: dict[str, Any]) -> str | None:
    return None


@dataclass
class EdgeConfig:
    """What the middleware needs: the keyring, where Anteroom is, and what to protect.

    ``client_ip(environ)`` gives the visitor's address (behind a proxy, put ``ProxyFix`` outside
    the middleware or pass your own); ``session_jti(environ)`` the Anteroom session the request
    presents, when the site knows one (its admission must have been earned by that session).
    ``clock`` is injectable so tests can move time instead of waiting.
    """

    keys: str | Mapping[str, bytes] | Keyring
    base_url: str
    public_key: str
    routes: Mapping[str, str]  # path prefix → room slug
    refresh_after: float = 15.0
    timeout: float = 2.0
    pause_after_failure: float = 5.0  # seconds without calls to Anteroom after it failed us
    client_ip: Callable[[dict[str, Any]], str | None] = field(default=_remote_addr)
    session_jti: Callable[[dict[str, Any]], str | None] = field(default=_no_session)
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self.keys = Keyring.coerce(self.keys)
        if not isinstance(self.base_url, str) or not self.base_url.startswith(
            ("http://", "https://")
        ):
            raise ValueError(f"base_url must be an absolute http(s) URL, not {self.base_url!r}")
        self.base_url = self.base_url.rstrip("/")
        if not isinstance(self.public_key, str) or not self.public_key.startswith("pk_"):
            raise ValueError("public_key must be a public key (pk_…)")
        if not self.routes or not all(p.startswith("/") for p in self.routes):
            raise ValueError("routes must map path prefixes ('/…') to room slugs")
        if self.refresh_after <= 0:
            raise ValueError("refresh_after must be positive")
        # Longest prefix first, so /api/cart wins over /api.
        self.routes = dict(sorted(self.routes.items(), key=lambda kv: -len(kv[0])))


def admission(environ: Mapping[str, Any]) -> dict[str, Any] | None:
    """Claims of the admission the middleware let this request through with, or None."""
    claims = environ.get(ADMISSION_ENVIRON)
    return claims if isinstance(claims, dict) else None


def _cookie(environ: dict[str, Any], name: str) -> str | None:
    header = environ.get("HTTP_COOKIE")
    if not header or name not in header:
        return None
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _split_handover(query: str) -> tuple[str | None, str]:
    """(the last ``abq`` value, the query without it), other parameters verbatim and in order."""
    token: str | None = None
    kept: list[str] = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if unquote_plus(name) == HANDOVER_PARAM:
            token = unquote_plus(value)
        elif part:
            kept.append(part)
    return token, "&".join(kept)


def _host(environ: dict[str, Any]) -> str:
    return str(
        environ.get("HTTP_HOST") or f"{environ.get('SERVER_NAME')}:{environ.get('SERVER_PORT')}"
    )


def _host_is_local(environ: dict[str, Any]) -> bool:
    host = _host(environ)
    host = host[: host.find("]") + 1] if host.startswith("[") else host.split(":", 1)[0]
    return host in _LOCAL_HOSTS


def _url(environ: dict[str, Any], query: str | None = None) -> str:
    """The request's absolute URL, with ``query`` in place of its own when given."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw and raw.startswith("/"):
        path = raw.split("?", 1)[0]  # as the client spelled it
    else:
        path = str(environ.get("SCRIPT_NAME", "")) + str(environ.get("PATH_INFO", ""))
        path = quote(path.encode("latin-1"), safe="/;=,@:!$&'()*+~")  # WSGI strings are latin-1
    query = str(environ.get("QUERY_STRING", "")) if query is None else query
    return f"{environ.get('wsgi.url_scheme', 'http')}://{_host(environ)}{path}" + (
        f"?{query}" if query else ""
    )


def _is_navigation(environ: dict[str, Any]) -> bool:
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
        return False
    mode = environ.get("HTTP_SEC_FETCH_MODE")
    if mode and mode != "navigate":
        return False
    accept = str(environ.get("HTTP_ACCEPT", ""))
    return "text/html" in accept and "application/json" not in accept.split(",")[0]


class AnteroomMiddleware:
    """WSGI middleware enforcing admissions on the configured path prefixes."""

    def __init__(self, app: WSGIApp, config: EdgeConfig | None = None, **options: Any) -> None:
        self.app = app
        self.config = config or EdgeConfig(**options)
        self._routes = tuple(
            (prefix, prefix.rstrip("/") + "/", slug) for prefix, slug in self.config.routes.items()
        )
        self._lock = threading.Lock()
        self._paused_until = 0.0
        self._renewed_at: OrderedDict[str, float] = OrderedDict()
        self._verified: dict[tuple[str, str, str | None, str | None], dict[str, Any]] = {}

    def room_for(self, path: str) -> str | None:
        """Slug protecting ``path``, or None."""
        for prefix, below, slug in self._routes:
            if path == prefix or path.startswith(below):
                return slug
        return None

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        room = self.room_for(environ.get("PATH_INFO", ""))
        if room is None:
            return self.app(environ, start_response)
        return self._enforce(environ, start_response, room)

    # -- the checks -------------------------------------------------------------------------

    def _check(self, token: str, environ: dict[str, Any], room: str) -> tuple[str | None, dict]:
        """(refusal reason or None, claims) for an admission token."""
        c = self.config
        client_ip, session_jti, now = c.client_ip(environ), c.session_jti(environ), c.clock()
        # A visitor shows the same token on every request. Once it verified for this room,
        # address and session, nothing in it can change but its age: only expiry is checked
        # again (as verify_admission does: expired when exp <= now).
        key = (token, room, client_ip, session_jti)
        known = self._verified.get(key)
        if known is not None:
            return (None, dict(known)) if known["exp"] > now else ("queue:admission-expired", {})
        result = verify_admission(
            token, c.keys, room=room, client_ip=client_ip, session_jti=session_jti, now=now
        )
        if result.valid and result.claims is not None:
            if len(self._verified) >= MAX_VERIFIED:
                self._verified.clear()  # bounded; the visitors still active verify again once
            self._verified[key] = result.claims
            return None, dict(result.claims)  # a copy: the app may change its own
        reason = result.reason or "malformed"
        if reason in ("malformed", "forged", "expired", "unknown-key"):
            return f"queue:admission-{reason}", {}
        return f"queue:{reason}", {}

    def _enforce(
        self, environ: dict[str, Any], start_response: StartResponse, room: str
    ) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") == "OPTIONS" and (
            "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in environ
        ):
            # A CORS preflight never carries the admission header it asks about; refusing it
            # would lock out every cross-origin app, and it lets nothing through by itself.
            return self.app(environ, start_response)
        query = environ.get("QUERY_STRING", "")
        if HANDOVER_PARAM in query:
            handed, clean = _split_handover(query)
            if handed is not None:
                return self._hand_over(environ, start_response, room, handed, clean)
        ticket = environ.get(_TICKET_KEY)
        token = environ.get(_ADMISSION_KEY) or _cookie(environ, COOKIE)
        if token:
            reason, claims = self._check(token, environ, room)
            if reason is None:
                return self._pass(environ, start_response, token, claims, room)
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

    def _hand_over(
        self,
        environ: dict[str, Any],
        start_response: StartResponse,
        room: str,
        token: str,
        clean_query: str,
    ) -> Iterable[bytes]:
        """``?abq=`` → the cookie and a 307 to the URL without it; an invalid one sets nothing."""
        reason, claims = self._check(token, environ, room)
        if reason is not None:
            return self._refuse(environ, start_response, room, reason, clean_query)
        headers = [
            ("Location", _url(environ, clean_query)),
            ("Set-Cookie", self._cookie(environ, token, claims)),
            ("Cache-Control", "no-store"),
            # The token was in the address bar: keep it out of the next page's Referer.
            ("Referrer-Policy", "no-referrer"),
            ("Content-Length", "0"),
        ]
        start_response("307 Temporary Redirect", headers)
        return [b""]

    def _pass(
        self,
        environ: dict[str, Any],
        start_response: StartResponse,
        token: str,
        claims: dict,
        room: str,
        issued: bool = False,
    ) -> Iterable[bytes]:
        """Let the request through; renew an old admission on the way (best effort)."""
        environ[ADMISSION_ENVIRON] = claims
        extra: list[tuple[str, str]] | None = None
        if issued:
            extra = [(ADMISSION_HEADER, token)]
        elif self.config.clock() - (claims.get("iat") or 0) >= self.config.refresh_after:
            extra = self._renewal(environ, token, claims, room)
        if not extra:
            return self.app(environ, start_response)  # the fast path: nothing to add
        added = extra

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, [*headers, *added], exc_info)

        return self.app(environ, start)

    def _refuse(
        self,
        environ: dict[str, Any],
        start_response: StartResponse,
        room: str,
        reason: str,
        query: str | None = None,
    ) -> Iterable[bytes]:
        c = self.config
        page = f"{c.base_url}/queue/{quote(room)}?" + urlencode(
            {"key": c.public_key, "return": _url(environ, query)}
        )
        if _is_navigation(environ) and not environ.get(_TICKET_KEY):
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
        status, answer = self._post(
            "/api/v1/queue/poll", {"apiKey": self.config.public_key, "ticket": ticket}
        )
        state = answer.get("status") if status == 200 else None
        token = answer.get("token")
        if state == "admitted" and isinstance(token, str):
            reason, claims = self._check(token, environ, room)
            if reason is None:
                return self._pass(environ, start_response, token, claims, room, issued=True)
            return self._too_many(start_response, room, reason, QUEUE_RETRY_SEC, {})
        if state in ("waiting", "held"):
            retry = max(1, math.ceil((answer.get("pollAfterMs") or 5000) / 1000))
            figures = {k: answer.get(k) for k in ("status", "position", "etaSeconds")}
            return self._too_many(start_response, room, "queue:no-admission", retry, figures)
        # Not waiting: the room is idle, the ticket was refused (gone, invalid: enter again), or
        # Anteroom could not be reached. Say which, and keep to Anteroom's own Retry-After.
        retry = answer.get("retryAfter")
        retry = retry if isinstance(retry, int) and retry > 0 else QUEUE_RETRY_SEC
        figures = {"status": state or "unknown"}
        if isinstance(answer.get("error"), str):
            figures["ticketError"] = answer["error"]
        return self._too_many(start_response, room, "queue:no-admission", retry, figures)

    # -- talking to Anteroom ------------------------------------------------------------------

    def _renewal(
        self, environ: dict[str, Any], token: str, claims: dict, room: str
    ) -> list[tuple[str, str]] | None:
        """Headers carrying a renewed admission, or None (just tried, unreachable, refused)."""
        now = self.config.clock()
        jti = str(claims.get("jti") or token)
        with self._lock:
            if now < self._paused_until:
                return None
            last = self._renewed_at.get(jti)
            # Requests still carrying the old cookie (in flight, other tabs) renew once, and a
            # refused renewal is not asked again on every request.
            if last is not None and now - last < self.config.refresh_after:
                return None
            self._renewed_at[jti] = now
            self._renewed_at.move_to_end(jti)
            while len(self._renewed_at) > MAX_TRACKED_RENEWALS:
                self._renewed_at.popitem(last=False)
        status, answer = self._post(
            "/api/v1/admission/refresh", {"apiKey": self.config.public_key, "token": token}
        )
        fresh = answer.get("token") if status == 200 else None
        if not isinstance(fresh, str):
            return None
        reason, fresh_claims = self._check(fresh, environ, room)
        if reason is not None:
            return None
        environ[ADMISSION_ENVIRON] = fresh_claims
        if environ.get(_ADMISSION_KEY):
            return [(ADMISSION_HEADER, fresh)]
        return [("Set-Cookie", self._cookie(environ, fresh, fresh_claims))]

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST JSON to Anteroom: (HTTP status, JSON object); (0, {}) when it is unreachable.

        After a failure nothing is sent for ``pause_after_failure`` seconds, so an outage costs
        one timeout, not one per request.
        """
        if self.config.clock() < self._paused_until:
            return 0, {}
        request = urllib.request.Request(
            self.config.base_url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as response:
                status, raw = response.status, response.read(65536)
        except urllib.error.HTTPError as exc:
            with exc:
                status, raw = exc.code, exc.read(65536)
        except (urllib.error.URLError, http.client.HTTPException, OSError):
            status, raw = 0, b""
        if status == 0 or status >= 500:
            self._paused_until = self.config.clock() + self.config.pause_after_failure
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = {}
        return status, answer if isinstance(answer, dict) else {}


class AnteroomEdge:
    """Flask extension: ``AnteroomEdge(app, keys=…, base_url=…, public_key=…, routes=…)``.

    Options not given are read from ``app.config["ANTEROOM_EDGE_KEYS"]`` (``…_BASE_URL``,
    ``…_PUBLIC_KEY``, ``…_ROUTES``). It only wraps ``app.wsgi_app`` with
    :class:`AnteroomMiddleware`, so it needs no Flask import; views read the admission with
    ``admission(request.environ)``.
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
            if name not in options:
                setting = "ANTEROOM_EDGE_" + name.upper()
                if app.config.get(setting) is None:
                    raise ValueError(f"AnteroomEdge needs {name}= or app.config[{setting!r}]")
                options[name] = app.config[setting]
        self.middleware = AnteroomMiddleware(app.wsgi_app, **options)
        app.wsgi_app = self.middleware
        app.extensions["anteroom.edge"] = self
