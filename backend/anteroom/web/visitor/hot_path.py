"""The visitor API's one fast entrance: every visitor call (``POST /api/v1/queue/poll``,
``/admission/refresh`` and ``/queue/leave``, what a waiting crowd sends all day; ``/arrive`` and
``/queue/join``, what an arriving crowd sends once each; the older ``/challenge``, ``/identify``
and ``/queue/enter``) answered by a small WSGI function in front of the Flask app.

Most of a poll's cost was Flask's request cycle (request and response objects, context locals,
hooks, header objects), not the poll. Here the body is read and parsed once (orjson), handed to
the call's one adapter (visitor_calls.py: the key and the token checked, the use case of
anteroom.visit called, its answer serialised), encoded once and counted cheaply. The Flask views
take only what the adapters' parsing would not word as json_body does, body untouched: a body
missing, chunked, too large, not JSON, not the call's exact fields as ASCII strings (a poll,
refresh or leave), or refused by the call's request model (the others). Every other answer,
refusals and the room's fail mode during an outage included, is given here, with the same JSON,
headers and CORS as the views'. The API tests (``tests/integration/test_visitor_api.py`` and
others) run through this path unchanged."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from werkzeug.http import HTTP_STATUS_CODES

from anteroom.queue.connection.storage_errors import StorageError
from anteroom.service_container import Services
from anteroom.visit.ports import Caller
from anteroom.web.api import api_routes as routes
from anteroom.web.api.api_models import MAX_STRING_LENGTH, Body
from anteroom.web.pages import public_front
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving import metrics, request_log
from anteroom.web.serving.json_body import validated
from anteroom.web.visitor import address_limits
from anteroom.web.visitor import visitor_calls as calls
from anteroom.web.visitor.visit_door import WebDoor, caller_of
from anteroom.web.visitor.visitor_api import ANSWER_HEADERS
from anteroom.web.visitor.visitor_calls import Answer
from anteroom.web.visitor.visitor_models import (
    ArriveRequest,
    ChallengeRequest,
    EnterRequest,
    IdentifyRequest,
    JoinRequest,
)

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask

log = logging.getLogger("anteroom")
M = TypeVar("M", bound=Body)
# An adapter of visitor_calls.py for a call whose body is parsed by its request model.
Adapter = Callable[[Services, WebDoor, Caller, Any], Answer]
POLL, REFRESH = routes.POLL_QUEUE.path, routes.REFRESH_ADMISSION.path
LEAVE = routes.LEAVE_QUEUE.path
ARRIVE, JOIN = routes.ARRIVE.path, routes.JOIN_QUEUE.path
# The body field holding each route's token, as declared for its view.
TOKEN_FIELDS = {
    route.path: route.token
    for route in (routes.POLL_QUEUE, routes.REFRESH_ADMISSION, routes.LEAVE_QUEUE)
}
STATUS_LINES = {code: f"{code} {text.upper()}" for code, text in HTTP_STATUS_CODES.items()}


class HandOver(Exception):
    """The request is the Flask views' to answer."""


class HotPath:
    """WSGI middleware: the two hot routes here, every other request to ``inner`` (Flask's)."""

    def __init__(self, app: Flask, inner: WSGIApplication) -> None:
        self.app = app
        self.inner = inner
        self.max_body = int(app.config["MAX_CONTENT_LENGTH"])
        # A waiting visitor's calls: the address, and the body's (apiKey, token).
        self.handlers: dict[str, Callable[[Services, str | None, tuple[str, str]], Answer]] = {
            POLL: lambda s, address, f: calls.poll(s, address, *f),
            REFRESH: lambda s, address, f: calls.refresh(s, address, *f),
            LEAVE: lambda s, address, f: calls.leave(s, *f),
        }
        # The calls of a body with more in it (an arrival's, the older journey's): the body's
        # request model and the call's adapter, given the request's address limits and facts.
        self.arrivals: dict[str, tuple[type[Any], Adapter]] = {
            ARRIVE: (ArriveRequest, calls.arrive),
            JOIN: (JoinRequest, calls.join),
            routes.CREATE_CHALLENGE.path: (ChallengeRequest, calls.challenge),
            routes.IDENTIFY.path: (IdentifyRequest, calls.identify),
            routes.ENTER_QUEUE.path: (EnterRequest, calls.enter),
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
                fields = _fields(body, TOKEN_FIELDS[route])
                answer = handler(services, environ.get("REMOTE_ADDR"), fields)
            else:
                model, adapter = arriving  # type: ignore[misc]
                parsed = _request(model, _object(body))
                door = _door(self, services, environ)
                answer = adapter(services, door, caller_of(environ), parsed)
                if route in request_log.ROOM_BODY_ROUTES:  # logged by the slug it names
                    answer.room = parsed.room
        except HandOver:
            environ["wsgi.input"] = io.BytesIO(body)  # Flask reads the body afresh
            return self.inner(environ, start_response)
        except StorageError as exc:
            # As the app's storage handler (http_errors): Redis trouble no use case mapped is
            # the documented 503 or 429, never a 500. An arrival cannot be handed over here:
            # the per-address limits it charged would be charged again by the views.
            answer = calls.error(errors.storage_refusal(exc))
        except Exception as exc:  # as Flask's last-resort handler: logged, JSON 500
            log.exception("unexpected error", exc_info=exc)
            answer = calls.error(errors.InternalError())
        if answer.body is None:
            data, headers = b"", []
        else:
            data = orjson.dumps(answer.body) + b"\n"  # the trailing newline, as Flask's jsonify
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        headers += answer.headers
        headers += ANSWER_HEADERS
        start_response(STATUS_LINES[answer.code], headers)
        elapsed = time.perf_counter() - started
        seen = self.app.extensions["anteroom_breaker_seen"]
        metrics.observe(
            route, "POST", answer.code, elapsed, answer.body or {}, services.breaker, seen
        )
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


def _request(model: type[M], data: dict[str, Any]) -> M:
    """``data`` as ``model``; a body it refuses is the views' to word (json_body)."""
    try:
        return validated(model, data, "Some fields are not valid.")
    except Exception:
        raise HandOver() from None


def _door(path: HotPath, services: Services, environ: WSGIEnvironment) -> WebDoor:
    address = environ.get("REMOTE_ADDR") or "127.0.0.1"  # as address_limits.charge
    return WebDoor(services, address_limits.Limits.of(path.app.extensions, address))


def _fields(body: bytes, token_fields: tuple[str, ...]) -> tuple[str, str]:
    """``(apiKey, token)`` of a plain well-formed body, else HandOver.

    The token may come under any one of ``token_fields`` (its name, then the older one still
    taken); a body with both, or neither, is the views' to refuse by name.
    """
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise HandOver() from None
    if type(data) is not dict or len(data) != 2:
        raise HandOver()
    api_key, token = data.get("apiKey"), None
    for name in token_fields:
        token = data.get(name)
        if token is not None:
            break
    for value in (api_key, token):
        # ASCII: nothing to check for text a UTF-8 store cannot take (json_body does that).
        if type(value) is not str or len(value) > MAX_STRING_LENGTH or not value.isascii():
            raise HandOver()
    return api_key, token  # type: ignore[return-value]


def install(app: Flask) -> None:
    """Put the hot path right in front of Flask's own WSGI function, inside any middleware
    added later (ProxyFix, the demo's edge), so they see and shape its requests as before."""
    app.wsgi_app = HotPath(app, app.wsgi_app)  # type: ignore[method-assign]
