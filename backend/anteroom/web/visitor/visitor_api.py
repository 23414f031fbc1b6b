"""Visitor API: arrive and join (an arrival in two calls), challenge, identify, enter, poll,
leave, refresh.

arrive, join, identify and enter parse the request and serialise what the use cases of
anteroom.visit answer; this module hands them the request's facts (``Caller``) and the parts
still kept in web/ (``WebDoor``: room lookup, address limits, rendering, fail-open).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from flask import Blueprint, Response, current_app, g, request
from flask.typing import ResponseReturnValue

from anteroom.identity import sessions as identity
from anteroom.identity import work_inputs
from anteroom.identity.signal_rules import Evidence
from anteroom.queue.connection.storage_errors import StorageUnavailable
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import arrival, outcomes
from anteroom.web.api import api_routes as routes
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving.json_body import parse
from anteroom.web.visitor import address_limits as limits
from anteroom.web.visitor import queue_answers as visitor
from anteroom.web.visitor import room_lookup
from anteroom.web.visitor.fail_open import fail_open, usable_offline
from anteroom.web.visitor.visit_door import WebDoor, caller, refused
from anteroom.web.visitor.visitor_models import (
    Arrival,
    ArriveRequest,
    Challenge,
    ChallengeRequest,
    EnterRequest,
    IdentifyRequest,
    Joined,
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
M = TypeVar(
    "M",
    ArriveRequest,
    JoinRequest,
    ChallengeRequest,
    IdentifyRequest,
    EnterRequest,
    TicketRequest,
    RefreshRequest,
)
C = TypeVar("C", tokens.SessionClaims, tokens.TicketClaims, tokens.AdmissionClaims)
# The body field holding a call's token -> its kind, and what to call it in a refusal.
TOKENS = {
    "sessionToken": (tokens.SESSION, "session"),
    "ticket": (tokens.TICKET, "ticket"),
    "token": (tokens.ADMISSION, "admission"),
}


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Call(Generic[M]):
    """What every visitor view starts from (all of it checked offline, nothing written)."""

    services: Services
    env: str  # the environment of the body's public key
    body: M
    claims: dict[str, Any]  # of the body's token, checked to be of ``env`` (else empty)

    def claims_as(self, kind: type[C]) -> C:
        """The token's claims by name; one signed without a claim the view needs is refused."""
        try:
            return kind.from_wire(self.claims)
        except tokens.MalformedToken as exc:
            raise errors.TokenInvalid(f"The token is not valid ({exc}).") from None


def visitor_call(
    route: routes.Route,
) -> Callable[[Callable[[Call[Any]], ResponseReturnValue]], routes.View]:
    """Register a view for ``route``: the body parsed as its model, its apiKey's environment,
    the token of its ``token`` field decoded."""

    def wrap(view: Callable[[Call[Any]], ResponseReturnValue]) -> routes.View:
        assert route.body is not None  # every visitor route takes a body
        model, token = route.body, route.token

        @functools.wraps(view)
        def run() -> ResponseReturnValue:
            body = parse(model)
            s = services()
            env = room_lookup.environment_of(s, body.apiKey)
            claims: dict[str, Any] = {}
            if token is not None:
                kind, name = TOKENS[token]
                claims = identity.decode_or_raise(s.identity, getattr(body, token), kind)
                if claims.get("env") != env:
                    raise errors.TokenInvalid(f"The {name} belongs to another environment.")
                g.log_room = _room_of(token, claims)
            return view(Call(s, env, body, claims))

        return routes.view(bp, route)(run)

    return wrap


def _room_of(token: str, claims: dict[str, Any]) -> str | None:
    """The room a ticket or an admission names: the request log's (web/serving/request_log.py)."""
    kind = {"ticket": tokens.TicketClaims, "token": tokens.AdmissionClaims}.get(token)
    try:
        return kind.from_wire(claims).room_id if kind is not None else None
    except tokens.MalformedToken:
        return None


def reply(body: dict[str, Any], retry_after: int | None) -> ResponseReturnValue:
    """A queue answer (as ``queue_answers`` renders it) and the Retry-After it asks for."""
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


@visitor_call(routes.ARRIVE)
def arrive(call: Call[ArriveRequest]) -> ResponseReturnValue:
    body = call.body
    door = WebDoor(call.services)
    issued = arrival.arrive(
        call.services, door, call.env, body.room, caller(), body.signals, body.maxPuzzles
    )
    return Arrival.model_validate(issued.body)


@visitor_call(routes.JOIN_QUEUE)
def join(call: Call[JoinRequest]) -> ResponseReturnValue:
    body = call.body
    solutions = body.solutions if body.solutions is not None else str(body.solution)
    answer = arrival.enter(
        call.services, WebDoor(call.services), call.env, caller(), body.room, body.challenge,
        solutions, body.signals, body.previousSession, body.invite,
    )  # fmt: skip
    if isinstance(answer, outcomes.Refused):
        refused(answer)
    spot = answer.spot
    joined = Joined.model_validate({"session": answer.session.body(), "queue": spot.body})
    return joined if spot.retry_after is None else (joined, {"Retry-After": str(spot.retry_after)})


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
    session = call.claims_as(tokens.SessionClaims)
    answer = arrival.take_spot(
        call.services, WebDoor(call.services), call.env, caller(), call.body.room, session,
        call.body.invite,
    )  # fmt: skip
    if isinstance(answer, outcomes.Refused):
        refused(answer)
    return spot_reply(answer)


def _network_tag(s: Services, room: dict[str, Any]) -> str:
    if not room.get("bindIp"):
        return ""
    address = request.remote_addr
    if not address:
        raise errors.AddressRequired()
    try:
        return tokens.network_tag(s.keyring, address)
    except ValueError:
        raise errors.AddressRequired() from None


@visitor_call(routes.POLL_QUEUE)
def poll(call: Call[TicketRequest]) -> ResponseReturnValue:
    s = call.services
    try:
        claims = tokens.TicketClaims.from_wire(call.claims)
    except tokens.TokenError:
        raise errors.TokenInvalid() from None
    room = None
    try:
        room = room_lookup.room_by_id(s, claims.room_id)
        qr, qj = claims.room_id, claims.session_id or ""
        answer = visitor.engine_call(
            s,
            lambda: s.engine.poll(
                qr, claims.visitor_id, claims.ticket, claims.generation, qj, claims.near_head,
                claims,
            ),
            qr,
        )  # fmt: skip
    except StorageUnavailable:
        # The spot is still in Redis; a fail-open room lets its visitor in meanwhile, bound as
        # a normal admission would be, from what the ticket carries (no Redis needed).
        room = usable_offline(room)
        tag = _network_tag(s, room)
        return reply(*fail_open(s, room, visitor.ticket_binding(room, claims, tag)))
    return reply(*visitor.render(s, room, claims.visitor_id, answer, (call.body.ticket, claims)))


@visitor_call(routes.LEAVE_QUEUE)
def leave(call: Call[TicketRequest]) -> ResponseReturnValue:
    s, spot = call.services, call.claims_as(tokens.TicketClaims)
    try:
        visitor.engine_call(
            s,
            lambda: s.engine.leave(spot.room_id, spot.visitor_id, spot.ticket, spot.generation),
            spot.room_id,
        )
    except StorageUnavailable:
        raise errors.Unavailable(retry_after=errors.STORAGE_RETRY_SEC) from None
    return "", 204


@visitor_call(routes.REFRESH_ADMISSION)
def refresh(call: Call[RefreshRequest]) -> ResponseReturnValue:
    s, claims = call.services, call.claims_as(tokens.AdmissionClaims)
    if claims.not_renewable:
        # The token says so: refused before anything else, so no outage admission renews it.
        raise errors.NotRenewable()
    room = None
    try:
        room = room_lookup.room_by_id(s, claims.room_id)
        visitor.check_renewable(room)
        qr, vid, jti, qj = claims.room_id, claims.visitor_id, claims.admission_id, claims.session_id
        answer = visitor.engine_call(s, lambda: s.engine.refresh(qr, vid, None, jti, qj or ""), qr)
    except StorageUnavailable:
        # Same rules as a normal refresh: the binding and network of the admission held (the
        # polling address's network if it has none in a bindIp room), no revoked session.
        room = usable_offline(room)
        polled = _network_tag(s, room)
        tag = claims.network_tag or polled
        binding = visitor.Binding(claims.session_id or "", claims.visitor_id, None, tag)
        return reply(*fail_open(s, room, binding))
    return reply(*visitor.render(s, room, claims.visitor_id, answer))
