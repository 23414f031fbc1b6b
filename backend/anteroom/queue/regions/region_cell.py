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
3. campaigns for the coordinator's leadership (queue/regions/leadership.py) and, while it
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

from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.line.room_engine import Engine, EngineError
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
    ) -> None:
        """``candidate``: this instance's name in the campaign; ``wall_ms``: the clock leases'
        expiries are read on (this machine's, in ms)."""
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
