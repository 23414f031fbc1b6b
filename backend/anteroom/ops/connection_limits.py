"""Connections bounded per client and in time, for ``anteroom serve``'s gevent worker.

- **A deadline per request.** Its headers and body must all arrive within
  ``ANTEROOM_REQUEST_TIMEOUT`` seconds of the moment the worker starts waiting for it (the
  connection's opening, or the previous answer on a kept-alive connection; the headers alone
  still get gunicorn's 2 s keep-alive wait). :class:`RequestGuard` reads the body into memory
  under that deadline before the app runs, so neither the hot path nor a Flask view ever waits on
  the socket; a body still incomplete at the deadline is answered ``408 RequestTimeout`` and its
  connection closed. A slow body used to hold its connection, and its greenlet, for ever.
- **A cap per address.** One address may hold ``ANTEROOM_CONNECTIONS_PER_ADDRESS`` open
  connections in a worker; those past it are closed as they are accepted, before anything is read
  (answering would mean waiting for the request). IPv6 addresses count by their /64, the block
  one subscriber usually gets, or one machine could take a new address per connection.
- **Behind trusted proxies** (``ANTEROOM_TRUSTED_PROXIES`` > 0) the peer is a proxy carrying
  many visitors, so connections are not capped per peer. The same number bounds each forwarded
  visitor's requests in progress in a worker instead (the address the app sees: that many hops
  deep in ``X-Forwarded-For``), counted once a request's headers are read; one past it is answered
  ``429 TooManyConnections`` at once, its body unread, and its connection closed. The instances
  must then be reachable through the proxy only: anyone reaching one directly writes their own
  ``X-Forwarded-For``, for this cap as for every per-address limit.

Both answers, under ``/api/v1/``, carry the visitor API's CORS headers, so a browser's agent on
another origin reads them as refusals (and backs off) rather than as network errors.
"""

from __future__ import annotations

import io
import ipaddress
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gevent
from gunicorn.http.errors import ParseException

from anteroom.config import Settings, metrics_port
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving import metrics, request_log
from anteroom.web.visitor.visitor_api import ANSWER_HEADERS

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask

KEY_LENGTH = 64  # a forwarded value is the client's to write: counted by its first characters
METRICS_PATH, METRICS_LISTENER = metrics.PATH, metrics.LISTENER_KEY
VISITOR_API = "/api/v1/"  # its answers carry its CORS headers, refusals here too
WARN_EVERY_SEC = 60.0  # one log line per address over its cap per minute, not one per connection


@dataclass(frozen=True)
class Limits:
    """The connection limits of a worker (``Settings``' ``request_timeout``,
    ``connections_per_address`` and ``trusted_proxies``)."""

    request_timeout: float = 10.0
    per_address: int = 256  # 0: no cap
    trusted_proxies: int = 0
    metrics_port: int | None = None  # the scraper's own listener, which answers /metrics alone

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """The limits ``settings`` ask for."""
        return cls(
            settings.request_timeout,
            settings.connections_per_address,
            settings.trusted_proxies,
            metrics_port(settings),
        )

    def on_metrics_listener(self, listener: Any) -> bool:
        """Whether a connection accepted by ``listener`` (its socket name) is the scraper's."""
        return (
            self.metrics_port is not None
            and isinstance(listener, tuple)
            and len(listener) >= 2
            and listener[1] == self.metrics_port
        )

    def peer_key(self, addr: Any) -> str | None:
        """What an accepted connection from ``addr`` counts under (None: it is not capped, as
        behind trusted proxies, with no cap, or on a Unix socket)."""
        if self.per_address <= 0 or self.trusted_proxies > 0:
            return None
        if isinstance(addr, tuple) and addr and isinstance(addr[0], str):
            return address_key(addr[0])
        return None

    def visitor_key(self, environ: WSGIEnvironment) -> str | None:
        """What a request counts under behind trusted proxies (None: not behind any)."""
        if self.per_address <= 0 or self.trusted_proxies <= 0:
            return None
        return address_key(forwarded_client(environ, self.trusted_proxies))


def address_key(host: str) -> str:
    """The key an address is counted under: an IPv4 address as it is, an IPv6 one by its /64
    (an IPv4-mapped one as IPv4), anything else (a forwarded value) by its first characters."""
    if ":" not in host:
        return host[:KEY_LENGTH]
    try:
        ip = ipaddress.IPv6Address(host.split("%", 1)[0])
    except ValueError:
        return host[:KEY_LENGTH]
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, 64), strict=False))


def forwarded_client(environ: WSGIEnvironment, hops: int) -> str:
    """The visitor's address as the app sees it behind ``hops`` trusted proxies (werkzeug's
    ProxyFix): that many values from the right of ``X-Forwarded-For``, else the peer's."""
    forwarded = environ.get("HTTP_X_FORWARDED_FOR", "")
    if forwarded:
        values = forwarded.split(",")
        if len(values) >= hops:
            value = values[-hops].strip()
            if value:
                return str(value)
    return str(environ.get("REMOTE_ADDR", ""))


class OpenCounts:
    """How many connections (or requests) each key holds open in this worker, up to ``cap``.

    A worker's greenlets take turns on one thread and nothing here yields: no lock is needed.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.held: dict[str, int] = {}
        self._warned: dict[str, float] = {}

    def take(self, key: str) -> bool:
        """Count one more for ``key``; False (nothing counted) when it holds ``cap`` already."""
        held = self.held.get(key, 0)
        if held >= self.cap:
            return False
        self.held[key] = held + 1
        return True

    def give(self, key: str) -> None:
        """One of ``key``'s is closed."""
        held = self.held.get(key, 0) - 1
        if held > 0:
            self.held[key] = held
        else:
            self.held.pop(key, None)

    def first_refusal(self, key: str) -> bool:
        """True when ``key``'s refusal should be logged: its first in a minute."""
        now = time.monotonic()
        if now - self._warned.get(key, -WARN_EVERY_SEC) < WARN_EVERY_SEC:
            return False
        if len(self._warned) > 10_000:  # addresses long quiet; keep the table small
            self._warned = {k: t for k, t in self._warned.items() if now - t < WARN_EVERY_SEC}
        self._warned[key] = now
        return True


# What reading a body before the app came to.
IN_TIME, LATE, LEFT_UNREAD, MALFORMED = "in time", "late", "left unread", "malformed"


class RequestGuard:
    """WSGI middleware around a worker's app (outermost): the forwarded visitor's cap behind
    trusted proxies, then the body read into memory by the request's deadline.

    ``deadline()`` is this request's deadline (``time.monotonic()`` seconds), ``close()`` has
    gunicorn close the connection after the answer: both are the worker's, per connection.
    """

    def __init__(
        self,
        app: Flask,
        inner: WSGIApplication,
        limits: Limits,
        deadline: Callable[[], float],
        close: Callable[[], None],
        listener: Callable[[], Any] = lambda: None,
    ) -> None:
        self.app = app
        self.listener = listener
        self.inner = inner
        self.limits = limits
        self.max_body = int(app.config["MAX_CONTENT_LENGTH"])
        self.deadline = deadline
        self.close = close
        self.in_progress = OpenCounts(limits.per_address)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        if self.limits.on_metrics_listener(self.listener()):
            # The scraper's address answers /metrics alone, and /metrics there needs no token.
            if environ.get("PATH_INFO") != METRICS_PATH:
                refusal = errors.NotFound("This address serves GET /metrics only.")
                return self._answer(environ, start_response, refusal, started)
            environ[METRICS_LISTENER] = True
        key = self.limits.visitor_key(environ)
        if key is not None and not self.in_progress.take(key):
            self.close()  # its body is unread: the connection cannot carry another request
            metrics.CONNECTION_LIMITS.labels("per_address").inc()
            return self._answer(environ, start_response, errors.TooManyConnections(retry_after=1),
                                started)  # fmt: skip
        try:
            outcome = self._read_body(environ)
            if outcome == LATE:
                self.close()
                metrics.CONNECTION_LIMITS.labels("request_timeout").inc()
                return self._answer(environ, start_response, errors.RequestTimeout(), started)
            if outcome == MALFORMED:
                self.close()
                refusal = errors.BadRequest(
                    "The body's chunked encoding is not valid.",
                    fields={"body": "is not valid chunked encoding"},
                )
                return self._answer(environ, start_response, refusal, started)
            if outcome == LEFT_UNREAD:
                self.close()  # the rest of an over-long body: not worth waiting for
            return self.inner(environ, start_response)
        finally:
            if key is not None:
                self.in_progress.give(key)

    def _read_body(self, environ: WSGIEnvironment) -> str:
        """Read the body into ``wsgi.input`` by the deadline: at most one byte over the app's
        limit (the app refuses what is over it, as it did when it read the socket itself)."""
        declared = environ.get("CONTENT_LENGTH")
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not declared and not chunked:
            return IN_TIME
        if declared:
            length = int(declared)  # gunicorn let digits only through
            if length == 0:
                return IN_TIME
            if length > self.max_body:
                # Refused for its length alone, unread: nothing may wait on the socket for it.
                environ["wsgi.input"] = io.BytesIO()
                return LEFT_UNREAD
            wanted = length
        else:
            wanted = self.max_body + 1
        remaining = self.deadline() - time.monotonic()
        if remaining <= 0:
            return LATE
        stream, data = environ["wsgi.input"], bytearray()
        timer = gevent.Timeout(remaining)
        timer.start()
        try:
            while len(data) < wanted:
                piece = stream.read(wanted - len(data))
                if not piece:
                    break  # the client closed early: the app gets what came, as before
                data += piece
        except gevent.Timeout as fired:
            if fired is not timer:
                raise
            return LATE
        except ParseException:
            return MALFORMED
        finally:
            timer.close()
        environ["wsgi.input"] = io.BytesIO(bytes(data))
        return LEFT_UNREAD if len(data) > self.max_body else IN_TIME

    def _answer(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        error: errors.ApiError,
        started: float,
    ) -> list[bytes]:
        """``error`` as the app words it (JSON), and its request-log line in JSON mode."""
        body = (json.dumps(error.body()) + "\n").encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        if error.retry_after is not None:
            headers.append(("Retry-After", str(error.retry_after)))
        if str(environ.get("PATH_INFO", "")).startswith(VISITOR_API):
            # The visitor API's CORS: else a browser's agent sees a network error, not a refusal.
            headers += ANSWER_HEADERS
        reason = error.name  # werkzeug's phrase for the status
        start_response(f"{error.code} {reason}", headers)
        if request_log.enabled(self.app):
            method = str(environ.get("REQUEST_METHOD", ""))
            elapsed = time.perf_counter() - started
            request_log.write(self._route(environ), method, None, error.code or 0, elapsed)
        return [body]

    def _route(self, environ: WSGIEnvironment) -> str:
        """The route pattern the request was for (never its path: it may carry a token)."""
        try:
            rule, _ = self.app.url_map.bind_to_environ(environ).match(return_rule=True)
        except Exception:
            return "(unmatched)"
        return str(rule.rule)
