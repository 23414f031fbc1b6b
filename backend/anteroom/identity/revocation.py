"""Revoking a session (by ``jti``) or a visitor (by ``vid``) across an environment's rooms.

One store: each room's ``rvk`` hash, which the room's scripts read inside its own hash tag (a
Redis Cluster rule: no script may touch two tags). A revocation is written into every room of
the environment, one script call per room, and a room created later copies its siblings'
(:meth:`Engine.create_room`). Each entry carries its own end: the longest life
of any token it must stop, so it expires by itself, and is purged lazily and in bounded steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from anteroom.identity.dependencies import IdentityServices
from anteroom.identity.sessions import SESSION_TTL_SEC
from anteroom.queue.line import room_engine as eng
from anteroom.queue.rooms.room_config import queue_token_life

KINDS = {"jti": "j", "vid": "v"}


@dataclass(frozen=True)
class Revoked:
    """The outcome of one revocation."""

    rooms: int  # rooms of the environment that hold it
    dropped_now: int  # spots dropped at once (a vid's; a jti's go at their next poll)
    expires_at_ms: int  # when the last room's entry stops counting


def life_sec(room: dict[str, Any]) -> int:
    """How long a revocation must count in ``room``: the longest life of a token it stops.

    Sessions live 6 h (a revoked one could enter again), queue tokens ``abandonAfterSec`` + 60 s
    (a spot that polls at that pace would live on), admissions ``admissionTtlSec`` (a refresh).
    """
    return max(SESSION_TTL_SEC, queue_token_life(room), int(room["admissionTtlSec"]))


def revoke(services: IdentityServices, environment: str, kind: str, value: str) -> Revoked:
    """Revoke session ``value`` (``kind`` ``jti``) or visitor ``value`` (``vid``) everywhere."""
    engine = services.engine
    count = dropped = 0
    longest = 0
    for room_id in engine.list_rooms(environment).values():
        try:
            room = engine.get_room(room_id)
        except eng.RoomNotFound:
            continue  # deleted meanwhile
        life_ms = life_sec(room) * 1000
        dropped += engine.revoke(room_id, **{kind: value}, life_ms=life_ms)
        count += 1
        longest = max(longest, life_ms)
        services.rooms.forget(("id", room_id))
    return Revoked(count, dropped, int(time.time() * 1000) + longest)
