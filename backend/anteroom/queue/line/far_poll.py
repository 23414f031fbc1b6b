"""The far poll answered in Python, from the ticket's claims and the room's snapshot.

A spot far from the front polls with a ticket that carries its order key (``qk``) and until when
its spot is surely kept if unpolled (``qu``, room clock ms), besides its ticket number,
generation, session (``qj``), score (``qs``) and network tag (``qi``). With the process's
snapshot of the room (room_snapshot.py, at most a second old) that is enough to answer — at no
Redis cost per poll — every poll that would get a plain "waiting" answer. Any other case is left
to the scripts (``None``), so every rule holds as before:

- a newer generation than the snapshot's, a room not open or paused, a regrouping under way, a
  passthrough room (its line goes at once), a random room (no place, odds: see
  lua/_draw_random.lua), a held score, a revocation of the visitor or its
  session, a ticket past its ``qu`` (the spot may have been swept), a spot the last batched
  booking did not find: Redis answers;
- an older generation: ``TicketGone`` (generations only grow);
- the poll limit is the process's own, as for every poll;
- near the front — fewer than ``EXACT_WITHIN`` ahead even at the least, after allowing for the
  admissions since the snapshot — Redis answers exactly.

The position is 1 + the spots ahead from block counts (line_blocks.py): never better than the
exact rank by more than the admissions made since the snapshot (≤ a second's worth), never
worse by more than the spots of its own block that left or stand behind it. Last-seen is booked
in batches (seen_bookings.py); a spot is booked when its ticket's ``qu`` falls short of what its
cadence asks (3 intervals I, at least ``abandonAfterSec``, plus the room's ``gracePeriodSec``),
two further intervals ahead, so a far visitor books every other poll and one that left is swept
at most about 5 I after its last poll (at least ``abandonAfterSec`` + min(``abandonAfterSec`` /
2, 150 s)), plus the grace and a sweep pass.
"""

from __future__ import annotations

import math
from typing import Any

from anteroom.queue.connection.script_replies import QueueAnswer
from anteroom.queue.line.poll_cadence import poll_after, seen_lead_ms
from anteroom.queue.line.room_snapshot import RoomSnapshot
from anteroom.sdk.tokens import TicketClaims

EXACT_WITHIN = 1_000  # places answered exactly by Redis
MAX_ADMIT = 200  # admissions per script call (lua/_admissions.lua)
SEEN_BOOKING_MAX_MS = 150_000  # as lua/_expiry.lua
KEPT_MARGIN_MS = 1_000  # the batched booking lands up to a second after the poll
BOOK_INTERVALS_AHEAD = 2  # a far visitor books every other poll; a leaver goes within 5 I


class Gone(Exception):
    """The ticket's generation is over: ``TicketGone``."""


def _claim_int(value: Any) -> int | None:
    # Signed by this service, but a claim of an older format must not become a position.
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def answer_far(
    snapshot: RoomSnapshot | None,
    now_ms: int,
    vid: str,
    ticket: int,
    generation: int,
    claims: TicketClaims,
) -> tuple[QueueAnswer, int] | None:
    """The waiting answer and the last-seen lead to book (ms, 0: none), or None for Redis."""
    order_key, kept_until = _claim_int(claims.order_key), _claim_int(claims.kept_until)
    score = _claim_int(claims.score)
    if snapshot is None or order_key is None or kept_until is None or score is None:
        return None
    if generation < snapshot.generation:
        raise Gone()
    session_jti = claims.session_id or ""
    if (
        generation > snapshot.generation
        or not snapshot.counted
        or snapshot.status not in ("open", "paused")
        or snapshot.regrouping
        or snapshot.passthrough
        or snapshot.random
        or 0 < snapshot.boundary_ms <= now_ms
        or score >= snapshot.hold_score
        or now_ms >= kept_until
        or snapshot.revoked(vid, session_jti, now_ms)
    ):
        return None
    place = snapshot.blocks.place(order_key)
    if place is None:
        return None
    fewest, most = place
    # admissions the snapshot has not seen yet: the bank's second, a call's batch
    unseen = MAX_ADMIT + math.ceil(snapshot.rate / 60 * 2)
    if fewest - unseen < EXACT_WITHIN:
        return None
    position = most + 1
    pace = snapshot.rate / 60
    eta: int | None = None
    delay = max(0, snapshot.opens_at_ms - now_ms)
    if snapshot.status == "open":
        if snapshot.capacity > 0 and snapshot.active >= snapshot.capacity:
            recent = snapshot.admitted_last_minute  # full: the pace admissions were seen at
            if recent > 0:
                pace, eta = recent / 60, math.ceil(position * 60 / recent)
        else:
            eta = math.ceil((delay + position * 60_000 / snapshot.rate) / 1000)
    interval = poll_after(position, pace, delay, snapshot.line, snapshot.poll_budget)
    abandon_ms = snapshot.abandon_after_sec * 1000
    grace = snapshot.grace_period_sec
    book = 0
    if kept_until - now_ms < max(abandon_ms, 3 * interval) + grace * 1000:
        # Booked two further intervals ahead: kept 3 I + 2 I, so the next poll (about I later,
        # even a late one) still finds 3 I ahead and books nothing, and the one after books.
        # One interval ahead, the second's margin made every poll of a far visitor book.
        book = seen_lead_ms(interval, snapshot.abandon_after_sec, grace) + max(
            min(abandon_ms // 2, SEEN_BOOKING_MAX_MS), BOOK_INTERVALS_AHEAD * interval
        )
        kept_until = now_ms + book + abandon_ms - KEPT_MARGIN_MS
    answer = QueueAnswer(
        status="waiting",
        ticket=ticket,
        position=position,
        eta_seconds=eta,
        opens_at_ms=snapshot.opens_at_ms or None,
        poll_after_ms=interval,
        room_status=snapshot.status,
        generation=generation,
        admission=None,
        session_jti=session_jti,
        network_tag=claims.network_tag or "",
        score=score,
        order_key=order_key,
        kept_until_ms=kept_until,
    )
    return answer, book
