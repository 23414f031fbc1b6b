"""The queue engine's Python facade: one method per Lua operation, results as Python types.

All rules live in the Lua scripts (``lua/``); this module builds their arguments, converts
their flat answers and turns their error codes and Redis failures into exceptions.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import redis

from anteroom.queue import lua_scripts as scripts
from anteroom.queue import room_config as rooms
from anteroom.queue.key_layout import DEFAULT_PREFIX, KeySpace
from anteroom.queue.redis_link import StorageError, storage_errors

# Spots this close to the front are answered by the full poll (lua/poll_far.lua says the same).
NEAR_HEAD = 100

__all__ = [
    "NEAR_HEAD",
    "Admission",
    "Engine",
    "EngineError",
    "LineEntry",
    "NotOpen",
    "QueueAnswer",
    "QueueFull",
    "RateLimited",
    "RoomNotFound",
    "RoomStats",
    "SessionRevoked",
    "SlugTaken",
    "TicketGone",
    "room_from_stored",
]


class EngineError(Exception):
    """A refusal by the queue engine; ``code`` is the API error code."""

    code = "EngineError"

    def __init__(self, message: str = "", retry_after: int | None = None) -> None:
        super().__init__(message or self.code)
        self.retry_after = retry_after


class RoomNotFound(EngineError):
    code = "RoomNotFound"


class TicketGone(EngineError):
    code = "TicketGone"


class RateLimited(EngineError):
    code = "RateLimited"


class QueueFull(EngineError):
    code = "QueueFull"


class SessionRevoked(EngineError):
    code = "SessionRevoked"


class NotOpen(EngineError):
    code = "NotOpen"


class SlugTaken(EngineError):
    code = "SlugTaken"


_ERRORS: dict[str, type[EngineError]] = {
    cls.code: cls
    for cls in (RoomNotFound, TicketGone, RateLimited, QueueFull, SessionRevoked, NotOpen)
}


@dataclass(frozen=True)
class Admission:
    """An admission dealt to a spot (times in epoch ms of the room's clock)."""

    jti: str
    issued_ms: int
    expires_ms: int
    session_jti: str
    network_tag: str
    deal_number: int


@dataclass(frozen=True)
class QueueAnswer:
    """One answer of enter/poll/refresh."""

    status: str
    ticket: int | None
    position: int | None
    eta_seconds: int | None
    opens_at_ms: int | None
    poll_after_ms: int
    room_status: str
    generation: int
    admission: Admission | None
    session_jti: str
    network_tag: str = ""
    score: int = 0


@dataclass(frozen=True)
class RoomStats:
    """Live figures of a room."""

    status: str
    waiting: int
    held: int
    active: int
    admitted_last_minute: int
    dealt_total: int
    opens_at_ms: int | None
    tickets: int
    peak_active: int
    now_ms: int


@dataclass(frozen=True)
class LineEntry:
    """One spot of the line, as the drain sees it."""

    position: int
    ticket: int
    visitor: str
    score: int


def _none(value: Any) -> int | None:
    number = int(value)
    return None if number < 0 else number


def _check(result: Any) -> Any:
    if isinstance(result, list) and result and result[0] == "ERR":
        cls = _ERRORS.get(result[1], EngineError)
        retry = int(result[2]) if len(result) > 2 and int(result[2]) > 0 else None
        raise cls(str(result[1]), retry_after=retry)
    return result


def _answer(raw: list[Any]) -> QueueAnswer:
    status = raw[0]
    admission = None
    if status == "admitted":
        admission = Admission(raw[10], int(raw[8]), int(raw[9]), raw[11], raw[12], int(raw[13]))
    opens_at = int(raw[4])
    return QueueAnswer(
        status=status,
        ticket=_none(raw[1]),
        position=_none(raw[2]),
        eta_seconds=_none(raw[3]),
        opens_at_ms=opens_at or None,
        poll_after_ms=int(raw[5]),
        room_status=raw[6],
        generation=int(raw[7]),
        admission=admission,
        session_jti=raw[11],
        network_tag=raw[12],
        score=int(raw[14]),
    )


def room_from_stored(raw: dict[str, str]) -> dict[str, Any]:
    """A room's hash → its configuration and status (API names)."""
    room = rooms.from_stored(raw)
    room.update(
        id=raw["rid"],
        environment=raw["env"],
        status=raw["st"],
        opensAt=int(raw.get("oa", 0)) or None,
        generation=int(raw.get("gen", 1)),
    )
    return room


class Engine:
    """Queue operations on one Redis (or Valkey, or Cluster) under one key prefix."""

    def __init__(
        self, client: redis.Redis, prefix: str = DEFAULT_PREFIX, reader: Any = None
    ) -> None:
        """``reader`` runs read-only scripts (a replica or cluster client); default ``client``."""
        self.redis = client
        self.reader = client if reader is None else reader
        self.keys = KeySpace(prefix)
        self._scripts = scripts.register(client)

    def _run(self, op: str, room_id: str, *args: Any) -> Any:
        with storage_errors():
            result = self._scripts[op](keys=[self.keys.room_base(room_id)], args=list(args))
        return _check(result)

    # -- rooms ---------------------------------------------------------------------------

    def create_room(self, env: str, config: dict[str, Any]) -> dict[str, Any]:
        """Create a room in ``env`` from API-named ``config`` (validated); return the room."""
        config = rooms.validate(config)
        room_id = "q" + secrets.token_hex(8)
        with storage_errors():
            if not self.redis.hsetnx(self.keys.env_rooms(env), config["slug"], room_id):
                raise SlugTaken(f"slug {config['slug']!r} is taken in {env!r}")
            self.redis.sadd(self.keys.environments(), env)
        fields = rooms.to_stored(config) | {"env": env, "rid": room_id}
        flat = [x for pair in fields.items() for x in pair]
        try:
            self._run("create_room", room_id, *flat)
        except (EngineError, StorageError):
            with storage_errors():
                self.redis.hdel(self.keys.env_rooms(env), config["slug"])
            raise
        self._inherit_revocations(env, room_id)
        return self.get_room(room_id)

    def _inherit_revocations(self, env: str, room_id: str) -> None:
        """Copy the environment's live revocations into a new room.

        Revocations are kept per room (a script only touches its own room's hash tag) and written
        into every room of the environment, so any sibling holds them all. A revocation made
        while this room is being created may miss it: a race of milliseconds, documented.
        """
        with storage_errors():
            siblings = [i for i in self.list_rooms(env).values() if i != room_id]
            if not siblings:
                return
            live = self.redis.hgetall(self.keys.room_keys(siblings[0])["rvk"])
            if live:
                self.redis.hset(self.keys.room_keys(room_id)["rvk"], mapping=live)
                self.redis.hincrby(self.keys.room(room_id), "rvn", 1)

    def get_room(self, room_id: str) -> dict[str, Any]:
        """Configuration and status of a room (API names), or :class:`RoomNotFound`."""
        with storage_errors():
            raw = self.redis.hgetall(self.keys.room(room_id))
        if not raw:
            raise RoomNotFound()
        return room_from_stored(raw)

    def room_id(self, env: str, slug: str) -> str | None:
        """Id of the room ``slug`` in ``env``, or None."""
        with storage_errors():
            return self.redis.hget(self.keys.env_rooms(env), slug)

    def list_rooms(self, env: str) -> dict[str, str]:
        """Slug → room id of every room in ``env``."""
        with storage_errors():
            return self.redis.hgetall(self.keys.env_rooms(env))

    def update_room(self, room_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Change configuration fields (not ``slug``); effective at once for the whole line."""
        changes = rooms.validate(changes, partial=True)
        if changes:
            flat = [x for pair in rooms.to_stored(changes).items() for x in pair]
            self._run("update_room", room_id, *flat)
        return self.get_room(room_id)

    def delete_room(self, room_id: str) -> None:
        """Delete a room and all its keys; its slug becomes free."""
        room = self.get_room(room_id)
        self._run("delete_room", room_id)
        env_rooms = self.keys.env_rooms(room["environment"])
        with storage_errors():
            if self.redis.hget(env_rooms, room["slug"]) == room_id:
                self.redis.hdel(env_rooms, room["slug"])

    def open(self, room_id: str, opens_at_ms: int | None = None) -> str:
        """Open an idle room (optionally at ``opens_at_ms``) or resume a paused one."""
        seed = secrets.token_hex(16)
        result = self._run("open_room", room_id, "" if opens_at_ms is None else opens_at_ms, seed)
        return result[1]

    def pause(self, room_id: str) -> None:
        """Pause an open room (:class:`NotOpen` otherwise)."""
        self._run("pause_room", room_id)

    def close(self, room_id: str) -> None:
        """Close a room: every spot expires, counters reset, status idle."""
        self._run("close_room", room_id)

    # -- visitors ------------------------------------------------------------------------

    def enter(
        self, room_id: str, vid: str, session_jti: str, score: int, network_tag: str = ""
    ) -> QueueAnswer:
        """Take (or find again) the visitor's spot."""
        return _answer(self._run("enter", room_id, vid, session_jti, int(score), network_tag))

    def poll(
        self,
        room_id: str,
        vid: str,
        ticket: int,
        generation: int,
        session_jti: str = "",
        near_head: bool = False,
    ) -> QueueAnswer:
        """Poll a spot named by its (signed) ticket.

        ``session_jti`` (the ticket's ``qj``) lets a revoked session hear so after its spot is gone.
        ``near_head`` (the spot was last seen within ``NEAR_HEAD`` of the front, or held) goes
        straight to the full poll, which the small far poll would only hand it on to: one round
        trip instead of two. Either way the answer is the full poll's whenever it must be.
        """
        args = (vid, ticket, generation, session_jti)
        if not near_head:
            raw = self._run("poll_far", room_id, *args)  # the common case: far from the head
            if raw[0] != "MORE":  # MORE: the far poll wrote nothing; the full poll answers
                return _answer(raw)
        return _answer(self._run("poll", room_id, *args))

    def leave(self, room_id: str, vid: str, ticket: int, generation: int) -> bool:
        """Free a waiting spot or an active slot; True when something was freed."""
        return bool(self._run("leave", room_id, vid, ticket, generation))

    def refresh(
        self,
        room_id: str,
        vid: str,
        generation: int | None,
        admission_jti: str,
        session_jti: str = "",
    ) -> QueueAnswer:
        """Extend a live admission's active slot by the room's admission TTL.

        ``generation`` may be None: the admission's jti already names one generation.
        """
        gen = "" if generation is None else generation
        return _answer(self._run("refresh", room_id, vid, gen, admission_jti, session_jti))

    def revoke(
        self, room_id: str, *, jti: str | None = None, vid: str | None = None, life_ms: int
    ) -> bool:
        """Revoke a session (``jti``) or visitor (``vid``) in one room for ``life_ms``.

        True when a spot was dropped at once (a vid's; a jti's goes at its next poll).
        """
        if (jti is None) == (vid is None):
            raise ValueError("revoke takes exactly one of jti or vid")
        kind, value = ("j", jti) if jti is not None else ("v", vid)
        return bool(self._run("revoke", room_id, kind, value, int(life_ms)))

    def revocations(self, room_id: str) -> dict[str, int]:
        """A room's revocations: ``j:<jti>`` / ``v:<vid>`` → until (ms on the room's clock)."""
        with storage_errors():
            raw = self.redis.hgetall(self.keys.room_keys(room_id)["rvk"])
        return {field: int(until) for field, until in raw.items()}

    # -- operators -----------------------------------------------------------------------

    def stats(self, room_id: str) -> RoomStats:
        """Live figures of a room."""
        r = self._run("stats", room_id)
        return RoomStats(
            r[0], int(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5]), int(r[6]) or None,
            int(r[7]), int(r[8]), int(r[9]),
        )  # fmt: skip

    def line(self, room_id: str, limit: int = 200) -> list[LineEntry]:
        """The first ``limit`` (≤ 200) waiting spots in drain order."""
        r = self._run("line", room_id, limit)
        return [
            LineEntry(i // 3 + 1, int(r[i + 1]), r[i], int(r[i + 2])) for i in range(0, len(r), 3)
        ]

    def sweep(self, room_id: str, count: int = 500) -> tuple[int, bool]:
        """One bounded sweep step: (spots dropped, pass finished).

        Enter and poll already carry the sweep along; this is for operator tooling and tests.
        """
        dropped, finished = self._run("sweep", room_id, count)
        return int(dropped), bool(finished)

    def set_clock(self, room_id: str, epoch_ms: int) -> None:
        """Pin a room's clock at ``epoch_ms`` (0 unpins). Tests only; no HTTP route calls this."""
        self._run("set_clock", room_id, int(epoch_ms))

    def shift_clock(self, room_id: str, ms: int) -> int:
        """Move a room's clock ``ms`` ahead (tests and tooling; no HTTP route calls this)."""
        return int(self._run("shift_clock", room_id, int(ms)))
