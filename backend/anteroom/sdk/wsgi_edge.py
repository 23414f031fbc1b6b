"""Edge enforcement: protect a site's paths with offline-verified admissions.

``AnteroomMiddleware`` wraps any WSGI app (Flask, Django, plain WSGI); ``AnteroomEdge`` is the same
as a Flask extension::

    AnteroomEdge(app, keys=os.environ["ANTEROOM_KEYS"], base_url="https://queue.shop.example",
                 public_key="pk_…", routes={"/checkout": "spring-drop", "/api/cart": "spring-drop"})

Unprotected paths pass untouched. On a protected path (read as the app's router reads it: see
``edge_paths``) a valid admission (cookie ``_abq`` or header ``Anteroom-Admission``) passes after
an offline check, with no call to Anteroom; the app finds its claims in
``environ["anteroom.admission"]``. Once older than ``refresh_after`` seconds it is renewed through
``/api/v1/admission/refresh`` (best effort: while Anteroom is unreachable it counts until its own
expiry). A ``?abq=`` hand-over becomes the cookie with a 307 to the clean URL. Everything else is
refused: a browser navigation is sent (303) to the room's hosted page, anything else gets 429 +
``Retry-After`` + JSON ``QueueRequired``, a path routers read differently 400, a CORS preflight
is answered 204 with the site's ``preflight_headers``. An app may queue
through by sending its ticket in ``Anteroom-Ticket``. Every refusal names its reason in
``Anteroom-Enforcement``. Standard library only.

This module only reads the WSGI request and applies the decision; what to decide is
``edge_decision.decide``, and ``edge_client`` makes the calls to Anteroom it asks for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

from anteroom.sdk.edge_client import AnteroomClient, http_transport, settle
from anteroom.sdk.edge_decision import (
    ADMISSION_HEADER,
    COOKIE,
    HANDOVER_PARAM,
    REASON_HEADER,
    TICKET_HEADER,
    Decision,
    EdgeConfig,
    EdgeState,
    Facts,
    decide,
)
from anteroom.sdk.edge_paths import raw_path_of
from anteroom.sdk.message_signatures import signed_request_of

__all__ = [
    "ADMISSION_ENVIRON",
    "ADMISSION_HEADER",
    "COOKIE",
    "HANDOVER_PARAM",
    "REASON_HEADER",
    "TICKET_HEADER",
    "AnteroomEdge",
    "AnteroomMiddleware",
    "EdgeConfig",
    "admission",
]

ADMISSION_ENVIRON = "anteroom.admission"
# The request headers the decision reads, and their WSGI spellings.
_HEADERS = {
    name: "HTTP_" + name.upper().replace("-", "_")
    for name in (
        "accept",
        "sec-fetch-mode",
        "cookie",
        "anteroom-admission",
        "anteroom-ticket",
        "access-control-request-method",
        "origin",
        "signature-input",
    )
}
_STATUS = {
    200: "200 OK",
    204: "204 No Content",
    303: "303 See Other",
    307: "307 Temporary Redirect",
    400: "400 Bad Request",
    401: "401 Unauthorized",
    403: "403 Forbidden",
    429: "429 Too Many Requests",
}

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def admission(environ: Mapping[str, Any]) -> dict[str, Any] | None:
    """Claims of the admission the middleware let this request through with, or None."""
    claims = environ.get(ADMISSION_ENVIRON)
    return claims if isinstance(claims, dict) else None


def _host(environ: dict[str, Any]) -> str:
    return str(
        environ.get("HTTP_HOST") or f"{environ.get('SERVER_NAME')}:{environ.get('SERVER_PORT')}"
    )


def _raw_target(environ: dict[str, Any]) -> str | None:
    """The request target as the client sent it, when the server says (gunicorn, werkzeug)."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    return raw if isinstance(raw, str) and raw else None


def _url_path(environ: dict[str, Any], raw: str | None) -> str:
    """The path of the request's own URL, as the client spelled it."""
    if raw and raw.startswith("/"):
        return raw.split("?", 1)[0]
    path = str(environ.get("SCRIPT_NAME", "")) + str(environ.get("PATH_INFO", ""))
    try:
        data = path.encode("latin-1")  # WSGI strings are latin-1
    except UnicodeEncodeError:
        data = path.encode("utf-8")  # text: Django puts its decoded path back into META
    return quote(data, safe="/;=,@:!$&'()*+~")


class AnteroomMiddleware:
    """WSGI middleware enforcing admissions on the configured path prefixes."""

    def __init__(self, app: WSGIApp, config: EdgeConfig | None = None, **options: Any) -> None:
        self.app = app
        self.config = config or EdgeConfig(**options)
        self.state = EdgeState()
        # The edge's own headers, and those the bypass rules read.
        self.read_headers = _HEADERS | {
            name: "HTTP_" + name.upper().replace("-", "_") for name in self.config.bypass_headers()
        }
        self.anteroom = AnteroomClient(
            http_transport(self.config.base_url, self.config.timeout), self.config.clock
        )

    def room_for(self, path: str) -> str | None:
        """Slug protecting ``path`` (decoded, without query), or None."""
        return self.config.route_table.match(path).room

    def facts(self, environ: dict[str, Any]) -> Facts:
        """What the decision needs to know of this request."""
        c = self.config
        raw = _raw_target(environ)
        client_ip = c.client_ip(environ)
        facts = Facts(
            method=str(environ.get("REQUEST_METHOD", "GET")),
            path=str(environ.get("PATH_INFO", "")),
            query=str(environ.get("QUERY_STRING", "")),
            headers={n: environ[key] for n, key in self.read_headers.items() if key in environ},
            raw_path=raw_path_of(raw) if raw else None,
            url_path=_url_path(environ, raw),
            scheme=str(environ.get("wsgi.url_scheme", "http")),
            host=_host(environ),
            client_ip=client_ip,
            session_jti=c.session_jti(environ),
            now=c.clock(),
            script_name=str(environ.get("SCRIPT_NAME", "")),
            crawler=c.verified_crawler(client_ip, environ.get("HTTP_USER_AGENT")),
        )
        if c.checks_agent(facts):
            signed = signed_request_of(environ)
            facts.agent = None if signed is None else c.signed_agent(facts, signed)
        return facts

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        raw = _raw_target(environ)
        match = self.config.route_table.match(
            environ.get("PATH_INFO", ""),
            raw_path_of(raw) if raw else None,
            environ.get("SCRIPT_NAME", ""),
        )
        if match.room is None:
            return self.app(environ, start_response)  # not ours: nothing read, nothing added
        decision = decide(self.facts(environ), self.config, self.state, match)
        if decision.kind == "call":
            decision = settle(decision, self.anteroom)
        return self.apply(decision, environ, start_response)

    def apply(
        self, decision: Decision, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        """Carry out ``decision`` for this request."""
        if decision.kind == "respond":
            data = b"" if decision.body is None else json.dumps(decision.body).encode()
            status = _STATUS.get(decision.status, f"{decision.status} Anteroom")
            start_response(status, [*decision.headers, ("Content-Length", str(len(data)))])
            return [data]
        if decision.claims is not None:
            environ[ADMISSION_ENVIRON] = decision.claims
        if not decision.headers:
            return self.app(environ, start_response)  # the fast path: nothing to add
        added = list(decision.headers)

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, [*headers, *added], exc_info)

        return self.app(environ, start)


class AnteroomEdge:
    """Flask extension: ``AnteroomEdge(app, keys=…, base_url=…, public_key=…, routes=…)``.

    Options not given are read from ``app.config["ANTEROOM_EDGE_KEYS"]`` (``…_BASE_URL``,
    ``…_PUBLIC_KEY``, ``…_ROUTES``, and optionally ``…_SECURE_COOKIE``,
    ``…_CASE_SENSITIVE``, ``…_MOUNT``, ``…_LANGUAGES``, ``…_PREFLIGHT_HEADERS``,
    ``…_APP_ANSWERS_OPTIONS``, ``…_BYPASS``, ``…_CRAWLERS``, ``…_DNS_RESOLVER``, ``…_AGENTS``,
    ``…_AGENT_CA_FILE``). It only wraps
    ``app.wsgi_app`` with :class:`AnteroomMiddleware`, so it needs no Flask import; views read
    the admission with ``admission(request.environ)``.
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
        for name in ("secure_cookie", "case_sensitive", "app_answers_options"):
            setting = "ANTEROOM_EDGE_" + name.upper()
            if name not in options and app.config.get(setting) is not None:
                options[name] = bool(app.config[setting])
        for name in (
            "mount",
            "languages",
            "preflight_headers",
            "bypass",
            "crawlers",
            "dns_resolver",
            "agents",
            "agent_ca_file",
            "agent_private_directories",
        ):
            setting = "ANTEROOM_EDGE_" + name.upper()
            if name not in options and app.config.get(setting) is not None:
                options[name] = app.config[setting]
        self.middleware = AnteroomMiddleware(app.wsgi_app, **options)
        app.wsgi_app = self.middleware
        app.extensions["anteroom.edge"] = self
