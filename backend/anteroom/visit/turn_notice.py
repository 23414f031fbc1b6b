""" "Tell me when it's my turn": a waiting visitor leaves an e-mail address, and comes back by
the e-mail's link (queue/line/parking.py keeps the spot, queue/rooms/turn_mailer.py sends).

``leave_address`` parks the ticket's spot in a room whose ``notify`` is on; ``come_back`` honours
a return link once, within the room's ``returnWindowSec`` from the spot's turn, and answers the
spot's admission as a poll does (signed the same way, bound to the entering network in a bindIp
room). The address is never in an answer, and never logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anteroom.queue.connection.storage_errors import StorageBusy, StorageUnavailable
from anteroom.queue.line import parking as parked
from anteroom.queue.line import room_engine as eng
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import answers, room_lookup, waiting
from anteroom.visit.outcomes import Admitted, Refused
from anteroom.visit.refusals import Refusal, engine_refusal, storage_refusal, unavailable


@dataclass(frozen=True)
class Parked:
    """The spot is parked: no need to poll; an e-mail comes at its turn."""

    body: dict[str, Any]


def leave_address(
    s: Services, ticket: tokens.TicketClaims, email: Any, api_key: str, lang: str = ""
) -> Parked | Refused:
    """Park the ticket's spot with ``email`` (checked first: a bad one changes nothing);
    ``api_key``: the public key the ticket came with; ``lang``: the e-mail's language."""
    why = parked.address_problem(email)
    if why:
        return Refused("BadRequest", f"email {why}.", fields={"email": why})
    misdirected = waiting.wrong_region(s, ticket)
    if misdirected:
        return misdirected
    qr = ticket.room_id
    try:
        room = room_lookup.room_by_id(s, qr)
        if not room.get("notify"):
            return Refused("NotifyOff")
        outcome = s.breaker.call(
            lambda: s.parking.park(
                qr, ticket.visitor_id, ticket.ticket, ticket.generation, str(email), api_key, lang
            ),
            s.keys.room(qr),
        )
    except Refusal as refusal:
        return refusal.refused
    except StorageUnavailable:
        return unavailable()
    except StorageBusy as exc:
        return storage_refusal(exc)
    except eng.EngineError as exc:
        return engine_refusal(exc)
    if outcome == "gone":
        return Refused("TicketGone")
    if outcome != "ok":
        return Refused("NotWaiting")
    window = int(room.get("returnWindowSec") or 900)
    return Parked({"status": "parked", "room": room["slug"], "returnWindowSec": window})


@dataclass(frozen=True)
class ComeBack:
    """A return link's outcome: ``admitted`` (``body`` the queue answer with the admission),
    ``late``, ``used`` or ``invalid``; ``room`` when the link named one still there."""

    kind: str
    room: dict[str, Any] | None = None
    body: dict[str, Any] | None = None


def readable(s: Services, link: str) -> bool:
    """Is ``link`` a return link of ours (its signature, nothing spent)?"""
    try:
        tokens.ReturnClaims.from_wire(tokens.decode(s.keyring, link, tokens.RETURN_LINK))
    except tokens.TokenError:
        return False
    return True


def come_back(s: Services, link: str) -> ComeBack:
    """Honour return link ``link`` once (Unavailable-like trouble raises StorageError)."""
    try:
        claims = tokens.ReturnClaims.from_wire(tokens.decode(s.keyring, link, tokens.RETURN_LINK))
    except tokens.TokenError:
        return ComeBack("invalid")
    try:
        room = room_lookup.room_by_id(s, claims.room_id)
    except Refusal:
        return ComeBack("late")
    if room.get("environment") != claims.environment:
        return ComeBack("invalid")
    window = int(room.get("returnWindowSec") or 900)
    qr, vid = claims.room_id, claims.visitor_id
    returned = s.breaker.call(
        lambda: s.parking.redeem(qr, vid, claims.turn_ms, window), s.keys.room(qr)
    )
    if isinstance(returned, str):
        return ComeBack(returned, room)
    try:
        answer = s.breaker.call(
            lambda: s.engine.poll(
                qr, vid, returned.ticket, returned.generation, returned.session_jti, True
            ),
            s.keys.room(qr),
        )
    except eng.EngineError:
        return ComeBack("late", room)
    spot = answers.render(s, room, vid, answer)
    if not isinstance(spot, Admitted):
        return ComeBack("late", room)
    return ComeBack("admitted", room, spot.body)
