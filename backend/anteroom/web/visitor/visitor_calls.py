"""The visitor API's calls, one adapter each: what the body said in, the use case of
anteroom.visit called, its tagged answer out as the finished HTTP answer (``Answer``).

Both entrances call these same functions: the hot path (hot_path.py, before Flask's request
cycle) for every well-formed body, and the Flask views (visitor_api.py) for what it hands them,
a body only json_body may word a refusal of. So a call is answered the same whichever entrance
took it, refusals included, and its rules are written once.
"""

from __future__ import annotations

from typing import Any, TypeVar

from anteroom.identity import sessions as identity
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import arrival, challenges, outcomes, room_lookup, turn_notice, waiting
from anteroom.visit.agents import AgentVerdict
from anteroom.visit.ports import Caller
from anteroom.visit.refusals import Refusal
from anteroom.web.api import api_routes as routes
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving import metrics
from anteroom.web.visitor.visit_door import WebDoor
from anteroom.web.visitor.visitor_models import (
    ArriveRequest,
    Challenge,
    ChallengeRequest,
    EnterRequest,
    IdentifyRequest,
    JoinRequest,
    QueueAnswer,
    Session,
)

C = TypeVar("C", tokens.SessionClaims, tokens.TicketClaims, tokens.AdmissionClaims)


class Answer:
    """A finished answer: status, JSON body (None: no body), extra headers, the room to log."""

    __slots__ = ("body", "code", "headers", "room")

    def __init__(
        self,
        code: int,
        body: dict[str, Any] | None,
        headers: list[tuple[str, str]],
        room: str | None,
    ) -> None:
        self.code, self.body, self.headers, self.room = code, body, headers, room


def error(exc: errors.ApiError, room_id: str | None = None) -> Answer:
    """``exc`` as ``http_errors.to_response`` answers it."""
    headers = list(exc.extra_headers.items())
    if exc.retry_after is not None:
        headers.append(("Retry-After", str(exc.retry_after)))
    return Answer(exc.code or 400, exc.body(), headers, room_id)


def refused(answer: outcomes.Refused, room_id: str | None = None) -> Answer:
    """A use case's refusal as the API's error."""
    exc = errors.by_code(
        answer.code, answer.message, retry_after=answer.retry_after, fields=answer.fields,
        closed_message=answer.closed_message,
    )  # fmt: skip
    return error(exc, room_id)


def _spot(answer: outcomes.Spot | outcomes.Refused, room_id: str | None) -> Answer:
    if isinstance(answer, outcomes.Refused):
        return refused(answer, room_id)
    headers = [] if answer.retry_after is None else [("Retry-After", str(answer.retry_after))]
    return Answer(200, answer.body, headers, room_id)


def environment_of(s: Services, api_key: str) -> str:
    """The environment of public key ``api_key``, or the API's refusal (Unauthorized)."""
    try:
        return room_lookup.environment_of(s, api_key)
    except Refusal as refusal:
        raise errors.from_domain(refusal) from None


def claims_of(s: Services, api_key: str, token: str, kind: type[C], name: str) -> C:
    """The claims of ``token`` (a ``name``) when it is valid and of ``api_key``'s environment,
    or the API's refusal (nothing has been written yet)."""
    env = environment_of(s, api_key)
    try:
        claims = kind.from_wire(identity.decode_or_raise(s.identity, token, kind.TOKEN_TYPE))
    except identity.IdentityRefused as exc:
        raise errors.from_domain(exc) from None
    except tokens.MalformedToken as exc:  # genuine, but without a claim the call needs
        raise errors.TokenInvalid(f"The token is not valid ({exc}).") from None
    if claims.environment != env:
        raise errors.TokenInvalid(f"The {name} belongs to another environment.")
    return claims


def poll(s: Services, address: str | None, api_key: str, ticket: str) -> Answer:
    """``POST /api/v1/queue/poll``."""
    try:
        claims = claims_of(s, api_key, ticket, tokens.TicketClaims, "ticket")
        return _spot(waiting.poll(s, claims, address, polled=ticket), claims.room_id)
    except errors.ApiError as exc:
        return error(exc)


def refresh(s: Services, address: str | None, api_key: str, token: str) -> Answer:
    """``POST /api/v1/admission/refresh``."""
    try:
        claims = claims_of(s, api_key, token, tokens.AdmissionClaims, "admission")
        return _spot(waiting.refresh(s, claims, address), claims.room_id)
    except errors.ApiError as exc:
        return error(exc)


def leave(s: Services, api_key: str, ticket: str) -> Answer:
    """``POST /api/v1/queue/leave``: 204 once the spot is given up."""
    try:
        claims = claims_of(s, api_key, ticket, tokens.TicketClaims, "ticket")
    except errors.ApiError as exc:
        return error(exc)
    answer = waiting.leave(s, claims)
    if isinstance(answer, outcomes.Refused):
        return refused(answer, claims.room_id)
    return Answer(204, None, [], claims.room_id)


def notify(s: Services, api_key: str, ticket: str, email: Any, lang: str = "") -> Answer:
    """``POST /api/v1/queue/notify``: the spot is parked until its turn, when an e-mail comes."""
    try:
        claims = claims_of(s, api_key, ticket, tokens.TicketClaims, "ticket")
    except errors.ApiError as exc:
        return error(exc)
    answer = turn_notice.leave_address(s, claims, email, api_key, lang)
    if isinstance(answer, outcomes.Refused):
        return refused(answer, claims.room_id)
    return Answer(200, answer.body, [], claims.room_id)


def arrive(s: Services, door: WebDoor, caller: Caller, body: ArriveRequest) -> Answer:
    """``POST /api/v1/arrive``: a challenge that carries its own measurement."""
    try:
        env = environment_of(s, body.apiKey)
        issued = arrival.arrive(
            s, door, env, body.room, caller, body.signals, body.maxPuzzles, _count_agent
        )
    except errors.ApiError as exc:
        return error(exc)
    if isinstance(issued, outcomes.Refused):
        return refused(issued)
    # Written as built (as a poll's answer is): no model round trip on the arrival's path; the
    # model's JSON would hold the same fields (tests/integration/test_openapi.py checks it).
    return Answer(200, issued.body, [], None)


def _count_agent(verdict: AgentVerdict) -> None:
    metrics.AGENTS.labels(verdict.outcome).inc()


def join(s: Services, door: WebDoor, caller: Caller, body: JoinRequest) -> Answer:
    """``POST /api/v1/queue/join``: the proof checked, the session opened, the spot taken."""
    solutions = body.solutions if body.solutions is not None else str(body.solution)
    try:
        env = environment_of(s, body.apiKey)
        answer = arrival.enter(
            s, door, env, caller, body.room, body.challenge, solutions, body.signals,
            body.previousSession, body.invite,
        )  # fmt: skip
    except errors.ApiError as exc:
        return error(exc)
    if isinstance(answer, outcomes.Refused):
        return refused(answer)
    spot = answer.spot
    joined = {"session": answer.session.body(), "queue": spot.body}  # as built: see arrive
    headers = [] if spot.retry_after is None else [("Retry-After", str(spot.retry_after))]
    return Answer(200, joined, headers, None)


# -- the older calls (challenge, identify, enter), kept for the clients that use them ---------


def challenge(s: Services, door: WebDoor, caller: Caller, body: ChallengeRequest) -> Answer:
    """``POST /api/v1/challenge``."""
    m = body.measurement
    measured = m and challenges.Measured(m.challenge, m.solutions, m.hashesPerSecond)
    try:
        env = environment_of(s, body.apiKey)
        answer = challenges.challenge(
            s, door, env, caller, body.room, body.signals, body.maxPuzzles,
            measure=body.measure, measured=measured,
        )  # fmt: skip
    except errors.ApiError as exc:
        return error(exc)
    if isinstance(answer, outcomes.Refused):
        return refused(answer)
    return Answer(200, routes.model_json(Challenge.model_validate(answer.body)), [], None)


def identify(s: Services, door: WebDoor, caller: Caller, body: IdentifyRequest) -> Answer:
    """``POST /api/v1/identify``: a solved challenge traded for a session."""
    solutions = body.solutions if body.solutions is not None else str(body.solution)
    try:
        env = environment_of(s, body.apiKey)
        answer = arrival.identify(
            s, door, env, caller, body.challenge, solutions, body.signals, body.previousSession
        )
    except errors.ApiError as exc:
        return error(exc)
    if isinstance(answer, outcomes.Refused):
        return refused(answer)
    return Answer(200, routes.model_json(Session.model_validate(answer.body())), [], None)


def enter(s: Services, door: WebDoor, caller: Caller, body: EnterRequest) -> Answer:
    """``POST /api/v1/queue/enter``: the session's spot taken (or found again)."""
    try:
        env = environment_of(s, body.apiKey)
        session = claims_of(s, body.apiKey, body.sessionToken, tokens.SessionClaims, "session")
        answer = arrival.take_spot(s, door, env, caller, body.room, session, body.invite)
    except errors.ApiError as exc:
        return error(exc)
    if isinstance(answer, outcomes.Refused):
        return refused(answer)
    queue = routes.model_json(QueueAnswer.model_validate(answer.body))
    headers = [] if answer.retry_after is None else [("Retry-After", str(answer.retry_after))]
    return Answer(200, queue, headers, None)
