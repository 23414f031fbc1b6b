"""The signed agents' lane of a room (a room's ``agents`` setting ``lane``): an admission budget
of its own, at the lane's rate (``agentLaneRatePerMinute``) on the room's clock, apart from the
room's bank: agents admitted through it never take the visitors' rate, and are not in the line.

One script call per admission asked (lua/agent_lane.lua), on the room's hash slot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from anteroom.queue.connection import lua_scripts as scripts
from anteroom.queue.connection.redis_link import Client
from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.queue.rooms.key_layout import KeySpace


@dataclass(frozen=True)
class LaneAnswer:
    """``admitted`` (at ``now_ms``, room clock), else ``retry_after_ms`` until the next one;
    ``open`` False when the room is not open (or gone): the lane admits nobody then."""

    admitted: bool
    open: bool
    now_ms: int = 0
    retry_after_ms: int = 0


def burst_of(rate_per_minute: int) -> int:
    """Admissions the lane may deal at once: one second's worth, at least one."""
    return max(1, math.ceil(rate_per_minute / 60))


class AgentLane:
    """Takes admissions from rooms' agent lanes."""

    def __init__(self, client: Client, keys: KeySpace) -> None:
        self.keys = keys
        self._admit = scripts.register_standalone(client, "agent_lane")  # type: ignore[arg-type]

    def admit(self, room_id: str, rate_per_minute: int) -> LaneAnswer:
        """One admission from ``room_id``'s lane if its budget allows."""
        keys = [self.keys.room(room_id), self.keys.agent_lane(room_id)]
        with storage_errors():
            ok, value = self._admit(keys=keys, args=[rate_per_minute, burst_of(rate_per_minute)])
        ok, value = int(ok), int(value)
        if ok < 0:
            return LaneAnswer(False, False)
        if ok == 1:
            return LaneAnswer(True, True, now_ms=value)
        return LaneAnswer(False, True, retry_after_ms=value)
