"""Queue answers: the JSON a visitor gets, the tickets and admissions it carries (signed
here, from their typed claims), and what an outage admission is bound to."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from typing import Any

from anteroom.queue.line import room_engine as eng
from anteroom.queue.line.room_engine import QueueAnswer
from anteroom.queue.regions import pool_order
from anteroom.queue.rooms.room_config import queue_token_life
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit.outcomes import Admitted, Held, Idle, InDraw, Refused, Spot, Waiting
from anteroom.visit.refusals import Refusal, unavailable


def admission_token(
    services: Services,
    room: dict[str, Any],
    vid: str,
    *,
    admission_id: str,
    session_id: str | None,
    network_tag: str | None,
    issued_at: int,
    expires_at: int,
    fail_open: bool = False,
    not_renewable: bool = False,
) -> str:
    """Sign an admission for ``vid`` in ``room``; a room with ``sessionRenewal: false`` marks it
    not renewable (and so does ``not_renewable``: an admission no active entry stands for)."""
    claims = tokens.AdmissionClaims(
        room_slug=room["slug"],
        room_id=room["id"],
        visitor_id=vid,
        environment=room["environment"],
        admission_id=admission_id,
        session_id=session_id,
        network_tag=network_tag or None,
        fail_open=fail_open,
        not_renewable=not_renewable or not room.get("sessionRenewal", True),
        issued_at=issued_at,
        expires_at=expires_at,
    )
    return tokens.issue(services.keyring, claims)


def check_renewable(room: dict[str, Any]) -> None:
    """Refuse (NotRenewable) once ``room``'s ``sessionRenewal`` is off: its admissions dealt
    before then (not marked :data:`tokens.NOT_RENEWABLE`) end at their expiry too. Those marked
    are refused from their claim alone, before this."""
    if not room.get("sessionRenewal", True):
        raise Refusal(Refused("NotRenewable"))


def queue_token(
    room: dict[str, Any],
    services: Services,
    vid: str,
    answer: QueueAnswer,
    polled: tuple[str, tokens.TicketClaims] | None = None,
    arrived: int | None = None,
) -> str:
    """The signed ticket a visitor polls with (the ticket number alone authorizes nothing).

    Besides naming the spot it carries what an outage admission needs, as Redis last saw the
    spot: the session binding (``qj``), the network tag (``qi``, bindIp rooms) and the score.
    ``polled`` is the ticket the answer is for and its claims: when the new ticket would say
    the same and the old one has at least half its life left, it is answered again as it came.
    Most far polls change nothing the ticket says (their last-seen booking lasts many polls),
    and signing was the largest part of such a poll after the token's check.
    """
    now = int(time.time())
    life = queue_token_life(room)
    # The far poll's order key and kept-until (far_poll.py) go together or not at all.
    far = answer.order_key is not None and answer.kept_until_ms is not None
    values = {
        "room_id": room["id"],
        "visitor_id": vid,
        "ticket": answer.ticket,
        "generation": answer.generation,
        "environment": room["environment"],
        "session_id": answer.session_jti,
        "score": answer.score,
        "network_tag": answer.network_tag or None,
        # near the head (or held): its next poll goes straight to the full poll
        "near_head": answer.position is None or answer.position <= eng.NEAR_HEAD,
        "order_key": answer.order_key if far else None,
        "kept_until": answer.kept_until_ms if far else None,
        "region": services.settings.region or None,
        "arrived": arrived,
    }
    if polled is not None and _says_the_same(polled[1], values, now + life // 2):
        return polled[0]
    claims = tokens.TicketClaims(**values, issued_at=now, expires_at=now + life)
    return tokens.issue(services.keyring, claims)


# Every claim of a ticket but its times, with its default: what a ticket reused must say.
_SAID = {f.name: f.default for f in fields(tokens.TicketClaims)}
del _SAID["issued_at"], _SAID["expires_at"]


def _says_the_same(old: tokens.TicketClaims, values: dict[str, Any], lasts_until: int) -> bool:
    """Whether a ticket says what ``values`` (claims by name) say, and lasts until then.

    Compared by name rather than through a new TicketClaims: most far polls reuse their ticket,
    and building the claims cost more than comparing them.
    """
    exp = old.expires_at
    if type(exp) is not int or exp < lasts_until or old.issued_at is None:
        return False
    return all(getattr(old, name) == values.get(name, d) for name, d in _SAID.items())


def render(
    services: Services,
    room: dict[str, Any],
    vid: str,
    answer: QueueAnswer,
    polled: tuple[str, tokens.TicketClaims] | None = None,
) -> Spot:
    """A queue answer as the visitor's tagged outcome: its JSON body and the Retry-After it
    asks for (None when not waiting); ``polled``: the ticket polled and its claims (see
    ``queue_token``)."""
    arrived, position, eta = None, answer.position, answer.eta_seconds
    cell = services.region_cell
    if cell is not None:  # a room across regions: the place in the global line
        arrived = _arrived(polled)
        if answer.status == "waiting" and position:
            # a drawn pool spot's place on the line's time axis is its draw key's
            key = answer.order_key
            at = arrived if key is None else pool_order.line_arrival(key, arrived)
            position, eta = cell.global_place(room["id"], position, eta, at)
    body = answer_body(
        room,
        answer.status,
        room_status=answer.room_status,
        opens_at=answer.opens_at_ms,
        ticket=answer.ticket,
        position=position,
        eta_seconds=eta,
        poll_after_ms=answer.poll_after_ms or None,
        generation=answer.generation,
        odds=answer.odds,
    )
    if answer.status == "idle":
        return Idle(body)
    body["queueToken"] = queue_token(room, services, vid, answer, polled, arrived)
    receipt = services.receipts.receipt(room, vid, answer.order_key)
    if receipt is not None:
        body["receipt"] = receipt
    if answer.admission is not None:
        a = answer.admission
        body["token"] = admission_token(
            services, room, vid, admission_id=a.jti, session_id=a.session_jti,
            network_tag=a.network_tag, issued_at=a.issued_ms // 1000,
            expires_at=a.expires_ms // 1000,
        )  # fmt: skip
        return Admitted(body)
    retry_after = max(1, math.ceil(answer.poll_after_ms / 1000))
    return tagged(answer, body, retry_after)


def _arrived(polled: tuple[str, tokens.TicketClaims] | None) -> int:
    """When the visitor arrived in its region (ms): as its ticket says, else now (its entry;
    a second tab's entry counts from itself, so it is shown a place no earlier than its own)."""
    if polled is not None and polled[1].arrived is not None:
        return polled[1].arrived
    return int(time.time() * 1000)


def tagged(answer: QueueAnswer, body: dict[str, Any], retry_after: int | None) -> Spot:
    """The outcome the engine's answer is, by its status: a waiting spot of a random room's
    draw (which the engine answers with its odds, no place) is InDraw."""
    match answer.status:
        case "admitted":
            return Admitted(body, retry_after)
        case "held":
            return Held(body, retry_after)
        case "idle":
            return Idle(body, retry_after)
        case "waiting" if answer.odds is not None:
            return InDraw(body, retry_after)
        case "waiting":
            return Waiting(body, retry_after)
    raise ValueError(f"no outcome for status {answer.status!r}")


def answer_body(
    room: dict[str, Any],
    status: str,
    *,
    room_status: str,
    opens_at: int | None,
    ticket: int | None = None,
    position: int | None = None,
    eta_seconds: int | None = None,
    poll_after_ms: int | None = None,
    token: str | None = None,
    generation: int | None = None,
    odds: float | None = None,
) -> dict[str, Any]:
    """The one builder of a queue answer, in the shape ``visitor_models.QueueAnswer`` documents.

    A plain dict (no model validation on the poll path); ``queueToken`` is set by the caller
    once it knows there is a spot to poll.
    """
    return {
        "status": status,
        "room": room["slug"],
        "roomName": room["name"],
        "redirectUrl": room["redirectUrl"],
        "ticket": ticket,
        "position": position,
        "etaSeconds": eta_seconds,
        # a random room's waiting spot: in the draw, its chance in the next minute, no place
        "odds": odds,
        "opensAt": opens_at,
        "pollAfterMs": poll_after_ms,
        "queueToken": None,
        "token": token,
        "roomStatus": room_status,
        # The operator's texts for the line ride on every answer, so a change reaches every
        # open page at its next poll (rooms are read from the room directory, a round at most old:
        # RoomDirectory.current).
        "notice": room.get("notice"),
        # Only once the room has closed (each close starts a new generation): a room never
        # opened is idle too, and has not sold out. The answer's generation is Redis's own,
        # fresher than this process's cached room just after a close.
        "closedMessage": room.get("closedMessage")
        if max(int(room.get("generation", 1)), generation or 0) > 1
        else None,
    }


@dataclass(frozen=True)
class Binding:
    """What an outage admission is bound to, known without Redis.

    ``score`` is None where the caller holds an admission already earned (a refresh, which a
    normal refresh does not re-check against ``holdScore`` either).
    """

    session_jti: str
    vid: str
    score: int | None
    network_tag: str
    ticket: int | None = None  # the spot's, when a queue token named it
    generation: int | None = None  # of that spot


def ticket_binding(room: dict[str, Any], claims: tokens.TicketClaims, network_tag: str) -> Binding:
    """The binding a queue token proves offline, or Unavailable / TicketGone when it proves none.

    Only tokens that expire and carry the session binding and score count (older ones would be
    replayable for ever). A ticket of an older generation than the room's is gone for sure.
    """
    if claims.expires_at is None or claims.session_id is None or claims.score is None:
        raise Refusal(unavailable())
    generation = int(claims.generation)
    if generation < int(room.get("generation", 0)):
        raise Refusal(Refused("TicketGone"))
    # The network the spot entered from, like a normal admission; the poller's when unknown.
    tag = str(claims.network_tag or network_tag)
    return Binding(
        str(claims.session_id),
        str(claims.visitor_id),
        int(claims.score),
        tag,
        int(claims.ticket),
        generation,
    )
