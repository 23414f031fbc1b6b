"""A waiting visitor's calls: ``poll`` a ticket, ``refresh`` an admission, ``leave`` the line.

Each takes the claims its token proved (checked by the entrance: signature, expiry, the key's
environment) and owns the rest: the room's lookup, the engine call through the breaker, the
engine's and Redis's refusals, the room's fail mode during an outage, and the signing of the
ticket and admission the answer carries (answers.py). The JSON API's entrance (the hot path
and the Flask views, web/visitor/visitor_calls.py) and the page without JavaScript
(web/pages/plain_page.py) call the same functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anteroom.queue.connection.storage_errors import StorageBusy, StorageUnavailable
from anteroom.queue.line import room_engine as eng
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import answers, room_lookup
from anteroom.visit.answers import Binding
from anteroom.visit.fail_open import fail_open, usable_offline
from anteroom.visit.outcomes import Left, Refused, Spot
from anteroom.visit.refusals import (
    Refusal,
    engine_refusal,
    network_tag,
    storage_refusal,
    unavailable,
)


def poll(
    s: Services,
    ticket: tokens.TicketClaims,
    address: str | None,
    polled: str | None = None,
) -> Spot | Refused:
    """Where the ticket's spot stands now (its admission once dealt).

    ``polled`` is the ticket's token as sent: the answer gives it back instead of a new one
    while the new one would say the same (answers.queue_token); None always signs afresh (the
    page without JavaScript keeps its ticket in a cookie as long as the ticket lives).
    During an outage a fail-open room admits the spot, bound as a normal admission would be,
    from what the ticket carries (no Redis needed); the spot stays in Redis meanwhile.
    """
    misdirected = wrong_region(s, ticket)
    if misdirected:
        return misdirected
    room: dict[str, Any] | None = None
    qr, qj = ticket.room_id, ticket.session_id or ""
    try:
        room = room_lookup.room_by_id(s, qr)
        answer = s.breaker.call(
            lambda: s.engine.poll(
                qr, ticket.visitor_id, ticket.ticket, ticket.generation, qj, ticket.near_head,
                ticket,
            ),
            s.keys.room(qr),
        )  # fmt: skip
    except Refusal as refusal:
        return refusal.refused
    except StorageUnavailable:
        # the network the spot entered from, like a normal admission; the poller's when unknown
        polled_from = lambda room: network_tag(s, room, address)  # noqa: E731
        return _offline(
            s, room, lambda room: answers.ticket_binding(room, ticket, polled_from(room))
        )
    except StorageBusy as exc:
        return storage_refusal(exc)
    except eng.EngineError as exc:
        return engine_refusal(exc)
    again = (polled, ticket) if polled is not None else None
    return answers.render(s, room, ticket.visitor_id, answer, again)


def refresh(s: Services, admission: tokens.AdmissionClaims, address: str | None) -> Spot | Refused:
    """Extend a live admission by the room's admission life (a room may refuse renewals).

    During an outage a fail-open room renews it under the same rules: the binding and network
    of the admission held (the caller's network when it has none in a bindIp room), no revoked
    session.
    """
    if admission.not_renewable:
        # The token says so: refused before anything else, so no outage admission renews it.
        return Refused("NotRenewable")
    room: dict[str, Any] | None = None
    qr, vid = admission.room_id, admission.visitor_id
    try:
        room = room_lookup.room_by_id(s, qr)
        answers.check_renewable(room)
        answer = s.breaker.call(
            lambda: s.engine.refresh(
                qr, vid, None, admission.admission_id, admission.session_id or ""
            ),
            s.keys.room(qr),
        )
    except Refusal as refusal:
        return refusal.refused
    except StorageUnavailable:

        def binding(room: dict[str, Any]) -> Binding:
            tag = admission.network_tag or network_tag(s, room, address)
            return Binding(admission.session_id or "", vid, None, tag)

        return _offline(s, room, binding)
    except StorageBusy as exc:
        return storage_refusal(exc)
    except eng.EngineError as exc:
        return engine_refusal(exc)
    return answers.render(s, room, vid, answer)


def leave(s: Services, ticket: tokens.TicketClaims) -> Left | Refused:
    """Give the ticket's spot up (nothing to give up without Redis: retry later)."""
    misdirected = wrong_region(s, ticket)
    if misdirected:
        return misdirected
    qr = ticket.room_id
    try:
        s.breaker.call(
            lambda: s.engine.leave(qr, ticket.visitor_id, ticket.ticket, ticket.generation),
            s.keys.room(qr),
        )
    except StorageUnavailable:
        return unavailable()
    except StorageBusy as exc:
        return storage_refusal(exc)
    except eng.EngineError as exc:
        return engine_refusal(exc)
    return Left()


def wrong_region(s: Services, ticket: tokens.TicketClaims) -> Refused | None:
    """WrongRegion when ``ticket`` was issued in another region than this instance's (a room
    across regions keeps each spot in the region of its first call, docs/regions.md): its
    spot is there, so the caller is told where rather than TicketGone, which would have it
    enter again at the back. None for a ticket of this region, or of no region."""
    here = s.settings.region or None
    if ticket.region is None or ticket.region == here:
        return None
    return Refused(
        "WrongRegion",
        f"This ticket belongs to region {ticket.region!r}; send its calls there.",
        retry_after=1,
        fields={"queueToken": f"issued in region {ticket.region!r}, not {here or 'this one'!r}"},
    )


def _offline(
    s: Services, room: dict[str, Any] | None, binding: Callable[[dict[str, Any]], Binding]
) -> Spot | Refused:
    """Redis is unreachable: the room's fail mode decides (fail_open.py)."""
    try:
        room = usable_offline(room)
        return fail_open(s, room, binding(room))
    except Refusal as refusal:
        return refusal.refused
