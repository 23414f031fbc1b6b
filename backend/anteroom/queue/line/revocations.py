"""The revocation rule as Python reads it: lua/_revocations.lua's rule, on the room's clock.

A room's revocations (its ``rvk`` hash) map ``j:<session jti>`` / ``v:<vid>`` to the time they
end, in ms of the room's clock (Redis TIME plus the room's offset, or its pinned time). The
scripts judge them in Lua; Python judges them here only, for the identify step (is a returning
session revoked?) and the fail-open path (the room directory's copy, Redis unreachable). Judging
on the web server's clock instead would let a room whose clock is shifted (tests, rehearsals)
disagree with its own scripts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import redis

from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.queue.rooms.room_hash import stored

# The room hash fields of its clock, read beside its revocations.
CLOCK_FIELDS = (stored("clockOffset"), stored("pinnedClock"))


def fields(vid: str, session_jti: str) -> list[str]:
    """The entries that revoke visitor ``vid`` or its session (none for a session without jti)."""
    return [f"v:{vid}", f"j:{session_jti}"] if session_jti else [f"v:{vid}"]


def room_now_ms(server_ms: int, clock_offset: Any = 0, pinned_clock: Any = 0) -> int:
    """The room's clock (lua/_clock.lua): pinned plus offset when pinned, else server + offset."""
    offset, pinned = int(clock_offset or 0), int(pinned_clock or 0)
    return pinned + offset if pinned > 0 else server_ms + offset


def counts(until_ms: Any, room_now: int) -> bool:
    """An entry counts while its end is ahead of the room's clock (absent: it does not)."""
    return until_ms is not None and int(until_ms) > room_now


def is_revoked(entries: Mapping[str, Any], vid: str, session_jti: str, room_now: int) -> bool:
    """True when a room's ``entries`` revoke ``vid`` or its session at ``room_now``."""
    return any(counts(entries.get(f), room_now) for f in fields(vid, session_jti))


def revoked_in_rooms(
    client: redis.Redis, keys: KeySpace, room_ids: Sequence[str], vid: str, session_jti: str
) -> bool:
    """True when any of ``room_ids`` revokes ``vid`` or its session, each on its own clock.

    One pipelined round trip: each room's two entries and clock fields, and Redis TIME.
    """
    if not room_ids:
        return False
    wanted = fields(vid, session_jti)
    pipe = client.pipeline(transaction=False)
    for room_id in room_ids:
        pipe.hmget(keys.room_keys(room_id)["rvk"], wanted)
        pipe.hmget(keys.room(room_id), CLOCK_FIELDS)
    pipe.time()
    *rows, (sec, usec) = pipe.execute()
    server_ms = int(sec) * 1000 + int(usec) // 1000
    for i in range(0, len(rows), 2):
        now = room_now_ms(server_ms, *rows[i + 1])
        if any(counts(until, now) for until in rows[i]):
            return True
    return False
