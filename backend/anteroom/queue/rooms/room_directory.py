"""Per-instance knowledge of rooms and public keys: a short cache, and a directory for outages.

:class:`StaleCache` keeps what requests loaded fresh enough for normal work (a few seconds).
:class:`RoomDirectory` knows every room (and public key, and revocation) without any request
having asked, so a ``failMode: open`` room keeps admitting while Redis is unreachable, in every
worker, including one started during the outage.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.process_thread import ProcessThread
from anteroom.queue.connection.storage_errors import StorageUnavailable
from anteroom.queue.line import revocations
from anteroom.queue.line.room_engine import room_from_stored
from anteroom.queue.rooms.key_layout import KeySpace

T = TypeVar("T")


class StaleCache:
    """Values by key: refreshed after ``ttl`` seconds, served stale while storage is down."""

    def __init__(self, ttl: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._values: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(
        self, key: Any, load: Callable[[], T], offline: Callable[[], T | None] | None = None
    ) -> T:
        """The cached value of ``key``, loading it when missing or older than ``ttl``.

        When storage is unreachable: what ``offline`` knows (the directory, refreshed in the
        background, is fresher than an entry nobody asked for lately), else the stale entry.
        """
        now = self.clock()
        hit = self._values.get(key)
        if hit and now - hit[0] < self.ttl:
            return hit[1]  # type: ignore[no-any-return]
        try:
            value = load()
        except StorageUnavailable:
            known = offline() if offline else None
            if known is not None:
                return known
            if hit:
                return hit[1]  # type: ignore[no-any-return]
            raise
        with self._lock:
            self._values[key] = (now, value)
            if len(self._values) > 10_000:  # bound memory against key-guessing
                self._values.clear()
        return value

    def put(self, key: Any, value: Any) -> None:
        """Store ``value`` under ``key`` as fresh."""
        with self._lock:
            self._values[key] = (self.clock(), value)

    def forget(self, key: Any) -> None:
        """Drop ``key`` (after a change made by this instance)."""
        self._values.pop(key, None)


# -- what an instance knows without Redis ---------------------------------------------------

SNAPSHOT_NAME = "known-rooms.json"
# Since requests answer from the directory's copy (enter, poll and refresh in one round trip),
# a room's changed settings reach them within a round: as soon as the short cache they used
# before (2 s); a round is a few pipelined reads (rooms by environment, keys, revocations).
REFRESH_SEC = 2.0
# A snapshot older than this (no process on this host reached Redis for a day) is not trusted:
# a room may have been closed or reconfigured since, so such a process fails closed instead.
SNAPSHOT_MAX_AGE_SEC = 86_400
SNAPSHOT_REWRITE_SEC = 60.0  # rewritten when something changed, else this often (its age counts)
# A round this recent answers requests in place of a Redis read (see RoomDirectory.current):
# one interval, plus the next round's own time (several round trips of a slow Redis: ~3 s at
# +600 ms a reply).
CURRENT_SLACK_SEC = 5.0
# Between rounds, the refresher reads the rooms' change counter (KeySpace.rooms_version) this
# often and starts a round at once when it moved: a change made through any process reaches
# every process's requests within about this long, not a whole round (one GET: ~5 a second).
CHANGE_CHECK_SEC = 0.2

log = logging.getLogger("anteroom")


@dataclass(frozen=True)
class Known:
    """One consistent picture: rooms, public keys and revocations as of ``at`` (epoch s)."""

    at: float = 0.0
    rooms: dict[str, dict[str, Any]] = field(default_factory=dict)  # room id → configuration
    public_keys: dict[str, str] = field(default_factory=dict)  # pk → environment
    revoked: dict[str, dict[str, int]] = field(default_factory=dict)  # room id → field → until
    revision: dict[str, str] = field(default_factory=dict)  # room id → its `rvn`
    slugs: dict[tuple[str, str], str] = field(default_factory=dict)  # (env, slug) → room id
    # room id → (clock offset, pinned clock) ms: revocations are judged on the room's clock
    clocks: dict[str, tuple[int, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The snapshot's content."""
        return {
            "v": 1,
            "at": self.at,
            "rooms": self.rooms,
            "publicKeys": self.public_keys,
            "revoked": self.revoked,
            "revision": self.revision,
            "clocks": {k: list(v) for k, v in self.clocks.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Known:
        """Back from :meth:`to_json` (ValueError/KeyError/TypeError on anything else)."""
        if data.get("v") != 1:
            raise ValueError("unknown snapshot version")
        rooms = {str(k): dict(v) for k, v in data["rooms"].items()}
        return cls(
            at=float(data["at"]),
            rooms=rooms,
            public_keys={str(k): str(v) for k, v in data["publicKeys"].items()},
            revoked={
                str(k): {str(f): int(u) for f, u in v.items()} for k, v in data["revoked"].items()
            },
            revision={str(k): str(v) for k, v in data["revision"].items()},
            slugs={(r["environment"], r["slug"]): i for i, r in rooms.items()},
            # Snapshots written before clocks were kept: every room on the server's clock.
            clocks={str(k): (int(v[0]), int(v[1])) for k, v in data.get("clocks", {}).items()},
        )


class RoomDirectory:
    """Every room of every environment, kept fresh in the background, for outages.

    A room's ``failMode`` must be known to a worker that never served the room, even one that
    started while Redis was down. So one thread per process reads every environment's rooms,
    the public keys and each room's revocations every few seconds (one pipelined round per
    environment; a room's revocations only when its ``rvn`` counter moved), and writes what it
    read to a snapshot in the data dir, which a new process loads at start. Limits: the snapshot
    is as fresh as the last round any process of this host completed before the outage; a host
    that never reached Redis (or not for a day) knows nothing and fails closed.
    """

    def __init__(
        self,
        redis_client: Any,
        keys: KeySpace,
        breaker: Breaker,
        snapshot: Path | None,
        interval: float = REFRESH_SEC,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.redis = redis_client
        self.keys = keys
        self.breaker = breaker
        self.snapshot = snapshot
        self.interval = interval
        self.clock = clock
        self.known = Known()
        self.rounds = 0  # completed rounds of this process
        self.failed = 0  # rounds that could not read (Redis down, breaker open, …)
        self._written = (0.0, "")  # (when, content without `at`) of this process's last write
        self._thread = ProcessThread("anteroom-rooms")
        # Started with the refresher in each process (the room ticker): one per-request hook.
        self.companions: list[Callable[[], None]] = []
        self._stop = threading.Event()
        self._round_done = threading.Condition()
        self._pid = os.getpid()
        # When the copy in hand began to be read, and when this process last changed what it
        # holds: a copy read before a change made here is not current (see outdated).
        self._read_since = 0.0
        self._outdated_at = -1.0
        self._version: str | None = None  # the change counter as the last round read it
        self._load_snapshot()

    # -- lookups (never touch Redis) ---------------------------------------------------------

    def current(self) -> Known | None:
        """What the last round read, while it is at most one interval (and a slow round) old;
        None once it is older (the refresher is failing or not running here).

        The request path reads rooms and public keys from it instead of Redis, so enter, the
        near poll and refresh each make one round trip; a room's settings reach them within
        one round (``REFRESH_SEC``) of being changed.
        """
        known = self.known
        if self.clock() - known.at > self.interval + CURRENT_SLACK_SEC:
            return None
        if self._read_since <= self._outdated_at:
            return None  # read before a change this process made: not until the next round
        return known

    def outdated(self) -> None:
        """This process changed a room or key: until a round begun after now completes, the
        request path reads Redis (through its short cache) instead of this copy, so this
        instance's visitor API sees the change at once."""
        self._outdated_at = self.clock()

    def room_by_slug(self, env: str, slug: str) -> dict[str, Any] | None:
        """The configuration of room ``slug`` of ``env`` as last read, or None."""
        known = self.known
        room_id = known.slugs.get((env, slug))
        return known.rooms.get(room_id) if room_id else None

    def room_by_id(self, room_id: str) -> dict[str, Any] | None:
        """The configuration of room ``room_id`` as last read, or None."""
        return self.known.rooms.get(room_id)

    def environment_of(self, public_key: str) -> str | None:
        """The environment of a public key as last read, or None."""
        return self.known.public_keys.get(public_key)

    def is_revoked(self, room_id: str, jti: str, vid: str, now_ms: int | None = None) -> bool:
        """True when the session ``jti`` or the visitor ``vid`` was revoked as last read.

        Judged at ``now_ms`` on the room's clock: by default, this process's clock moved by the
        room's offset (or its pinned time) as last read, since Redis may be out of reach.
        """
        known = self.known
        if now_ms is None:
            now_ms = revocations.room_now_ms(
                int(self.clock() * 1000), *known.clocks.get(room_id, (0, 0))
            )
        return revocations.is_revoked(known.revoked.get(room_id, {}), vid, jti, now_ms)

    # -- the background round -----------------------------------------------------------------

    def ensure_running(self) -> None:
        """Start this process's refresher unless it runs (call per request: cheap; fork-safe).

        The refresher holds the directory weakly, so it ends with its app; the companions (the
        room ticker) start with it.
        """
        if self._pid != os.getpid():
            # A fork copies a lock as it was: held, if the parent's refresher was finishing a
            # round at that instant, and then never released in the child.
            self._pid, self._round_done = os.getpid(), threading.Condition()
        if self._thread.ensure(_run, (weakref.ref(self), self._stop, self.interval)):
            for start in self.companions:
                start()

    def stop(self, wait: float = 0.0) -> None:
        """Stop the refresher (tests, shutdown); with ``wait``, up to that long for its end."""
        self._stop.set()
        thread = self._thread.thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join(wait)

    @property
    def stopping(self) -> threading.Event:
        """Set by :meth:`stop`; the room ticker (room_ticker.py) stops with the refresher."""
        return self._stop

    def wait_for_rounds(self, count: int, timeout: float, *, failed: bool = False) -> bool:
        """Wait until ``count`` rounds here succeeded (or ``failed``); False on timeout."""

        def done() -> bool:
            return (self.failed if failed else self.rounds) >= count

        with self._round_done:
            return self._round_done.wait_for(done, timeout)

    def changed_elsewhere(self) -> bool:
        """True when some process changed a room since the last round began (one GET)."""
        try:
            version = self.breaker.call(lambda: self.redis.get(self.keys.rooms_version()))
        except Exception:  # down or unsure: the next round (or its failure) settles it
            return False
        return version != self._version

    def refresh_once(self) -> None:
        """One round: read everything through the breaker, then keep and save it."""
        started = self.clock()
        try:
            known = self.breaker.call(self._read)
        except Exception:
            with self._round_done:
                self.failed += 1
                self._round_done.notify_all()
            raise
        self.known, self._read_since = known, started
        self._save(known)
        with self._round_done:
            self.rounds += 1
            self._round_done.notify_all()

    def _read(self) -> Known:
        old = self.known
        # Read first: a change made while this round reads is seen by the next check.
        version = self.redis.get(self.keys.rooms_version())
        envs = sorted(self.redis.smembers(self.keys.environments()))
        public_keys = dict(self.redis.hgetall(self.keys.public_keys()))
        rooms: dict[str, dict[str, Any]] = {}
        revision: dict[str, str] = {}
        revoked: dict[str, dict[str, int]] = {}
        clocks: dict[str, tuple[int, int]] = {}
        for env in envs:
            ids = list(self.redis.hgetall(self.keys.env_rooms(env)).values())
            pipe = self.redis.pipeline(transaction=False)
            for room_id in ids:
                pipe.hgetall(self.keys.room(room_id))
            changed = []
            for room_id, raw in zip(ids, pipe.execute(), strict=True):
                if not raw or raw.get("env") != env:
                    continue  # deleted between the two reads
                rooms[room_id] = room_from_stored(raw)
                offset, pinned = (raw.get(f) for f in revocations.CLOCK_FIELDS)
                clocks[room_id] = (int(offset or 0), int(pinned or 0))
                revision[room_id] = raw.get("rvn", "0")
                if room_id in old.revoked and old.revision.get(room_id) == revision[room_id]:
                    revoked[room_id] = old.revoked[room_id]
                else:
                    changed.append(room_id)
            if changed:
                pipe = self.redis.pipeline(transaction=False)
                for room_id in changed:
                    pipe.hgetall(self.keys.room_keys(room_id)["rvk"])
                for room_id, raw in zip(changed, pipe.execute(), strict=True):
                    revoked[room_id] = {f: int(u) for f, u in raw.items()}
        slugs = {(r["environment"], r["slug"]): i for i, r in rooms.items()}
        self._version = version
        return Known(self.clock(), rooms, public_keys, revoked, revision, slugs, clocks)

    def _save(self, known: Known) -> None:
        if self.snapshot is None:
            return
        data = known.to_json()
        content = json.dumps(data | {"at": 0}, sort_keys=True)
        last_at, last_content = self._written
        if content == last_content and known.at - last_at < SNAPSHOT_REWRITE_SEC:
            return
        tmp = self.snapshot.with_name(f".{self.snapshot.name}.{os.getpid()}.tmp")
        try:
            self.snapshot.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, separators=(",", ":"))
            os.replace(tmp, self.snapshot)  # atomic: readers see the old file or the new one
        except OSError as exc:
            log.warning("could not write the rooms snapshot %s: %s", self.snapshot, exc)
            return
        self._written = (known.at, content)

    def _load_snapshot(self) -> None:
        if self.snapshot is None or not self.snapshot.exists():
            return
        try:
            known = Known.from_json(json.loads(self.snapshot.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("ignoring the rooms snapshot %s: %s", self.snapshot, exc)
            return
        if self.clock() - known.at > SNAPSHOT_MAX_AGE_SEC:
            log.warning("ignoring the rooms snapshot %s: older than a day", self.snapshot)
            return
        self.known = known


def _run(ref: weakref.ref[RoomDirectory], stop: threading.Event, interval: float) -> None:
    """The refresher's loop; ends when its directory is gone (an app dropped) or stopped."""
    failing = False
    while not stop.is_set():
        directory = ref()
        if directory is None:
            return
        try:
            directory.refresh_once()
            failing = False
        except StorageUnavailable:
            pass  # the breaker is open or Redis is down: what we know stays as it is
        except Exception:  # the thread must outlive any bad answer
            if not failing:
                log.exception("rooms refresher: round failed (will retry)")
            failing = True
        del directory
        _wait_for_round(ref, stop, interval)


def _wait_for_round(
    ref: weakref.ref[RoomDirectory], stop: threading.Event, interval: float
) -> None:
    """Wait ``interval``, or less when a room changed in some process (CHANGE_CHECK_SEC)."""
    deadline = time.monotonic() + interval
    while not stop.wait(max(0.0, min(CHANGE_CHECK_SEC, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            return
        directory = ref()
        if directory is None or directory.changed_elsewhere():
            return
        del directory
