"""The queue engine's Python facade: one method per Lua operation, results as Python types.

All rules live in the Lua scripts (``lua/``); this module builds their arguments, converts
their flat answers and turns their error codes and Redis failures into exceptions.
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis

from anteroom.queue.connection import lua_scripts as scripts
from anteroom.queue.connection.cluster_client import is_cluster
from anteroom.queue.connection.script_call import evalsha
from anteroom.queue.connection.script_replies import (
    Admission,
    LineEntry,
    QueueAnswer,
    RoomStats,
    TickResult,
    line_entries,
    queue_answer,
    room_stats,
    sweep_result,
    tick_result,
)
from anteroom.queue.connection.storage_errors import StorageError, storage_errors
from anteroom.queue.draw.draw_beacon import round_at
from anteroom.queue.draw.room_draw import DrawDone, make_draw
from anteroom.queue.line.far_poll import Gone, answer_far
from anteroom.queue.line.poll_limit import PollCounter
from anteroom.queue.line.room_snapshot import SnapshotCache
from anteroom.queue.line.seen_bookings import SeenBookings
from anteroom.queue.rooms import invite_book, room_events
from anteroom.queue.rooms import room_config as rooms
from anteroom.queue.rooms.key_layout import ABANDON_FIELDS, DEFAULT_PREFIX, WAIT_BUCKETS, KeySpace
from anteroom.queue.rooms.room_hash import stored
from anteroom.sdk import draw as draws
from anteroom.sdk.tokens import InviteClaims, SessionClaims, TicketClaims

# Spots this close to the front poll the full poll straight away: their tickets say so
# (TicketClaims.near_head), and the snapshot would only hand them on.
NEAR_HEAD = 100
# Counters of the room hash, counted over the room's life by the scripts (a close keeps them;
# only `dealt` restarts when the room closes): entries taken, QueueFull refusals, leaves, spots
# dropped by the sweep or the drain (abandoned, expired, revoked), admissions dealt.
COUNTERS = tuple(
    stored(name) for name in ("entries", "refusedFull", "leaves", "abandoned", "admitted")
)
# Scripts that change what every process's room directory holds (settings, state, clock,
# revocations): each is followed by a bump of KeySpace.rooms_version.
CHANGES_ROOMS = frozenset(
    ("create_room", "update_room", "delete_room", "open_room", "pause_room", "close_room",
     "revoke", "set_clock", "shift_clock", "finish_draw", "reroll_draw", "set_beacon",
     "set_draw_regions",
     "set_events")
)  # fmt: skip

__all__ = [
    "COUNTERS",
    "NEAR_HEAD",
    "WAIT_BUCKETS",
    "AddressLimited",
    "Admission",
    "ChallengeSpent",
    "DrawDone",
    "DrawLost",
    "Engine",
    "EngineError",
    "IdentifyLimited",
    "InviteExpired",
    "InviteNotFound",
    "InviteSpent",
    "InviteWithdrawn",
    "JoinAnswer",
    "JoinIdentify",
    "LineEntry",
    "NoDraw",
    "NotOpen",
    "QueueAnswer",
    "QueueFull",
    "RateLimited",
    "RoomClosed",
    "RoomNotFound",
    "RoomStats",
    "SessionRevoked",
    "SlugTaken",
    "TickResult",
    "TicketGone",
    "public_draw",
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


class AddressLimited(RateLimited):
    """The entering address is over its per-address limit (counted by the enter script)."""

    code = "AddressLimited"


class IdentifyLimited(RateLimited):
    """The arriving address is over its identify limit (counted by the join script)."""

    code = "IdentifyLimited"


class ChallengeSpent(EngineError):
    """The challenge was spent by another proof (the join script)."""

    code = "ChallengeSpent"


@dataclass(frozen=True)
class JoinIdentify:
    """The identify half of a join, as lua/join.lua takes it: the limit's counters (key, limit,
    window seconds), the network's and the environment's counters of this minute, the proof's
    marker, and the two sessions the network's count chooses between (claims JSON, score,
    refused), both of the visitor ``vid`` and the session ``session_id``."""

    counters: Sequence[tuple[str, int, int]]
    network_key: str
    environment_key: str
    busy_above: int
    marker_key: str
    mark: str
    life_ms: int
    vid: str
    session_id: str
    calm: tuple[str, int, bool]
    busy: tuple[str, int, bool]


@dataclass(frozen=True)
class JoinAnswer:
    """What a join did: ``which`` session it spent the proof for (``calm``, ``busy``, or
    ``earned`` by a first attempt: ``earned`` holds its claims JSON), and the entry's answer
    (None: the session is refused, never entered)."""

    which: str
    earned: str
    entered: QueueAnswer | None


class QueueFull(EngineError):
    code = "QueueFull"


class RoomClosed(EngineError):
    """The room's mode is reject: it takes no new entries (those in it keep their spots)."""

    code = "RoomClosed"


class SessionRevoked(EngineError):
    code = "SessionRevoked"


class InviteSpent(EngineError):
    """The invite was used by as many other identities as it allows."""

    code = "InviteSpent"


class InviteExpired(EngineError):
    """The invite's expiry has passed on the room's clock."""

    code = "InviteExpired"


class InviteWithdrawn(EngineError):
    """The room's operator withdrew the invite: nobody new enters with it."""

    code = "InviteWithdrawn"


class InviteNotFound(EngineError):
    """No invite of that id is on record in the room (never issued there, or issued before
    invites were recorded)."""

    code = "InviteNotFound"


class NotOpen(EngineError):
    code = "NotOpen"


class SlugTaken(EngineError):
    code = "SlugTaken"


class EventsChanged(EngineError):
    """The room's events were written by someone else since they were read: read again."""

    code = "EventsChanged"


class DrawLost(EngineError):
    """Another process took the draw over from this one (its lease ran out)."""

    code = "DrawLost"


class NoDraw(EngineError):
    """No draw waits to be made: nothing to re-roll."""

    code = "NoDraw"


# Entrants numbered, or placed, per step of an event pre-queue's draw (~5 ms of Redis a step).
PREQUEUE_BATCH = 2_000
# Where a tick hands a due draw instead of making it: (room id, kind, the draw's job).
Background = Callable[[str, str, Callable[[], object]], object]

_ERRORS: dict[str, type[EngineError]] = {
    cls.code: cls
    for cls in (
        RoomNotFound,
        EventsChanged,
        TicketGone,
        RateLimited,
        AddressLimited,
        QueueFull,
        RoomClosed,
        SessionRevoked,
        InviteSpent,
        InviteExpired,
        InviteWithdrawn,
        InviteNotFound,
        NotOpen,
        DrawLost,
        NoDraw,
    )
}


def _check(result: Any) -> Any:
    if isinstance(result, list) and result and result[0] == "ERR":
        cls = _ERRORS.get(result[1], EngineError)
        retry = int(result[2]) if len(result) > 2 and int(result[2]) > 0 else None
        raise cls(str(result[1]), retry_after=retry)
    return result


def public_draw(raw: dict[str, str]) -> dict[str, Any] | None:
    """What may be published of a room's draw (hash fields → API names), or None: no draw.

    The commitment from the moment it is made; the seed, root and count only once the draw is
    made (state 'd'); the salt never. Re-rolled commitments are listed as ``withdrawn``.
    """
    state = raw.get(stored("drawState"), "")
    if state not in ("c", "r", "d"):
        return None
    out: dict[str, Any] = {
        "commitment": raw.get(stored("commitment"), ""),
        "committedAt": int(raw.get(stored("committedAt"), 0) or 0),
    }
    withdrawn = raw.get(stored("withdrawn"), "")
    if withdrawn:
        out["withdrawn"] = json.loads(withdrawn)
    if state == "d":
        out["seed"] = raw.get(stored("drawSeed"), "")
        out["root"] = raw.get(stored("drawRoot"), "")
        out["entrants"] = int(raw.get(stored("drawEntrants"), 0) or 0)
    region = raw.get(stored("drawRegion"), "")
    if region:  # a draw across regions (queue/regions/shared_draw.py)
        out["region"] = region
        if state == "d" and raw.get(stored("drawRegions")):
            out |= json.loads(raw[stored("drawRegions")])
    out["beacon"] = None
    url = raw.get(stored("beaconUrl"), "")
    if url:
        round_number = int(raw.get(stored("beaconRound"), 0) or 0)
        value = raw.get(stored("beaconValue"), "") or None
        out["beacon"] = {"url": url, "round": round_number, "value": value}
        if state != "d" and int(raw.get(stored("beaconWaitingSince"), 0) or 0):
            out["waiting"] = f"waiting for beacon round {round_number}"
    return out


def room_from_stored(raw: dict[str, str]) -> dict[str, Any]:
    """A room's hash → its configuration and status (API names), and its draw's public part."""
    room = rooms.from_stored(raw)
    room.update(
        id=raw[stored("id")],
        environment=raw[stored("environment")],
        status=raw[stored("status")],
        opensAt=int(raw.get(stored("opensAt"), 0)) or None,
        generation=int(raw.get(stored("generation"), 1)),
        draw=public_draw(raw),
        events=room_events.decode(raw.get(stored("events"))),
        eventsVersion=raw.get(stored("eventsVersion"), "0"),
        # the room's clock as read (tests move it), so the web tier judges events on it too
        clock=[int(raw.get(stored("clockOffset")) or 0), int(raw.get(stored("pinnedClock")) or 0)],
    )
    if raw.get(stored("bypass")):
        # The rules as stored (secret hashes), for the service's own matching (never shown:
        # the API's answers list the fields they show, and `bypass` is the rules without them).
        room["bypassStored"] = raw[stored("bypass")]
    if room["safetyNet"] is not None:  # its state beside its thresholds (GET only, never set)
        queueing = raw.get(stored("safetyNetState")) == "q"
        since = int(raw.get(stored("safetyNetSince")) or 0)
        room["safetyNet"] |= {"state": "queueing" if queueing else "calm", "since": since or None}
    return room


class Engine:
    """Queue operations on one Redis (or Valkey, or Cluster) under one key prefix."""

    # A room across regions (queue/regions/invite_uses.py): run before an entry with an invite,
    # it claims the invite's use across regions and raises InviteSpent/InviteWithdrawn.
    invite_gate: Callable[[InviteClaims, str], None] | None = None
    # and run after an invite's withdrawal here (room id, invite id): recorded for every region
    invite_withdrawn: Callable[[str, str], None] | None = None

    def __init__(
        self, client: redis.Redis, prefix: str = DEFAULT_PREFIX, reader: Any = None
    ) -> None:
        """``reader`` (a replica, a cluster client) reads the rooms' snapshots (the far poll's
        one read, lua/snapshot.lua); else ``client``."""
        self.redis = client
        self.reader = client if reader is None else reader
        self.keys = KeySpace(prefix)
        self._scripts = scripts.register(client)
        self._read_only: bool | None = None  # does the reader know EVALSHA_RO (Redis >= 7)?
        self.polls = PollCounter()
        # The far poll from a snapshot (far_poll.py): this process's snapshots of rooms and its
        # batched last-seen bookings (the room ticker's thread flushes them).
        self.snapshots = SnapshotCache(
            lambda room_id, rvn: self._run_read("snapshot", room_id, rvn)
        )
        self.bookings = SeenBookings(
            lambda room_id, args: self._run("book_seen_many", room_id, *args)
        )

    def script_keys(self, op: str, room_id: str) -> list[str]:
        """The keys operation ``op`` declares (its ``-- KEYS:`` header), for room ``room_id``."""
        base = self.keys.room_base(room_id)
        return [base + name for name in scripts.operation(op).keys]

    def _run(self, op: str, room_id: str, *args: Any, extra_keys: Sequence[str] = ()) -> Any:
        keys = self.script_keys(op, room_id)
        if extra_keys:
            keys += extra_keys
        with storage_errors():
            result = evalsha(self.redis, self._scripts[op], keys, args)
            if op in CHANGES_ROOMS:
                # Its own command: the counter is not in the room's slot on a cluster. A change
                # whose bump is lost (a reset just after) reaches the others at their next round.
                self.redis.incr(self.keys.rooms_version())
        return _check(result)

    def run(self, op: str, room_id: str, *args: Any) -> Any:
        """Run operation ``op`` of room ``room_id``: for the modules beside the engine that own
        their scripts (queue/line/parking.py)."""
        return self._run(op, room_id, *args)

    def _run_read(self, op: str, room_id: str, *args: Any) -> Any:
        """Run a script that writes nothing on ``reader``: EVALSHA_RO where the server has it."""
        script = self._scripts[op]
        keys = self.script_keys(op, room_id)
        keys_and_args = [*keys, *args]
        with storage_errors():
            try:
                result = self._evalsha_read(script.sha, len(keys), keys_and_args)
            except redis.exceptions.NoScriptError:  # a restarted or new server: load it there
                self.reader.script_load(script.script)
                result = self._evalsha_read(script.sha, len(keys), keys_and_args)
        return _check(result)

    def _evalsha_read(self, sha: str, numkeys: int, keys_and_args: list[Any]) -> Any:
        if self._read_only is None:  # asked once: Redis 6.2 (the embedded one) has no EVALSHA_RO
            try:
                result = self.reader.evalsha_ro(sha, numkeys, *keys_and_args)
            except redis.exceptions.ResponseError as exc:
                if "unknown command" not in str(exc).lower():
                    raise
                self._read_only = False
            else:
                self._read_only = True
                return result
        if self._read_only:
            return self.reader.evalsha_ro(sha, numkeys, *keys_and_args)
        return self.reader.evalsha(sha, numkeys, *keys_and_args)

    def _counted(self, room_id: str, vid: str, raw: list[Any]) -> QueueAnswer:
        """Decode an enter/poll answer and count it against the ticket's poll limit."""
        answer, now = queue_answer(raw)
        if answer.ticket is not None:
            self.polls.count(room_id, vid, answer.generation, answer.ticket, now)
        return answer

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
                self.redis.hincrby(self.keys.room(room_id), stored("revocationCount"), 1)
                self.redis.incr(self.keys.rooms_version())

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

    def set_events(self, room_id: str, version: str, events: Sequence[dict[str, Any]]) -> int:
        """Write the room's scheduled events (checked by room_events) if their version is still
        ``version``, else EventsChanged; returns the room clock's now (ms) at the write."""
        reply = self._run("set_events", room_id, version, room_events.encode(events))
        return int(reply[2])

    def delete_room(self, room_id: str) -> None:
        """Delete a room and all its keys; its slug becomes free."""
        room = self.get_room(room_id)
        self._run("delete_room", room_id)
        env_rooms = self.keys.env_rooms(room["environment"])
        with storage_errors():
            if self.redis.hget(env_rooms, room["slug"]) == room_id:
                self.redis.hdel(env_rooms, room["slug"])

    def open(
        self,
        room_id: str,
        opens_at_ms: int | None = None,
        shared: tuple[str, str, str, int] | None = None,
    ) -> str:
        """Open an idle room (optionally at ``opens_at_ms``) or resume a paused one.

        A future ``opens_at_ms`` commits the opening's draw at once: its seed (kept secret until
        the draw) and its commitment (public) are stored with the opening, and so is the round
        of the room's ``drawBeacon`` the draw will take: the first emitted at or after opensAt.
        ``shared``: (this region, seed, beacon URL, round) of a draw committed once for a room
        across regions (queue/regions/shared_draw.py), taken instead of a seed of its own.
        """
        lottery, seed = secrets.token_hex(16), draws.new_seed()
        at = "" if opens_at_ms is None else opens_at_ms
        salt = secrets.token_hex(32)
        beacon_url, beacon_round, region = "", "", ""
        if opens_at_ms is not None and shared is not None:
            region, seed, beacon_url, round_number = shared
            beacon_round = str(round_number) if beacon_url else ""
        elif opens_at_ms is not None:
            beacon = self.get_room(room_id)["drawBeacon"]
            if beacon is not None:
                beacon_url, beacon_round = beacon["url"], round_at(beacon, opens_at_ms)
        result = self._run(
            "open_room", room_id, at, lottery, seed, salt, draws.commitment(seed),
            beacon_url, beacon_round, region,
        )  # fmt: skip
        return result[1]

    def set_draw_regions(self, room_id: str, regions: dict[str, Any]) -> bool:
        """Keep the regions' parts and global root of the room's made draw across regions
        (queue/regions/shared_draw.regions_done) for its fairness document; False when the
        room has no such draw made here."""
        return bool(self._run("set_draw_regions", room_id, json.dumps(regions)))

    def reroll_draw(self, room_id: str) -> dict[str, Any]:
        """A new seed and commitment for a draw not yet made; the old one is listed withdrawn.

        A draw past opensAt that waits for its beacon (one that may never answer) is re-rolled
        with a new round too, of the room's ``drawBeacon`` now: the first emitted after the
        re-roll, so nobody knows it at the new commitment either (lua/reroll_draw.lua).
        :class:`NoDraw` when the room has no draw waiting, or one waiting for its beacon and
        no beacon named now. Returns the draw's public part.
        """
        seed = draws.new_seed()
        beacon = self.get_room(room_id)["drawBeacon"] or {}
        self._run(
            "reroll_draw", room_id, seed, draws.commitment(seed),
            beacon.get("url", ""), beacon.get("genesisTime", 0), beacon.get("period", 0),
        )  # fmt: skip
        draw = self.get_room(room_id)["draw"]
        assert draw is not None  # just committed
        return draw

    def draw(self, room_id: str) -> DrawDone:
        """Make the room's draw if opensAt has come and no process makes it
        (queue/draw/room_draw.py).

        The room ticker calls it through :meth:`tick`; :class:`DrawLost` when another process
        took it over midway.
        """
        return make_draw(self.redis, self.keys, room_id, self._run)

    def drawn_entrants(self, room_id: str) -> list[str]:
        """The entrant ids of the room's last draw in drawn order ([] before it is made)."""
        with storage_errors():
            return list(self.redis.lrange(self.keys.room_keys(room_id)["drawn"], 0, -1))

    def pause(self, room_id: str) -> None:
        """Pause an open room (:class:`NotOpen` otherwise)."""
        self._run("pause_room", room_id)

    def close(self, room_id: str) -> None:
        """Close a room: every spot expires, counters reset, status idle."""
        self._run("close_room", room_id)

    # -- invites on record (queue/rooms/invite_book.py) -----------------------------------

    def record_invites(self, room_id: str, invite_ids: Sequence[str], terms: str) -> int:
        """Record invites just signed, with their ``terms`` (:func:`invite_book.terms`); the
        number on record in the room. :class:`RoomNotFound`: nothing written."""
        return int(self._run("issue_invites", room_id, terms, *invite_ids))

    def invites(
        self, room_id: str, cursor: int | None = None, limit: int = 100
    ) -> invite_book.InvitePage:
        """The room's invites on record, newest first, ``limit`` of them before ``cursor``."""
        limit = max(1, min(limit, invite_book.MAX_PAGE))
        at = "" if cursor is None else int(cursor)
        return invite_book.page(self._run("invites", room_id, at, limit))

    def withdraw_invite(
        self, room_id: str, invite_id: str, now_ms: int
    ) -> invite_book.InviteRecord:
        """Withdraw an invite on record (enter refuses it to newcomers from now on); again, it
        keeps its first time. :class:`InviteNotFound` or :class:`RoomNotFound` otherwise."""
        raw_terms, withdrawn = self._run("withdraw_invite", room_id, invite_id, int(now_ms))
        if self.invite_withdrawn is not None:
            self.invite_withdrawn(room_id, invite_id)
        return invite_book.record(invite_id, raw_terms, 0, withdrawn)

    # -- visitors ------------------------------------------------------------------------

    def enter(
        self,
        room_id: str,
        vid: str,
        session_jti: str,
        score: int,
        network_tag: str = "",
        address_limit: Sequence[tuple[str, int, int]] = (),
        invite: InviteClaims | None = None,
        bypass: bool = False,
    ) -> QueueAnswer:
        """Take (or find again) the visitor's spot; an entry counts as a poll of its ticket.

        ``invite``: a verified invite of this room. A newcomer spends it (once per ``vid``) and
        takes its lane; a spot found again keeps its place and spends nothing; a ``vid`` that
        spent it before and has no spot any more enters the public line. Refused with
        :class:`InviteExpired`, :class:`InviteWithdrawn` or :class:`InviteSpent`, the entry
        changes nothing.

        ``bypass``: one of the room's bypass rules matched the request (visit/bypass.py):
        a newcomer takes the skip lane as a skip invite would (admitted at once within
        capacity, over and above the rate), with no invite to spend.

        ``address_limit``: the entering address's limit counters (key, limit, window seconds),
        counted first by the same script, so the limit costs no round trip of its own (one
        server only: on a cluster the counters are on another shard); over any of them, the
        entry is refused with :class:`AddressLimited` and changes nothing else.
        """
        if invite is not None and self.invite_gate is not None:
            self.invite_gate(invite, vid)  # a room across regions: its uses counted globally
        spent = self.polls.spent(room_id, vid)
        args: list[Any] = [vid, session_jti, int(score), network_tag, spent, len(address_limit)]
        for _, limit, window in address_limit:
            args += [int(limit), int(window)]
        if invite is not None:  # after the counters: an entry without one sends nothing more
            args += [invite.invite_id, int(invite.expires_at_ms), int(invite.uses), invite.lane[0]]
        elif bypass:  # a lane and no invite (lua/_invite.lua)
            args += ["", 0, 0, "s"]
        keys = [key for key, _, _ in address_limit]
        raw = self._run("enter", room_id, *args, extra_keys=keys)
        return self._counted(room_id, vid, raw)

    def join(
        self,
        room_id: str,
        identify: JoinIdentify,
        network_tag: str = "",
        address_limit: Sequence[tuple[str, int, int]] = (),
        invite: InviteClaims | None = None,
        bypass: bool = False,
    ) -> JoinAnswer:
        """Identify and enter in one round trip (lua/join.lua; one server only): the identify
        limit and the network counted, the proof spent once for the session the count earns
        (or, for a retry of the same proof, the one it earned before), then :meth:`enter` with
        that session. Over the identify limit: :class:`IdentifyLimited`; a proof of another
        spent it: :class:`ChallengeSpent`; the enter script's refusals as :meth:`enter`'s."""
        if invite is not None and self.invite_gate is not None:
            self.invite_gate(invite, identify.vid)
        args: list[Any] = [len(identify.counters)]
        for _, limit, window in identify.counters:
            args += [int(limit), int(window)]
        args += [identify.busy_above, identify.mark, int(identify.life_ms)]
        for claims, score, denied in (identify.calm, identify.busy):
            args += [claims, int(score), 1 if denied else 0]
        # enter.lua's own arguments, its score filled in by the script (and its vid and session,
        # when a retry finds the session a first attempt earned)
        spent = self.polls.spent(room_id, identify.vid)
        args += [identify.vid, identify.session_id, "", network_tag, spent, len(address_limit)]
        for _, limit, window in address_limit:
            args += [int(limit), int(window)]
        if invite is not None:
            args += [invite.invite_id, int(invite.expires_at_ms), int(invite.uses), invite.lane[0]]
        elif bypass:
            args += ["", 0, 0, "s"]
        keys = [key for key, _, _ in address_limit] + [key for key, _, _ in identify.counters]
        keys += [identify.network_key, identify.environment_key, identify.marker_key]
        raw = self._run("join", room_id, *args, extra_keys=keys)
        kind = str(raw[0])
        if kind == "IdentifyLimited":
            raise IdentifyLimited(kind, retry_after=max(1, int(raw[1])))
        if kind == "Spent":
            raise ChallengeSpent(kind)
        which, earned = str(raw[1]), str(raw[2])
        if kind == "Denied":
            return JoinAnswer(which, earned, None)
        entered = _check(raw[3])
        vid = identify.vid
        if which == "earned":  # the session a retry of the proof gets back
            vid = SessionClaims.from_wire(json.loads(earned)).visitor_id
        return JoinAnswer(which, earned, self._counted(room_id, vid, entered))

    def poll(
        self,
        room_id: str,
        vid: str,
        ticket: int,
        generation: int,
        session_jti: str = "",
        near_head: bool = False,
        carried: TicketClaims | None = None,
    ) -> QueueAnswer:
        """Poll a spot named by its (signed) ticket.

        ``session_jti`` (the ticket's ``qj``) lets a revoked session hear so after its spot is gone.
        ``carried``: the ticket's claims; with a ticket that carries its ``order_key`` and
        ``kept_until`` a far spot is answered from this process's snapshot of the room, at no
        Redis cost per poll (far_poll.py says when, and what holds). Every other poll (the
        front, what the snapshot cannot decide, a ticket without an order key) is answered by
        the full poll, in one round trip. ``near_head`` (the spot was last seen within
        ``NEAR_HEAD`` of the front, or held) skips the snapshot, which would only hand it on.
        """
        if carried is not None and not near_head:
            answer = self._poll_from_snapshot(room_id, vid, ticket, generation, carried)
            if answer is not None:
                return answer
        args = (vid, ticket, generation, session_jti, self.polls.spent(room_id, vid))
        return self._counted(room_id, vid, self._run("poll", room_id, *args))

    def book_fail_open(
        self,
        room_id: str,
        generation: int,
        admissions: list[tuple[str, int | None, int]],
        hold_ms: int,
    ) -> tuple[int, int]:
        """Book fail-open admissions (vid, its spot's ticket or None, ms of life left) once Redis
        is back: (slots booked, spots freed); the drain then waits ``hold_ms`` for processes no
        register knows to book theirs. See lua/book_fail_open.lua."""
        flat: list[Any] = [generation, int(hold_ms)]
        for vid, ticket, left_ms in admissions:
            flat += [vid, "" if ticket is None else ticket, int(left_ms)]
        booked, freed = self._run("book_fail_open", room_id, *flat)
        return int(booked), int(freed)

    def check_in_fail_open(
        self,
        process: str,
        checks: Sequence[tuple[str, int, bool]],
        stale_ms: int,
        grace_ms: int,
        leaving: bool = False,
    ) -> list[tuple[bool, int] | None]:
        """Check ``process`` in with failMode-open rooms, one pipelined round: ``checks`` is
        (room id, valid until on its clock (0: a probe), saw an outage) per room. Per room:
        (checked in, now on its clock), or None for a room gone or a call that failed.
        See lua/check_in_fail_open.lua. (A cluster pipelines no script: one call a room.)"""
        calls = [
            (room_id, [process, int(valid_until), "1" if outage else "", "1" if leaving else "",
                       int(stale_ms), int(grace_ms)])
            for room_id, valid_until, outage in checks
        ]  # fmt: skip
        replies: list[Any] = []
        if is_cluster(self.redis):
            for room_id, args in calls:
                try:
                    replies.append(self._run("check_in_fail_open", room_id, *args))
                except EngineError as exc:  # that room only (gone, say)
                    replies.append(exc)
        else:
            pipe = self.redis.pipeline(transaction=False)
            script = self._scripts["check_in_fail_open"]
            for room_id, args in calls:
                keys = self.script_keys("check_in_fail_open", room_id)
                script(keys=keys, args=args, client=pipe)
            with storage_errors():
                replies = pipe.execute(raise_on_error=False)
        answers: list[tuple[bool, int] | None] = []
        for raw in replies:  # an error in one room's reply (a moved slot) fails that one only
            ok = isinstance(raw, list) and len(raw) == 3 and int(raw[1]) > 0
            answers.append((bool(int(raw[0])), int(raw[1])) if ok else None)
        return answers

    def _poll_from_snapshot(
        self, room_id: str, vid: str, ticket: int, generation: int, carried: TicketClaims
    ) -> QueueAnswer | None:
        """The far poll answered from the room's snapshot, or None: ask the scripts."""
        if carried.order_key is None or carried.kept_until is None:
            return None  # nothing to place it by: no snapshot read for it
        if self.bookings.is_gone(room_id, vid, ticket):
            return None
        snapshot = self.snapshots.get(room_id)
        if snapshot is None:
            return None
        now = snapshot.clock(self.snapshots.clock())
        try:
            found = answer_far(snapshot, now, vid, ticket, generation, carried)
        except Gone:
            raise TicketGone() from None
        if found is None:
            return None
        minute = now // 60_000
        if self.polls.spent(room_id, vid) == f"{generation}:{ticket}:{minute}":
            raise RateLimited(retry_after=math.ceil(((minute + 1) * 60_000 - now) / 1000))
        answer, book_ms = found
        if book_ms:
            self.bookings.note(room_id, vid, ticket, generation, book_ms)
        if self.bookings.due():
            self.flush_bookings()
        self.polls.count(room_id, vid, generation, ticket, now)
        return answer

    def flush_bookings(self) -> int:
        """Book the last-seen of the far polls answered from snapshots; spots sent.

        A Redis failure keeps them for the next flush (the room ticker's, or a poll's).
        """
        try:
            return self.bookings.flush()
        except StorageError:
            return 0

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
        raw = self._run("refresh", room_id, vid, gen, admission_jti, session_jti)
        return queue_answer(raw)[0]

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
        return room_stats(self._run("stats", room_id))

    def stats_of(self, room_ids: Sequence[str]) -> list[RoomStats | None]:
        """Live figures of several rooms in one pipelined round (the metrics scrape).

        None for a room deleted since or whose call failed: no figure rather than a stale one.
        """
        pipe = self.redis.pipeline(transaction=False)
        script = self._scripts["stats"]
        for room_id in room_ids:
            script(keys=self.script_keys("stats", room_id), args=[], client=pipe)
        with storage_errors():
            replies = pipe.execute(raise_on_error=False)
        return [
            None
            if isinstance(raw, Exception) or (isinstance(raw, list) and raw[:1] == ["ERR"])
            else room_stats(raw)
            for raw in replies
        ]

    def counters(self, room_id: str) -> dict[str, int]:
        """The room's counters (``COUNTERS``: nent, nfull, nleft, nswept, dealt); missing = 0."""
        with storage_errors():
            values = self.redis.hmget(self.keys.room(room_id), COUNTERS)
        return {name: int(value or 0) for name, value in zip(COUNTERS, values, strict=True)}

    def waits(self, room_id: str) -> dict[str, int]:
        """Admissions by wait from entry: bucket upper bound in seconds ("1" … "inf") → count."""
        with storage_errors():
            raw = self.redis.hgetall(self.keys.room_keys(room_id)["waits"])
        return {bound: int(raw.get(bound, 0)) for bound in WAIT_BUCKETS}

    def departures_of(self, room_ids: Sequence[str]) -> list[tuple[tuple[int, ...], int]]:
        """Per room, in one pipelined round: the spots that left before their turn by how long
        they had waited (counts per ``WAIT_BUCKETS`` bucket), and the admissions that ran out
        with no renewal seen; both counted since the room was created."""
        pipe = self.redis.pipeline(transaction=False)
        for room_id in room_ids:
            pipe.hmget(self.keys.room_keys(room_id)["waits"], ABANDON_FIELDS)
            pipe.hget(self.keys.room(room_id), stored("unusedAdmissions"))
        with storage_errors():
            replies = pipe.execute()
        return [
            (tuple(int(v or 0) for v in left), int(unused or 0))
            for left, unused in zip(replies[::2], replies[1::2], strict=True)
        ]

    def line(self, room_id: str, limit: int = 200) -> list[LineEntry]:
        """The first ``limit`` (≤ 200) waiting spots in drain order."""
        return line_entries(self._run("line", room_id, limit))

    def sweep(self, room_id: str, count: int = 500) -> tuple[int, bool]:
        """One bounded sweep step: (spots dropped, pass finished).

        Enter and poll already carry the sweep along; this is for operator tooling and tests.
        """
        return sweep_result(self._run("sweep", room_id, count))

    def is_empty(self, room_id: str) -> bool:
        """True when the room holds no spot and no revocation: a tick would have nothing to do."""
        keys = self.keys.room_keys(room_id)
        with storage_errors():
            return not self.redis.exists(keys["spots"], keys["rvk"])

    def tick(
        self, room_id: str, every_ms: int = 1_000, background: Background | None = None
    ) -> TickResult:
        """The service's tick of an open room: sweep step, regrouping step and drain.

        Only the first call per ``every_ms`` of the room's clock works, whichever instance makes
        it (``ran``); the others read one field and return. When the tick finds opensAt come
        and the pool waiting for its draw (or an event's pre-queue to draw), this process makes
        the draw (:meth:`draw`): at once, or handed to ``background(room id, kind, job)``
        (queue/draw/draw_worker.py) so that the caller, the ticker of every room, does not wait.
        """
        result = tick_result(self._run("tick", room_id, int(every_ms)))
        due: list[tuple[str, Callable[[], object]]] = []
        if result.draw_due:
            kind = "beacon" if background is not None and self._awaits_beacon(room_id) else ""
            due.append((kind or "opening", partial(self._draw_unless_lost, room_id)))
        if result.prequeue_due:
            due.append(("prequeue", partial(self.draw_prequeue, room_id)))
        for kind, job in due:
            if background is None:
                job()
            else:
                background(room_id, kind, job)
        return result

    def _awaits_beacon(self, room_id: str) -> bool:
        """True when the room's draw names a beacon round whose value is not fetched yet."""
        with storage_errors():
            url, value = self.redis.hmget(
                self.keys.room(room_id), [stored("beaconUrl"), stored("beaconValue")]
            )
        return bool(url) and not value

    def _draw_unless_lost(self, room_id: str) -> None:
        # DrawLost: another process took it over, and it makes the draw
        with contextlib.suppress(DrawLost):
            self.draw(room_id)

    def draw_prequeue(self, room_id: str, batch: int = PREQUEUE_BATCH) -> None:
        """Draw the places of an event's closed pre-queue (lua/shuffle_prequeue.lua), a batch
        per call (each a few ms of Redis) until done; other processes may share the steps."""
        while not int(self._run("shuffle_prequeue", room_id, batch)[0]):
            pass

    # -- a room across regions (queue/regions/) ---------------------------------------------

    def apply_lease(
        self,
        room_id: str,
        epoch: int,
        ceiling: int,
        watermark: int,
        lasts_ms: int,
        fallback: float,
    ) -> tuple[bool, int, int]:
        """Hold the coordinator's lease for this region (lua/apply_lease.lua): (applied, the
        epoch held after, now on the room's clock). An older epoch than the held one is
        refused; ``ceiling`` -1 is the room's admission count now; ``fallback`` 0 pauses once
        it expires, a share in (0, 1] admits at that share of the rate and capacity."""
        ok, held, now = self._run(
            "apply_lease",
            room_id,
            int(epoch),
            int(ceiling),
            int(watermark),
            int(lasts_ms),
            f"{fallback:g}",
        )
        return bool(int(ok)), int(held), int(now)

    def join_regions(self, room_id: str, fallback: float) -> bool:
        """Make the room one across regions, on its fallback until a first lease comes (an
        expired lease from its admission count now); False when it already was one."""
        ok, _, _ = self._run("apply_lease", room_id, 0, -1, 0, 0, f"{fallback:g}", "join")
        return bool(int(ok))

    def leave_regions(self, room_id: str) -> None:
        """The room is in this region only again: no lease, no gate."""
        self._run("apply_lease", room_id, 0, 0, 0, 0, "0", "leave")

    def region_summary(
        self, room_id: str, head: int, bucket_ms: int, samples: int = 50
    ) -> tuple[int, int, int, int, int, int, list[tuple[int, int]], list[tuple[int, int]]]:
        """This region's part of the room's line (lua/region_summary.lua): now, admitted,
        active, waiting, rate, capacity, the head's arrivals by bucket (start ms, count) and
        (rank, arrival ms) samples beyond the head."""
        raw = self._run("region_summary", room_id, int(head), int(bucket_ms), int(samples))
        now, dealt, active, waiting, rate, capacity, flat, tail = raw
        buckets = [(int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat), 2)]
        ranks = [(int(tail[i]), int(tail[i + 1])) for i in range(0, len(tail), 2)]
        return (
            int(now),
            int(dealt),
            int(active),
            int(waiting),
            int(rate),
            int(capacity),
            buckets,
            ranks,
        )

    def set_clock(self, room_id: str, epoch_ms: int) -> None:
        """Pin a room's clock at ``epoch_ms`` (0 unpins). Tests only; no HTTP route calls this."""
        self._run("set_clock", room_id, int(epoch_ms))

    def shift_clock(self, room_id: str, ms: int) -> int:
        """Move a room's clock ``ms`` ahead (tests and tooling; no HTTP route calls this)."""
        return int(self._run("shift_clock", room_id, int(ms)))
