"""Visitor API as Flask views: arrive and join (an arrival in two calls), challenge, identify,
enter (the older journey), poll, leave, refresh. The route table and the OpenAPI document read
them here.

Every call is answered by the hot path (hot_path.py) whenever its body is well formed; a view
here parses what it hands over (json_body words what is wrong) and calls the same adapter
(visitor_calls.py), so both entrances answer alike.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, g, jsonify, request
from flask.typing import ResponseReturnValue

from anteroom.service_container import Services
from anteroom.web.api import api_routes as routes
from anteroom.web.serving.json_body import parse
from anteroom.web.visitor import visitor_calls as calls
from anteroom.web.visitor.visit_door import WebDoor, caller
from anteroom.web.visitor.visitor_models import (
    ArriveRequest,
    ChallengeRequest,
    EnterRequest,
    IdentifyRequest,
    JoinRequest,
    NotifyRequest,
    RefreshRequest,
    TicketRequest,
)

bp = Blueprint("visitor", __name__, url_prefix="/api/v1")
# On every answer of this API (the hot path's too, web/visitor/hot_path.py): CORS, and never cached.
ANSWER_HEADERS = (
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Allow-Methods", "POST, OPTIONS"),
    ("Access-Control-Allow-Headers", "Content-Type"),
    ("Access-Control-Expose-Headers", "Retry-After"),
    ("Access-Control-Max-Age", "600"),
    ("Cache-Control", "no-store"),
)


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


@bp.after_request
def cors(response: Response) -> Response:
    """Storefronts call this API from their own origin; no credentials are ever involved.

    Preflights are Flask's automatic OPTIONS answers, given these headers here.
    """
    for name, value in ANSWER_HEADERS:
        response.headers[name] = value
    return response


def answered(answer: calls.Answer) -> Response:
    """An adapter's finished answer as Flask's response (the CORS headers come after)."""
    g.log_room = answer.room  # the request log's room (web/serving/request_log.py)
    response = Response(status=answer.code) if answer.body is None else jsonify(answer.body)
    response.status_code = answer.code
    for name, value in answer.headers:
        response.headers[name] = value
    return response


@routes.view(bp, routes.ARRIVE)
def arrive() -> ResponseReturnValue:
    s = services()
    return answered(calls.arrive(s, WebDoor(s), caller(), parse(ArriveRequest)))


@routes.view(bp, routes.JOIN_QUEUE)
def join() -> ResponseReturnValue:
    s = services()
    return answered(calls.join(s, WebDoor(s), caller(), parse(JoinRequest)))


@routes.view(bp, routes.CREATE_CHALLENGE)
def challenge() -> ResponseReturnValue:
    s = services()
    return answered(calls.challenge(s, WebDoor(s), caller(), parse(ChallengeRequest)))


@routes.view(bp, routes.IDENTIFY)
def identify() -> ResponseReturnValue:
    s = services()
    return answered(calls.identify(s, WebDoor(s), caller(), parse(IdentifyRequest)))


@routes.view(bp, routes.ENTER_QUEUE)
def enter() -> ResponseReturnValue:
    s = services()
    return answered(calls.enter(s, WebDoor(s), caller(), parse(EnterRequest)))


@routes.view(bp, routes.POLL_QUEUE)
def poll() -> ResponseReturnValue:
    s, body = services(), parse(TicketRequest)
    return answered(calls.poll(s, request.remote_addr, body.apiKey, body.token_value))


@routes.view(bp, routes.LEAVE_QUEUE)
def leave() -> ResponseReturnValue:
    body = parse(TicketRequest)
    return answered(calls.leave(services(), body.apiKey, body.token_value))


@routes.view(bp, routes.NOTIFY_ME)
def notify() -> ResponseReturnValue:
    body = parse(NotifyRequest)
    return answered(
        calls.notify(services(), body.apiKey, body.token_value, body.email, body.lang or "")
    )


@routes.view(bp, routes.REFRESH_ADMISSION)
def refresh() -> ResponseReturnValue:
    s, body = services(), parse(RefreshRequest)
    return answered(calls.refresh(s, request.remote_addr, body.apiKey, body.token_value))
