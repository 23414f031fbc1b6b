"""Fail-open: admitting during a Redis outage in a room whose ``failMode`` is ``open``.

Only from what is known without Redis (the room directory's rooms and revocations, what a
token proves), as strictly as a normal admission; each new one is recorded so that its spot
is booked once Redis is back.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from anteroom.queue.line.fail_open_ledger import FailOpenAdmission
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit.answers import Binding, admission_token, answer_body
from anteroom.visit.outcomes import Admitted, Refused
from anteroom.visit.refusals import Refusal, unavailable


def usable_offline(room: dict[str, Any] | None) -> dict[str, Any]:
    """``room`` when it admits during an outage (open, ``failMode: open``), else refused
    (Unavailable).

    Nobody is admitted in doubt anywhere else: an unknown, closed, paused or idle room answers
    Unavailable, and no spot is touched, so everyone keeps their place for when Redis returns.
    """
    if room is None or room.get("failMode") != "open" or room.get("status") != "open":
        raise Refusal(unavailable())
    return room


def fail_open(services: Services, room: dict[str, Any], binding: Binding) -> Admitted:
    """Redis is unreachable and ``room`` fails open: admit (marked ``fo``), as strictly as ever.

    The admission carries the session binding and, in a bindIp room, the network tag; a session
    at or above the room's ``holdScore`` waits (Unavailable) and a revocation this instance has
    read (see :class:`~anteroom.queue.rooms.room_directory.RoomDirectory`) is refused as it would be
    normally.
    """
    room = usable_offline(room)
    if not binding.session_jti:
        raise Refusal(unavailable())
    if binding.score is not None and binding.score >= int(room["holdScore"]):
        raise Refusal(unavailable())
    if services.directory.is_revoked(room["id"], binding.session_jti, binding.vid):
        raise Refusal(Refused("SessionRevoked"))
    now = int(time.time())
    jti = tokens.new_id()
    known = binding.generation
    generation = int(known if known is not None else room.get("generation", 0))
    if binding.ticket is not None:
        # The jti Redis gives this spot's admission: once booked, it refreshes like any other.
        jti = spot_admission_jti(room["id"], generation, binding.ticket)
    expires_at = now + int(room["admissionTtlSec"])
    token = admission_token(
        services, room, binding.vid, admission_id=jti, session_id=binding.session_jti,
        network_tag=binding.network_tag, issued_at=now, expires_at=expires_at, fail_open=True,
    )  # fmt: skip
    if binding.score is not None:  # a new admission (a refresh's is booked already)
        # Booked once Redis is back, so its spot is not dealt again: no ghost admission.
        admission = FailOpenAdmission(binding.vid, binding.ticket, generation, expires_at)
        services.fail_open.record(room["id"], admission)
    body = answer_body(
        room,
        "admitted",
        room_status=room.get("status", "open"),
        opens_at=room.get("opensAt"),
        token=token,
    )
    return Admitted(body | {"failOpen": True})


def spot_admission_jti(room_id: str, generation: int, ticket: int) -> str:
    """The jti of a spot's admission: lua/_answer.lua's ``admission_jti``, the same rule."""
    return hashlib.sha1(f"{room_id}:{generation}:{ticket}".encode()).hexdigest()[:16]
