"""Edge enforcement for ASGI apps (FastAPI, Starlette, Django's ASGI): the WSGI edge's decision.

``AnteroomASGIMiddleware`` wraps any ASGI app with the options of ``AnteroomMiddleware``::

    app.add_middleware(AnteroomASGIMiddleware, keys=os.environ["ANTEROOM_KEYS"],
                       base_url="https://queue.shop.example", public_key="pk_…",
                       routes={"/checkout": "spring-drop", "/api/cart": "spring-drop"})

It reads the scope into the same facts as a WSGI request (the path as bytes tunnelled as
latin-1, ``root_path`` as ``SCRIPT_NAME``, the target as sent from ``raw_path``), asks
``edge_decision.decide`` and carries the decision out in ASGI messages. The app finds the
admission's claims with ``admission(scope)``. A WebSocket handshake to a protected path is
decided alike; one the edge would refuse is closed before it is accepted (the server answers
403). Options that read the request (``client_ip``, ``session_jti``) are given a WSGI-like dict:
``REMOTE_ADDR``, ``HTTP_*`` headers, and the scope as ``asgi.scope``.

When the decision needs Anteroom (a ticket's poll, an admission's renewal), the call is made in a
worker thread (``asyncio.to_thread``), so a slow Anteroom never stalls the event loop; every
other request is decided inline. Standard library only.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote, unquote_to_bytes

from anteroom.sdk.edge_client import AnteroomClient, http_transport
from anteroom.sdk.edge_decision import Decision, EdgeConfig, EdgeState, Facts, decide
from anteroom.sdk.message_signatures import SignedRequest

__all__ = ["AnteroomASGIMiddleware"]

ADMISSION_SCOPE = "anteroom.admission"  # the same key as the WSGI environ's
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_SCHEMES = {"ws": "http", "wss": "https"}  # a WebSocket's cookie is its page's


def _wsgi_str(text: str) -> str:
    """Text as WSGI spells it: its UTF-8 bytes, one character each."""
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


def paths_of(scope: Scope) -> tuple[str, str | None, str]:
    """(PATH_INFO, the path as sent or None, SCRIPT_NAME) of an HTTP or WebSocket scope."""
    script_name = _wsgi_str(scope.get("root_path") or "")
    raw_path = scope.get("raw_path")
    if isinstance(raw_path, bytes):
        raw = raw_path.decode("latin-1")
        full = unquote_to_bytes(raw).decode("latin-1")
    else:
        raw, full = None, _wsgi_str(scope.get("path") or "")
    # The path includes root_path (ASGI); a server that leaves it out gives the app's path.
    if script_name and full.startswith(script_name):
        full = full[len(script_name) :]
    return full, raw, script_name


def _headers_of(scope: Scope) -> dict[str, str]:
    """Request headers by lower-case name, repeated ones joined as a WSGI server joins them."""
    headers: dict[str, str] = {}
    for name, value in scope.get("headers") or ():
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        if key in headers:
            text = headers[key] + ("; " if key == "cookie" else ",") + text
        headers[key] = text
    return headers


def environ_of(scope: Scope, headers: dict[str, str]) -> dict[str, Any]:
    """The WSGI-like dict the options' callables read (``client_ip``, ``session_jti``)."""
    environ: dict[str, Any] = {
        "HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()
    }
    client = scope.get("client")
    if client:
        environ["REMOTE_ADDR"] = client[0]
    environ["asgi.scope"] = scope
    return environ


class AnteroomASGIMiddleware:
    """ASGI middleware enforcing admissions on the configured path prefixes."""

    def __init__(self, app: ASGIApp, config: EdgeConfig | None = None, **options: Any) -> None:
        self.app = app
        self.config = config or EdgeConfig(**options)
        self.state = EdgeState()
        self.anteroom = AnteroomClient(
            http_transport(self.config.base_url, self.config.timeout), self.config.clock
        )

    def facts(self, scope: Scope, headers: dict[str, str]) -> Facts:
        """What the decision needs to know of this request."""
        c = self.config
        path, raw, script_name = paths_of(scope)
        environ = environ_of(scope, headers)
        server = scope.get("server") or ("localhost", None)
        host = headers.get("host") or (f"{server[0]}:{server[1]}" if server[1] else server[0])
        full = script_name + path
        scheme = str(scope.get("scheme") or "http")
        url_path = raw if raw and raw.startswith("/") else None
        return Facts(
            method=str(scope.get("method", "GET")),
            path=path,
            query=(scope.get("query_string") or b"").decode("latin-1"),
            headers=headers,
            raw_path=raw,
            url_path=url_path or quote(full.encode("latin-1"), safe="/;=,@:!$&'()*+~"),
            scheme=_SCHEMES.get(scheme, scheme),
            host=host,
            client_ip=c.client_ip(environ),
            session_jti=c.session_jti(environ),
            now=c.clock(),
            script_name=script_name,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)  # lifespan
        path, raw, script_name = paths_of(scope)
        match = self.config.route_table.match(path, raw, script_name)
        if match.room is None:
            return await self.app(scope, receive, send)  # not ours: nothing read, nothing added
        headers = _headers_of(scope)
        facts = self.facts(scope, headers)
        user_agent = headers.get("user-agent")
        if self.config.claims_crawler(user_agent):
            # Its DNS questions block (up to dns_timeout): never on the event loop.
            facts.crawler = await asyncio.to_thread(
                self.config.verified_crawler, facts.client_ip, user_agent
            )
        if self.config.checks_agent(facts):
            signed = SignedRequest(
                facts.method, facts.scheme, facts.host, facts.url_path, facts.query, headers
            )
            # Its directory fetch blocks (up to agent_timeout): never on the event loop.
            facts.agent = await asyncio.to_thread(self.config.signed_agent, facts, signed)
        decision = decide(facts, self.config, self.state, match)
        while decision.call is not None and decision.kind == "call":
            # A call to Anteroom blocks (urllib, up to `timeout`): never on the event loop.
            decision = await asyncio.to_thread(self.anteroom.answer, decision.call)
        await self.apply(decision, scope, receive, send)

    async def apply(self, decision: Decision, scope: Scope, receive: Receive, send: Send) -> None:
        """Carry out ``decision`` for this request."""
        if decision.kind == "respond":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})  # before accept: a 403
                return
            body = b"" if decision.body is None else json.dumps(decision.body).encode()
            headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in decision.headers]
            headers.append((b"content-length", str(len(body)).encode()))
            start = {"type": "http.response.start", "status": decision.status, "headers": headers}
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        if decision.claims is not None:
            scope = dict(scope)
            scope[ADMISSION_SCOPE] = decision.claims
        if not decision.headers:
            return await self.app(scope, receive, send)  # the fast path: nothing to add
        added = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in decision.headers]

        async def send_with_headers(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                message = dict(message)
                message["headers"] = [*message.get("headers", ()), *added]
            await send(message)

        await self.app(scope, receive, send_with_headers)
