"""Visitor API (SPEC "Visitor API"): challenge, identify, enter, poll, leave, refresh."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from flask import Blueprint, Response, current_app, g, request
from flask.typing import ResponseReturnValue

from anteroom.identity import sessions as identity
from anteroom.identity import work_inputs
from anteroom.identity.signal_rules import Evidence
from anteroom.queue.room_engine import AddressLimited
from anteroom.queue.storage_errors import StorageError, StorageUnavailable
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.web import address_limits as limits
from anteroom.web import api_routes as routes
from anteroom.web import http_errors as errors
from anteroom.web import queue_answers as visitor
from anteroom.web import room_lookup, service_bypass
from anteroom.web.fail_open import fail_open, usable_offline
from anteroom.web.json_body import parse
from anteroom.web.visitor_models import (
    Challenge,
    ChallengeRequest,
    EnterRequest,
    IdentifyRequest,
    QueueAnswer,
    RefreshRequest,
    Session,
    TicketRequest,
)

bp = Blueprint("visitor", __name__, url_prefix="/api/v1")
# On every answer of this API (the hot path's too, web/hot_path.py): CORS, and never cached.
ANSWER_HEADERS = (
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Allow-Methods", "POST, OPTIONS"),
    ("Access-Control-Allow-Headers", "Content-Type"),
    ("Access-Control-Expose-Headers", "Retry-After"),
    ("Access-Control-Max-Age", "600"),
    ("Cache-Control", "no-store"),
)
M = TypeVar("M", ChallengeRequest, IdentifyRequest, EnterRequest, TicketRequest, RefreshRequest)
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
                g.log_room = claims.get("qr")  # the request log's room (web/request_log.py)
            return view(Call(s, env, body, claims))

        return routes.view(bp, route)(run)

    return wrap


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


@visitor_call(routes.IDENTIFY)
def identify(call: Call[IdentifyRequest]) -> ResponseReturnValue:
    s, body = call.services, call.body
    solutions = body.solutions if body.solutions is not None else str(body.solution)
    try:
        claims = identity.solved_challenge(s.identity, call.env, body.challenge, solutions)
    except identity.WrongSolution:
        work_inputs.outcomes(s.identity).record(failed=True)  # the attack signal's failure ratio
        raise
    work_inputs.outcomes(s.identity).record(failed=False)
    # Counted only now, before the first write: an over-limit request keeps its challenge unspent.
    limits.charge("identify")
    try:
        network = tokens.network_tag(s.keyring, request.remote_addr or "0.0.0.0")
        evidence = Evidence(
            signals=body.signals,
            user_agent=request.headers.get("User-Agent", ""),
            accept_language=request.headers.get("Accept-Language", ""),
            identifies_from_network=identity.network_identifies(s.identity, network, call.env),
        )
        session = identity.session_claims(s.identity, call.env, evidence, body.previousSession)
        # Spent last, with what it earned: a retry of this proof gets this session, never 401.
        session = identity.spend_challenge(s.identity, claims, solutions, session)
        return Session.model_validate(identity.session_answer(s.identity, session))
    except StorageUnavailable:
        # A challenge cannot be spent once without Redis: no new sessions during an outage.
        raise errors.Unavailable(retry_after=errors.STORAGE_RETRY_SEC) from None


def _remember_refusal(s: Services, room: dict[str, Any]) -> None:
    """The room's history of refused ranges, which the work rule reads (best effort)."""
    # An outage or an odd address must not change what the visitor is answered.
    with contextlib.suppress(StorageError, ValueError):
        work_inputs.count_refusal(s.identity, room["id"], request.remote_addr or "0.0.0.0")


def _invite(s: Services, room: dict[str, Any], token: str | None) -> tokens.InviteClaims | None:
    """The verified invite of ``room`` the body carries; one forged, malformed or of another
    room is TokenInvalid (its expiry and uses are the enter script's, on the room's clock)."""
    if token is None:
        return None
    try:
        invite = tokens.InviteClaims.from_wire(tokens.decode(s.keyring, token, tokens.INVITE))
    except tokens.TokenError as exc:
        why = f"is not valid ({exc.reason})"
        raise errors.TokenInvalid(f"The invite {why}.", fields={"invite": why}) from None
    if (invite.room_id, invite.environment) != (room["id"], room["environment"]):
        why = "belongs to another room"
        raise errors.TokenInvalid(f"The invite {why}.", fields={"invite": why})
    if invite.lane not in tokens.INVITE_LANES or not isinstance(invite.uses, int):
        raise errors.TokenInvalid("The invite is not valid.", fields={"invite": "is malformed"})
    return invite


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


@visitor_call(routes.ENTER_QUEUE)
def enter(call: Call[EnterRequest]) -> ResponseReturnValue:
    s, session = call.services, call.claims_as(tokens.SessionClaims)
    if "bot" in session.signals:
        known = s.directory.room_by_slug(call.env, call.body.room)  # no Redis call to count it
        if known:
            s.series.tally(known["id"], "ndenied")
        raise errors.QueueDenied()
    room = room_lookup.room_by_slug(s, call.env, call.body.room)
    invite = _invite(s, room, call.body.invite)
    tag = _network_tag(s, room)
    score = int(session.score)
    # After the offline checks (garbage costs Redis no write): counted by the enter script
    # itself on one server, charged here on a cluster (address_limits.enter_counters).
    counters = limits.enter_counters() or ()
    if score >= int(room.get("holdScore") or 100):
        # Remembered only for an entry that may count (its round trip is a held session's
        # alone): a convicted session's refusal above writes nothing (garbage costs Redis no
        # write); its network pays at identify already.
        _remember_refusal(s, room)

    # A bypass rule lets the request through the skip lane (an invite keeps its own lane).
    bypass = invite is None and service_bypass.matches(
        room, request.remote_addr, request.headers, request.headers.get("Cookie", "")
    )

    def enter_line() -> visitor.QueueAnswer:
        try:
            return s.engine.enter(room["id"], session.visitor_id, session.session_id, score, tag,
                                  counters, invite, bypass)  # fmt: skip
        except AddressLimited as exc:
            limits.refused_by_script("enter", exc.retry_after or 1)

    try:
        # Revocations are checked inside the script, in the room's own store.
        answer = visitor.engine_call(s, enter_line, room["id"])
    except StorageUnavailable:
        binding = visitor.Binding(session.session_id, session.visitor_id, score, tag)
        return reply(*fail_open(s, room, binding))
    except errors.Busy:
        s.series.tally(room["id"], "nbusy")
        raise
    except errors.RoomClosed:
        # the page shows what the operator wrote, as for an idle room
        raise errors.RoomClosed(closed_message=room.get("closedMessage")) from None
    return reply(*visitor.render(s, room, session.visitor_id, answer))


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
