"""Visitor API: arrive and join (an arrival in two calls), challenge, identify, enter, poll,
leave, refresh, as Flask views: the route table and the OpenAPI document read them here.

arrive, join, poll, leave and refresh are answered by the hot path (hot_path.py) whenever their
body is well formed; their views here parse what it hands over (json_body words what is wrong)
and call the same adapter (visitor_calls.py). challenge, identify and enter, the older calls,
are answered here only, over the use cases of anteroom.visit with the request's facts
(``Caller``) and the parts still kept in web/ (``WebDoor``: the room lookup, address limits).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from flask import Blueprint, Response, current_app, g, jsonify, request
from flask.typing import ResponseReturnValue

from anteroom.identity import sessions as identity
from anteroom.identity import work_inputs
from anteroom.identity.signal_rules import Evidence
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import arrival, outcomes
from anteroom.web.api import api_routes as routes
from anteroom.web.serving.json_body import parse
from anteroom.web.visitor import address_limits as limits
from anteroom.web.visitor import room_lookup
from anteroom.web.visitor import visitor_calls as calls
from anteroom.web.visitor.visit_door import WebDoor, caller, refused
from anteroom.web.visitor.visitor_models import (
    ArriveRequest,
    Challenge,
    ChallengeRequest,
    EnterRequest,
    IdentifyRequest,
    JoinRequest,
    QueueAnswer,
    RefreshRequest,
    Session,
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
M = TypeVar("M", ChallengeRequest, IdentifyRequest, EnterRequest)


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Call(Generic[M]):
    """What an older call's view starts from (checked offline, nothing written)."""

    services: Services
    env: str  # the environment of the body's public key
    body: M


def visitor_call(
    route: routes.Route,
) -> Callable[[Callable[[Call[Any]], ResponseReturnValue]], routes.View]:
    """Register a view for ``route``: the body parsed as its model, its apiKey's environment."""

    def wrap(view: Callable[[Call[Any]], ResponseReturnValue]) -> routes.View:
        assert route.body is not None  # every visitor route takes a body
        model = route.body

        @functools.wraps(view)
        def run() -> ResponseReturnValue:
            body = parse(model)
            s = services()
            return view(Call(s, room_lookup.environment_of(s, body.apiKey), body))

        return routes.view(bp, route)(run)

    return wrap


def reply(body: dict[str, Any], retry_after: int | None) -> ResponseReturnValue:
    """A queue answer (as anteroom.visit.answers renders it) and the Retry-After it asks for."""
    answer = QueueAnswer.model_validate(body)
    return answer if retry_after is None else (answer, {"Retry-After": str(retry_after)})


@bp.after_request
def cors(response: Response) -> Response:
    """Storefronts call this API from their own origin; no credentials are ever involved.

    Preflights are Flask's automatic OPTIONS answers, given these headers here.
    """
    for name, value in ANSWER_HEADERS:
        response.headers[name] = value
    return response


@visitor_call(routes.CREATE_CHALLENGE)
def challenge(call: Call[ChallengeRequest]) -> ResponseReturnValue:
    s, body = call.services, call.body
    hashes_per_second = None
    if body.measurement is not None:  # checked offline: it is not spent, only proves the solver ran
        measured = body.measurement
        identity.solved_challenge(
            s.identity, call.env, measured.challenge, measured.solutions, measurement=True
        )
        hashes_per_second = measured.hashesPerSecond
    limits.charge("challenge")  # in this worker's memory: issuing a challenge writes nothing
    if body.measure:
        return Challenge.model_validate(identity.measurement_challenge(s.identity, call.env))
    room = s.directory.room_by_slug(call.env, body.room) if body.room else None
    address = request.remote_addr or "0.0.0.0"

    def evidence(network_identifies: int) -> Evidence:
        return Evidence(
            signals=body.signals,
            user_agent=request.headers.get("User-Agent", ""),
            accept_language=request.headers.get("Accept-Language", ""),
            identifies_from_network=network_identifies,
        )

    work = work_inputs.work_of_request(s.identity, call.env, room, address, evidence)
    answer = identity.new_challenge(
        s.identity, call.env, work, max_puzzles=body.maxPuzzles, hashes_per_second=hashes_per_second
    )
    return Challenge.model_validate(answer)


def spot_reply(spot: outcomes.Spot) -> ResponseReturnValue:
    """A spot's queue answer, with the Retry-After it asks for."""
    return reply(spot.body, spot.retry_after)


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


@visitor_call(routes.IDENTIFY)
def identify(call: Call[IdentifyRequest]) -> ResponseReturnValue:
    body = call.body
    solutions = body.solutions if body.solutions is not None else str(body.solution)
    answer = arrival.identify(
        call.services, WebDoor(call.services), call.env, caller(), body.challenge, solutions,
        body.signals, body.previousSession,
    )  # fmt: skip
    if isinstance(answer, outcomes.Refused):
        refused(answer)
    return Session.model_validate(answer.body())


@visitor_call(routes.ENTER_QUEUE)
def enter(call: Call[EnterRequest]) -> ResponseReturnValue:
    s, body = call.services, call.body
    session = calls.claims_of(s, body.apiKey, body.sessionToken, tokens.SessionClaims, "session")
    answer = arrival.take_spot(
        call.services, WebDoor(call.services), call.env, caller(), call.body.room, session,
        call.body.invite,
    )  # fmt: skip
    if isinstance(answer, outcomes.Refused):
        refused(answer)
    return spot_reply(answer)


@routes.view(bp, routes.POLL_QUEUE)
def poll() -> ResponseReturnValue:
    s, body = services(), parse(TicketRequest)
    return answered(calls.poll(s, WebDoor(s), request.remote_addr, body.apiKey, body.ticket))


@routes.view(bp, routes.LEAVE_QUEUE)
def leave() -> ResponseReturnValue:
    body = parse(TicketRequest)
    return answered(calls.leave(services(), body.apiKey, body.ticket))


@routes.view(bp, routes.REFRESH_ADMISSION)
def refresh() -> ResponseReturnValue:
    s, body = services(), parse(RefreshRequest)
    return answered(calls.refresh(s, WebDoor(s), request.remote_addr, body.apiKey, body.token))
