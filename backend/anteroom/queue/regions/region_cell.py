"""A region's cell of rooms across regions: its reports, its leases, and the coordinator.

Every instance of a region runs one :class:`RegionCell` (a thread beside the room ticker), and
each step, about once an interval, it:

1. reports each regional room's summary (lua/region_summary.lua) to etcd under
   ``<prefix>rooms/<name>/summary/<region>``: every instance writes the same key, so a lost
   instance loses nothing, and the coordinator reads the latest;
2. applies the lease the coordinator wrote for its region (``…/lease/<region>``) to the room's
   hash (lua/apply_lease.lua refuses an older epoch than the one held), with the time it has
   left on this machine's wall clock; a region that cannot reach etcd applies nothing, so its
   lease runs out and its fallback holds;
3. once a shared draw (queue/regions/shared_draw.py) is made here, publishes the region's part
   and, once every region's is in, keeps the global root for the fairness document;
4. campaigns for the coordinator's leadership (queue/regions/leadership.py) and, while it
   leads, plans the round (queue/regions/global_line.py) for every room and writes the leases
   and its state in one transaction guarded by its epoch.

A room spans regions by its spec at ``<prefix>rooms/<name>/spec``: ``{"regions": {region:
{"room": its room id there, "fallback": 0 (pause) or a share in (0, 1]}}}``; each region
creates the room in its own Redis and the operator writes the spec (:func:`write_spec`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from anteroom.queue.connection.storage_errors import StorageError, StorageUnavailable
from anteroom.queue.line.room_engine import Engine, EngineError
from anteroom.queue.regions import invite_uses, shared_draw
from anteroom.queue.regions.etcd_kv import Etcd, EtcdError, EtcdUnavailable, put_op
from anteroom.queue.regions.global_line import (
    BUCKET_MS,
    INTERVAL_MS,
    CoordinatorState,
    Lease,
    Summary,
    global_position,
    plan_round,
)
from anteroom.queue.regions.leadership import Leadership
from anteroom.sdk.tokens import InviteClaims

log = logging.getLogger("anteroom")
DEFAULT_PREFIX = "/anteroom/"
# A summary older than this (wall clock) is its region's absence: set aside at its fallback.
STALE_MS = 2_500
# Lease reads per report: a lease written just after this instance's read waits a quarter.
APPLY_PER_STEP = 4
# The head of each region's line counted exactly: many intervals' worth at any sane rate.
HEAD = 500


@dataclass(frozen=True)
class RoomSpec:
    """A room across regions: each region's room id and fallback share (0: pause)."""

    name: str
    rooms: Mapping[str, str]
    fallbacks: Mapping[str, float]


def write_spec(
    etcd: Etcd, name: str, regions: Mapping[str, tuple[str, float]], prefix: str = DEFAULT_PREFIX
) -> None:
    """Make room ``name`` span ``regions`` ({region: (its room id there, fallback share)})."""
    spec = {
        "regions": {r: {"room": room, "fallback": share} for r, (room, share) in regions.items()}
    }
    etcd.put(f"{prefix}rooms/{name}/spec", json.dumps(spec))


def read_specs(etcd: Etcd, prefix: str = DEFAULT_PREFIX) -> list[RoomSpec]:
    """Every room spec in etcd (``<prefix>rooms/<name>/spec``)."""
    out = []
    for kv in etcd.get_prefix(prefix + "rooms/"):
        parts = kv.key[len(prefix) + len("rooms/") :].split("/")
        if len(parts) != 2 or parts[1] != "spec":
            continue
        regions = json.loads(kv.value)["regions"]
        out.append(
            RoomSpec(
                parts[0],
                {r: v["room"] for r, v in regions.items()},
                {r: float(v.get("fallback", 0)) for r, v in regions.items()},
            )
        )
    return out


def _summary_json(summary: Summary, wall_ms: int) -> str:
    return json.dumps(asdict(summary) | {"wall": wall_ms})


def summary_of(raw: bytes) -> tuple[Summary, int]:
    """A summary as a cell wrote it to etcd, and the wall clock (ms) it was written at."""
    data = json.loads(raw)
    wall = int(data.pop("wall"))
    data["buckets"] = tuple(tuple(b) for b in data["buckets"])
    data["tail"] = tuple(tuple(t) for t in data["tail"])
    return Summary(**data), wall


class RegionCell:
    """One instance's part in its region's cell (see the module's docstring)."""

    def __init__(
        self,
        engine: Engine,
        etcd: Etcd,
        region: str,
        candidate: str,
        prefix: str = DEFAULT_PREFIX,
        wall_ms: Callable[[], int] | None = None,
        leader_ttl: int = 2,
        list_url: Callable[[dict[str, Any], str], str | None] | None = None,
    ) -> None:
        """``candidate``: this instance's name in the campaign; ``wall_ms``: the clock leases'
        expiries are read on (this machine's, in ms); ``list_url``: the absolute public URL of a
        room's drawn list of a root (None: none yet), named in the region's part of a draw."""
        self.engine = engine
        self.etcd = etcd
        self.region = region
        self.prefix = prefix
        self.wall_ms = wall_ms or (lambda: int(time.time() * 1000))
        self.leadership = Leadership(etcd, prefix + "leader", candidate, ttl=leader_ttl)
        self.states: dict[str, CoordinatorState] = {}  # while leading, by room name
        self.newest_epoch = 0
        self.summaries: dict[str, dict[str, Summary]] = {}  # latest read, by room and region
        self.by_room: dict[str, dict[str, Summary]] = {}  # the same by this region's room id
        self.cut_off = False  # etcd unreachable at the last step
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._specs: list[RoomSpec] | None = None
        self._applied: dict[str, int] = {}  # the etcd revision of each room's lease applied
        self.list_url = list_url

    # -- one step --------------------------------------------------------------------------

    def specs(self) -> list[RoomSpec]:
        """Every room spec in etcd."""
        return read_specs(self.etcd, self.prefix)

    def step(self, full: bool = True) -> None:
        """Report, apply, coordinate: once (``full``); else apply the leases alone. etcd
        unreachable: nothing this step (the leases in the region's Redis run out by
        themselves)."""
        try:
            if full or self._specs is None:
                self._specs = self.specs()
            for spec in self._specs:
                if self.region in spec.rooms:
                    if full:
                        self._report(spec)
                        self._publish_draw(spec)
                    self._apply(spec)
            if full:
                self._coordinate(self._specs)
        except EtcdUnavailable as exc:
            if not self.cut_off:
                log.warning("region %s: etcd unreachable: %s", self.region, exc)
            self.cut_off = True
            if self.leadership.leading:
                self.leadership.renew()  # fails, and steps down
            return
        except EtcdError as exc:
            log.warning("region %s: etcd refused a call: %s", self.region, exc)
            return
        if self.cut_off:
            log.info("region %s: etcd reachable again", self.region)
        self.cut_off = False

    def _report(self, spec: RoomSpec) -> None:
        room = spec.rooms[self.region]
        base = f"{self.prefix}rooms/{spec.name}/"
        fallback = spec.fallbacks.get(self.region, 0.0)
        try:
            self.engine.join_regions(room, fallback)
            now, dealt, active, waiting, rate, capacity, buckets, tail = self.engine.region_summary(
                room, HEAD, BUCKET_MS
            )
        except (EngineError, StorageError) as exc:  # this region's Redis: others go on
            log.warning("region %s: room %s unreadable: %s", self.region, spec.name, exc)
            return
        summary = Summary(
            region=self.region, at_ms=now, admitted=dealt, active=active, waiting=waiting,
            buckets=tuple(buckets), rate=rate, capacity=capacity, tail=tuple(tail),
        )  # fmt: skip
        self.etcd.put(base + "summary/" + self.region, _summary_json(summary, self.wall_ms()))
        latest = self.read_summaries(spec.name)  # for the positions shown
        self.by_room[room] = {r: s for r, s in latest.items() if r in spec.rooms}

    def _publish_draw(self, spec: RoomSpec) -> None:
        # One HGETALL a round per regional room; etcd is asked only between this region's draw
        # and the global root's arrival (shared_draw.after_draw until it returns True).
        room_id = spec.rooms[self.region]
        try:
            room = self.engine.get_room(room_id)
        except (EngineError, StorageError):
            return  # unreadable: _report has said so
        made = room.get("draw") or {}
        if not made.get("region") or not made.get("root") or made.get("globalRoot"):
            return
        shared = shared_draw.lookup(self.etcd, room["slug"], int(room["opensAt"]))
        if shared is None or self.list_url is None:
            return
        try:
            url = self.list_url(room, made["root"])
            if url is None:
                return
            shared_draw.after_draw(self.etcd, self.engine, room_id, shared, self.region, url)
        except (shared_draw.RegionPartConflict, ValueError, EngineError, StorageError) as exc:
            log.warning("region %s: draw of %s not published: %s", self.region, spec.name, exc)

    def _apply(self, spec: RoomSpec) -> None:
        room = spec.rooms[self.region]
        found = self.etcd.get(f"{self.prefix}rooms/{spec.name}/lease/{self.region}")
        if found is None or self._applied.get(room) == found.mod_revision:
            return  # none yet, or this very lease is held already
        lease = Lease(**json.loads(found.value))
        lasts = lease.expires_ms - self.wall_ms()
        if lasts <= 0 or lease.epoch < self.newest_epoch:
            return
        try:
            _, held, _ = self.engine.apply_lease(
                room, lease.epoch, lease.ceiling, lease.watermark, lasts,
                spec.fallbacks.get(self.region, 0.0),
            )  # fmt: skip
        except (EngineError, StorageError) as exc:
            log.warning("region %s: lease of %s not applied: %s", self.region, spec.name, exc)
            return
        self._applied[room] = found.mod_revision
        self.newest_epoch = max(self.newest_epoch, held)

    def _coordinate(self, specs: list[RoomSpec]) -> None:
        if self.leadership.leading:
            if not self.leadership.renew():
                self.states.clear()
                return
        else:
            self.leadership.campaign()
            if not self.leadership.leading:
                return
            self.states.clear()  # a new term: each room's state is read from etcd first
        for spec in specs:
            self._plan(spec)

    def _plan(self, spec: RoomSpec) -> None:
        base = f"{self.prefix}rooms/{spec.name}/"
        now = self.wall_ms()
        fresh: list[Summary] = []
        latest: dict[str, Summary] = {}
        for kv in self.etcd.get_prefix(base + "summary/"):
            summary, wall = summary_of(kv.value)
            if summary.region not in spec.rooms:
                continue
            latest[summary.region] = summary
            if now - wall <= STALE_MS:
                fresh.append(summary)
        self.summaries[spec.name] = latest
        present = {s.region for s in fresh}
        absent = {r: share for r, share in spec.fallbacks.items() if r not in present}
        state = self.states.get(spec.name)
        if state is None:
            stored = self.etcd.get(base + "state")
            state = (
                CoordinatorState.from_json(json.loads(stored.value))
                if stored
                else CoordinatorState()
            )
            self.states[spec.name] = state
        round_ = plan_round(fresh, state, self.leadership.epoch, now, absent=absent)
        ops = [
            put_op(base + "lease/" + r, json.dumps(asdict(lease)))
            for r, lease in round_.leases.items()
        ]
        ops.append(put_op(base + "state", json.dumps(state.to_json())))
        if not self.leadership.guarded(ops):
            self.states.clear()

    # -- rooms across regions, for the service -------------------------------------------

    def spec_for(self, room_id: str, fresh: bool = False) -> RoomSpec | None:
        """The spec of the room across regions whose room here is ``room_id``; None for a
        room of this region alone. ``fresh``: read from etcd now (else as of the last step)."""
        if fresh or self._specs is None:
            self._specs = self.specs()
        for spec in self._specs:
            if spec.rooms.get(self.region) == room_id:
                return spec
        return None

    def _regional(self, room_id: str) -> bool:
        """Whether ``room_id`` is some region's room of a room across regions: as of the last
        step (a spec written since counts from the next, within an interval); before any, read
        now (none while etcd cannot be reached: then the region's own counts decide anyway)."""
        if self._specs is None:
            try:
                self._specs = self.specs()
            except (EtcdError, EtcdUnavailable):
                return False
        return any(room_id in spec.rooms.values() for spec in self._specs)

    def same_room(self, room_id: str, other_id: str) -> bool:
        """Whether ``other_id`` is another region's room of the same room across regions as
        ``room_id`` here (an invite signed there is good here)."""
        spec = self._cached_spec(room_id)
        return spec is not None and other_id in spec.rooms.values()

    def _cached_spec(self, room_id: str) -> RoomSpec | None:
        try:
            return self.spec_for(room_id)
        except (EtcdError, EtcdUnavailable):
            return None

    def schedule(self, room_id: str, opens_at: int) -> bool:
        """Schedule the opening of ``room_id`` at ``opens_at`` with the draw shared by every
        region of its room (shared_draw.schedule); False for a room of this region alone (then
        nothing is done). EtcdUnavailable or EtcdError when etcd cannot be asked."""
        spec = self.spec_for(room_id, fresh=True)
        if spec is None:
            return False
        shared_draw.schedule(
            self.etcd, self.engine, room_id, opens_at, self.region, sorted(spec.rooms)
        )
        return True

    def invite_gate(self) -> Callable[[InviteClaims, str], None]:
        """``Engine.invite_gate``: an invite of a room across regions has its uses counted in
        etcd (invite_uses.gate); a room of this region alone pays nothing more."""
        gate = invite_uses.gate(self.etcd)

        def check(invite: InviteClaims, vid: str) -> None:
            if self._regional(invite.room_id):
                gate(invite, vid)

        return check

    def invite_withdrawn(self) -> Callable[[str, str], None]:
        """``Engine.invite_withdrawn``: a withdrawal in a room across regions is recorded in
        etcd for every region; StorageUnavailable (the operator withdraws again) when etcd
        cannot be reached, the region's own withdrawal standing meanwhile."""
        record = invite_uses.withdrawal(self.etcd)

        def withdrawn(room_id: str, invite_id: str) -> None:
            if not self._regional(room_id):
                return
            try:
                record(room_id, invite_id)
            except (EtcdError, EtcdUnavailable) as exc:
                raise StorageUnavailable(
                    f"etcd out of reach: the withdrawal holds in {self.region} only: {exc}"
                ) from None

        return withdrawn

    # -- positions -------------------------------------------------------------------------

    def read_summaries(self, name: str) -> dict[str, Summary]:
        """The latest summary of every region of room ``name`` (kept for positions)."""
        latest = {}
        for kv in self.etcd.get_prefix(f"{self.prefix}rooms/{name}/summary/"):
            summary, _ = summary_of(kv.value)
            latest[summary.region] = summary
        self.summaries[name] = latest
        return latest

    def global_place(
        self, room_id: str, position: int, eta_seconds: int | None, arrival_ms: int
    ) -> tuple[int, int | None]:
        """A waiting visitor's place in the global line (global_line.global_position: its own
        line's place plus those who arrived earlier elsewhere, from the latest summaries) and
        its ETA, stretched as much (the room's pace is shared by every region's line)."""
        summaries = self.by_room.get(room_id)
        if not summaries:
            return position, eta_seconds
        shown = global_position(summaries, self.region, position, arrival_ms)
        if eta_seconds is None or eta_seconds < 0 or shown == position:
            return shown, eta_seconds
        return shown, -(-eta_seconds * shown // position)

    # -- the thread ------------------------------------------------------------------------

    def ensure_running(self) -> None:
        """Start the thread unless it runs in this process (cheap; after a fork, anew, under a
        name of this process's own in the campaign)."""
        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self.leadership.candidate = f"{self.region}-{socket.gethostname()}-{self._pid}"
        self.leadership.epoch, self.leadership.lease = 0, 0  # a parent's office is not ours
        self._stop = threading.Event()
        self.start()

    def start(self, every_ms: int = INTERVAL_MS) -> None:
        """Step about every ``every_ms`` in a daemon thread until :meth:`stop`."""

        def run() -> None:
            # leases are read four times an interval: a round's lease reaches the region within
            # a quarter of it, whatever the phase of the leader's round against this one's
            count = 0
            while not self._stop.is_set():
                began = time.monotonic()
                try:
                    self.step(full=count % APPLY_PER_STEP == 0)
                except Exception:  # a bug in one step must not end the cell
                    log.exception("region %s: step failed", self.region)
                count += 1
                pause = every_ms / 1000 / APPLY_PER_STEP - (time.monotonic() - began)
                self._stop.wait(max(0.0, pause))

        self._thread = threading.Thread(
            target=run, name=f"anteroom-region-{self.region}", daemon=True
        )
        self._thread.start()

    def stop(self, resign: bool = True) -> None:
        """Stop the thread; ``resign`` hands leadership on at once (else it lapses)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if resign and self.leadership.leading:
            self.leadership.resign()
