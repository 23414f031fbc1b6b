"""The visitor's hot path: ``POST /api/v1/queue/poll`` and ``POST /api/v1/admission/refresh``
(what a waiting crowd sends all day), ``POST /api/v1/arrive`` and ``POST /api/v1/queue/join``
(what an arriving crowd sends once each) answered by a small WSGI function in front of the
Flask app.

A poll is what a waiting crowd sends all day, and most of its cost was Flask's request cycle
(request and response objects, context locals, hooks, header objects), not the poll. Here the
body is read and parsed once (orjson), the key and the token checked once, the engine called as
the views call it, the answer encoded once and counted cheaply. Everything the common case does
not need stays in the Flask views (``visitor_api``), which this hands the request to, body
untouched, whenever the request is not a plain well-formed one or the answer needs their rules:

- the body is missing, chunked, too large, not JSON, not exactly ``{apiKey, <token>}`` as
  ASCII strings: Flask's parser names what is wrong;
- the key or the token is refused: the views word the refusal (nothing was written yet);
- Redis is unreachable: the views apply the room's fail mode.

An arrival's two calls take their body as the views do (the same request models), call the
same use cases (anteroom.visit.arrival) with a ``WebDoor`` over the request's address, and
answer every outcome here, refusals included, with the views' JSON; a body the models refuse,
or an unknown key, is the views' to word (nothing was charged or written yet).

What the engine refuses (gone, rate-limited, revoked, busy) is answered here, with the same
JSON error, headers and CORS, since calling the engine twice would double its cost. The API tests
(``tests/integration/test_visitor_api.py`` and others) run through this path unchanged.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson
from werkzeug.http import HTTP_STATUS_CODES

from anteroom.queue.connection.storage_errors import StorageError, StorageUnavailable
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import arrival, outcomes
from anteroom.web.api import api_routes as routes
from anteroom.web.api.api_models import MAX_STRING_LENGTH, Body
from anteroom.web.pages import public_front
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving import metrics, request_log
from anteroom.web.serving.json_body import validated
from anteroom.web.visitor import address_limits, room_lookup
from anteroom.web.visitor import queue_answers as visitor
from anteroom.web.visitor.visit_door import WebDoor, caller_of
from anteroom.web.visitor.visitor_api import ANSWER_HEADERS
from anteroom.web.visitor.visitor_models import ArriveRequest, JoinRequest

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask

log = logging.getLogger("anteroom")
POLL, REFRESH = routes.POLL_QUEUE.path, routes.REFRESH_ADMISSION.path
ARRIVE, JOIN = routes.ARRIVE.path, routes.JOIN_QUEUE.path
# The body field holding each route's token, as declared for its view.
TOKEN_FIELDS = {route.path: route.token for route in (routes.POLL_QUEUE, routes.REFRESH_ADMISSION)}
STATUS_LINES = {code: f"{code} {text.upper()}" for code, text in HTTP_STATUS_CODES.items()}


class Answer:
    """A finished answer of the hot path: status, JSON body, extra headers, what to log."""

    __slots__ = ("body", "code", "headers", "room")

    def __init__(
        self, code: int, body: dict[str, Any], headers: list[tuple[str, str]], room: str | None
    ) -> None:
        self.code, self.body, self.headers, self.room = code, body, headers, room


class HandOver(Exception):
    """The request is the Flask views' to answer."""


class HotPath:
    """WSGI middleware: the two hot routes here, every other request to ``inner`` (Flask's)."""

    def __init__(self, app: Flask, inner: WSGIApplication) -> None:
        self.app = app
        self.inner = inner
        self.max_body = int(app.config["MAX_CONTENT_LENGTH"])
        self.handlers: dict[str, Callable[[Services, tuple[str, str]], Answer]] = {
            POLL: _poll,
            REFRESH: _refresh,
        }
        # An arrival's calls: the whole body (a JSON object) and the request's environ.
        self.arrivals: dict[str, Callable[[HotPath, Services, Any, WSGIEnvironment], Answer]] = {
            ARRIVE: _arrive,
            JOIN: _join,
        }

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        route = environ.get("PATH_INFO", "")
        handler = self.handlers.get(route)
        arriving = self.arrivals.get(route) if handler is None else None
        if handler is None and arriving is None:
            public = public_front.route_of(route)
            if public is not None:
                return self._public(environ, start_response, *public)
            return self.inner(environ, start_response)
        if environ.get("REQUEST_METHOD") != "POST":
            return self.inner(environ, start_response)
        started = time.perf_counter()
        body = self._body(environ)
        if body is None:
            return self.inner(environ, start_response)
        services: Services = self.app.extensions["anteroom"]
        services.on_request()  # what the app's before_request does for Flask
        try:
            if handler is not None:
                answer = handler(services, _fields(body, TOKEN_FIELDS[route]))
            else:
                answer = arriving(self, services, _object(body), environ)  # type: ignore[misc]
        except HandOver:
            environ["wsgi.input"] = io.BytesIO(body)  # Flask reads the body afresh
            return self.inner(environ, start_response)
        except StorageError as exc:
            # As the app's storage handler (http_errors): Redis trouble no use case mapped is
            # the documented 503 or 429, never a 500. An arrival cannot be handed over here:
            # the per-address limits it charged would be charged again by the views.
            answer = _error(errors.storage_refusal(exc), None)
        except Exception as exc:  # as Flask's last-resort handler: logged, JSON 500
            log.exception("unexpected error", exc_info=exc)
            answer = _error(errors.InternalError(), None)
        data = orjson.dumps(answer.body) + b"\n"  # the trailing newline, as Flask's jsonify
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        headers += answer.headers
        headers += ANSWER_HEADERS
        start_response(STATUS_LINES[answer.code], headers)
        elapsed = time.perf_counter() - started
        seen = self.app.extensions["anteroom_breaker_seen"]
        metrics.observe(route, "POST", answer.code, elapsed, answer.body, services.breaker, seen)
        if request_log.enabled(self.app):
            request_log.write(route, "POST", answer.room, answer.code, elapsed)
        return [data]

    def _public(
        self, environ: WSGIEnvironment, start_response: StartResponse, slug: str, which: str
    ) -> Iterable[bytes]:
        """A draw's public document (web/pages/public_front.py), or the views' answer."""
        try:
            found = public_front.answer(self.app, environ, slug, which)
        except Exception as exc:  # as Flask's last-resort handler would: the views try again
            log.exception("unexpected error", exc_info=exc)
            found = None
        if found is None:
            return self.inner(environ, start_response)
        start_response(STATUS_LINES[found.code], found.headers)
        return public_front.body_of(found, environ)

    def _body(self, environ: WSGIEnvironment) -> bytes | None:
        """The body's bytes, or None when it has no length or one over the app's limit (the
        views' parser answers those as it always has)."""
        try:
            length = int(environ.get("CONTENT_LENGTH") or -1)
        except ValueError:
            return None
        if length < 0 or length > self.max_body:
            return None
        stream = environ["wsgi.input"]
        data: bytes = stream.read(length) if length else b""
        if len(data) != length:  # the client sent less than it announced: the views' to say
            environ["wsgi.input"] = io.BytesIO(data)
            return None
        return data


def _object(body: bytes) -> dict[str, Any]:
    """The body's JSON object, else HandOver (orjson refuses a lone surrogate, as the views)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise HandOver() from None
    if type(data) is not dict:
        raise HandOver()
    return data


def _request(services: Services, model: type[Body], data: dict[str, Any]) -> tuple[Any, str]:
    """``data`` as ``model`` and its key's environment; any refusal is the views' to word."""
    try:
        body = validated(model, data, "Some fields are not valid.")
        return body, room_lookup.environment_of(services, body.apiKey)  # type: ignore[attr-defined]
    except Exception:
        raise HandOver() from None


def _door(path: HotPath, services: Services, environ: WSGIEnvironment) -> WebDoor:
    address = environ.get("REMOTE_ADDR") or "127.0.0.1"  # as address_limits.charge
    return WebDoor(services, address_limits.Limits.of(path.app.extensions, address))


def _arrive(path: HotPath, services: Services, data: Any, environ: WSGIEnvironment) -> Answer:
    """As ``visitor_api.arrive``."""
    body, env = _request(services, ArriveRequest, data)
    try:
        issued = arrival.arrive(
            services, _door(path, services, environ), env, body.room, caller_of(environ),
            body.signals, body.maxPuzzles,
        )  # fmt: skip
    except errors.ApiError as exc:
        return _error(exc, None)
    # Written as built (as a poll's answer is): the view's model gives the same JSON, its fields
    # in another order (tests/integration/test_openapi.py checks it against the document).
    return Answer(200, issued.body, [], None)


def _join(path: HotPath, services: Services, data: Any, environ: WSGIEnvironment) -> Answer:
    """As ``visitor_api.join``."""
    body, env = _request(services, JoinRequest, data)
    solutions = body.solutions if body.solutions is not None else str(body.solution)
    try:
        answer = arrival.enter(
            services, _door(path, services, environ), env, caller_of(environ), body.room,
            body.challenge, solutions, body.signals, body.previousSession, body.invite,
        )  # fmt: skip
    except errors.ApiError as exc:
        return _error(exc, None)
    if isinstance(answer, outcomes.Refused):
        refused = errors.by_code(
            answer.code, answer.message, retry_after=answer.retry_after, fields=answer.fields,
            closed_message=answer.closed_message,
        )  # fmt: skip
        return _error(refused, None)
    spot = answer.spot
    joined = {"session": answer.session.body(), "queue": spot.body}  # as built: see _arrive
    headers = [] if spot.retry_after is None else [("Retry-After", str(spot.retry_after))]
    return Answer(200, joined, headers, None)


def _fields(body: bytes, token_field: str) -> tuple[str, str]:
    """``(apiKey, token)`` of a plain well-formed body, else HandOver."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise HandOver() from None
    if type(data) is not dict or len(data) != 2:
        raise HandOver()
    api_key, token = data.get("apiKey"), data.get(token_field)
    for value in (api_key, token):
        # ASCII: nothing to check for text a UTF-8 store cannot take (json_body does that).
        if type(value) is not str or len(value) > MAX_STRING_LENGTH or not value.isascii():
            raise HandOver()
    return api_key, token  # type: ignore[return-value]


def _checked(services: Services, api_key: str, token: str, kind: str) -> dict[str, Any]:
    """The claims of ``token`` when it is of ``kind``, valid and of ``api_key``'s environment;
    any refusal is worded by the views (HandOver): nothing has been written yet."""
    try:
        env = room_lookup.environment_of(services, api_key)
        claims = tokens.decode(services.keyring, token, kind)
    except Exception:
        raise HandOver() from None
    if claims.get("env") != env:
        raise HandOver()
    return claims


def _poll(services: Services, fields: tuple[str, str]) -> Answer:
    """As ``visitor_api.poll``, while Redis answers."""
    try:
        claims = tokens.TicketClaims.from_wire(_checked(services, *fields, tokens.TICKET))
    except tokens.TokenError:
        raise HandOver() from None  # the views word the refusal
    qr, vid, qj = claims.room_id, claims.visitor_id, claims.session_id or ""
    call = lambda: services.engine.poll(  # noqa: E731
        qr, vid, claims.ticket, claims.generation, qj, claims.near_head, claims
    )
    return _answer(services, qr, vid, call, (fields[1], claims))


def _refresh(services: Services, fields: tuple[str, str]) -> Answer:
    """As ``visitor_api.refresh``, while Redis answers."""
    claims = _checked(services, *fields, tokens.ADMISSION)
    if claims.get(tokens.NOT_RENEWABLE):
        raise HandOver()  # refused by the view: the edges never ask, so this is rare
    qr, vid, jti, qj = claims["qr"], claims["vid"], claims["jti"], str(claims.get("qj", ""))
    renew = lambda: services.engine.refresh(qr, vid, None, jti, qj)  # noqa: E731
    return _answer(services, qr, vid, renew, renewing=True)


def _answer(
    services: Services,
    room_id: str,
    vid: str,
    call: Callable[[], Any],
    polled: tuple[str, tokens.TicketClaims] | None = None,
    renewing: bool = False,
) -> Answer:
    """The engine's answer for the room, rendered as the views render it (``polled``: the
    ticket polled and its claims, see ``queue_answers.queue_token``; ``renewing``: an
    admission's refresh, refused in a room whose ``sessionRenewal`` is off)."""
    try:
        room = room_lookup.room_by_id(services, room_id)
        if renewing:
            visitor.check_renewable(room)
        result = visitor.engine_call(services, call, room_id)
    except StorageUnavailable:
        raise HandOver() from None  # the room's fail mode is the views' to apply
    except errors.ApiError as exc:
        return _error(exc, room_id)
    body, retry_after = visitor.render(services, room, vid, result, polled)
    headers = [] if retry_after is None else [("Retry-After", str(retry_after))]
    return Answer(200, body, headers, room_id)


def _error(exc: errors.ApiError, room_id: str | None) -> Answer:
    """``exc`` as ``http_errors.to_response`` answers it."""
    headers = list(exc.extra_headers.items())
    if exc.retry_after is not None:
        headers.append(("Retry-After", str(exc.retry_after)))
    return Answer(exc.code or 400, exc.body(), headers, room_id)


def install(app: Flask) -> None:
    """Put the hot path right in front of Flask's own WSGI function, inside any middleware
    added later (ProxyFix, the demo's edge), so they see and shape its requests as before."""
    app.wsgi_app = HotPath(app, app.wsgi_app)  # type: ignore[method-assign]
