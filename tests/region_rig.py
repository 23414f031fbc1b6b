"""Three regions on this machine, for the tests and bench/regions.py.

Each region has its own redis-server (Debian's), its own instances (processes running the
room's tick and a RegionCell: report, apply leases, campaign) and its own visitor process
(visitors enter and poll through the engine, in that region only). The coordination store is
a 3-member etcd (tests/etcd_cluster.py), one member per region; each region reaches every
member through a FaultProxy (tests/fault_proxy.py) that adds its round trip to the quorum
(30 / 90 / 150 ms by default), and a cut-off region is one whose proxies refuse and reset.

The processes are this file run as a script (``instance`` and ``visitors``); the orchestrator
(:class:`RegionRig`) starts them, injects faults and reads the outcome: every visitor's arrival
and admission (room clock = this machine's clock, ms) from the visitors' logs, and the active
sessions across regions sampled by :meth:`RegionRig.sample_active`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if __name__ == "__main__":  # run as a process of the rig: find the package and the helpers
    sys.path[:0] = [str(ROOT / "backend"), str(HERE)]

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.queue.connection.storage_errors import StorageError  # noqa: E402
from anteroom.queue.line.room_engine import EngineError  # noqa: E402
from anteroom.queue.regions.etcd_kv import Etcd  # noqa: E402
from anteroom.queue.regions.region_cell import RegionCell, write_spec  # noqa: E402
from etcd_cluster import EtcdCluster  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from helpers import free_port  # noqa: E402

REDIS_SERVER = os.environ.get("ANTEROOM_CLUSTER_REDIS_SERVER", "/usr/bin/redis-server")
REGIONS = ("eu", "us", "ap")
ROOM_NAME = "drop"


def start_redis_server(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A redis-server of its own (no persistence) in ``folder``, answering: (process, port)."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    args = [
        REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
        "--appendonly", "no", "--save", "", "--daemonize", "no",
        "--logfile", str(folder / "redis.log"),
    ]  # fmt: skip
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            if redis.Redis(port=port, socket_timeout=0.5).ping():
                return proc, port
        except redis.RedisError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)


@dataclass
class Region:
    """One region of the rig: its Redis, its proxies to etcd, its processes."""

    name: str
    rtt_ms: int
    fallback: float
    redis_port: int = 0
    redis_proc: subprocess.Popen[bytes] | None = None
    proxies: list[FaultProxy] = field(default_factory=list)
    instances: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    visitors: subprocess.Popen[bytes] | None = None
    room_id: str = ""

    @property
    def redis_url(self) -> str:
        """The region's Redis."""
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def etcd_endpoints(self) -> list[str]:
        """etcd's members as this region reaches them (through its proxies)."""
        return [f"http://127.0.0.1:{p.port}" for p in self.proxies]


class RegionRig:
    """Three regions, a room across them, and the faults to inject."""

    def __init__(
        self,
        root: Path,
        rate: int = 600,
        capacity: int = 0,
        rtts: Sequence[int] = (30, 90, 150),
        fallbacks: Sequence[float] = (0.0, 0.2, 0.1),
        instances: int = 2,
        admission_ttl: int = 3600,
    ) -> None:
        """``fallbacks``: each region's share of the rate and capacity while cut off (0:
        pause); ``admission_ttl``: seconds an admission holds its slot (the rig never ends one)."""
        self.root = root
        self.admission_ttl = admission_ttl
        self.rate = rate
        self.capacity = capacity
        self.instances = instances
        self.regions = {
            name: Region(name, rtt, share)
            for name, rtt, share in zip(REGIONS, rtts, fallbacks, strict=True)
        }
        self.etcd = EtcdCluster(root / "etcd", 3)
        self.samples: list[tuple[int, int]] = []  # (ms, active sessions across regions)
        self._sampling = threading.Event()

    # -- start and stop --------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.root.mkdir(parents=True, exist_ok=True)
        self.etcd.__enter__()
        try:
            for region in self.regions.values():
                self._start_redis(region)
                region.proxies = [FaultProxy("127.0.0.1", port) for port in self.etcd.client_ports]
                for proxy in region.proxies:
                    proxy.latency = region.rtt_ms / 1000
            self._create_room()
            for region in self.regions.values():
                for i in range(self.instances):
                    self.start_instance(region.name, f"{region.name}-{i}")
        except BaseException:
            self.close()
            raise
        return self

    def _start_redis(self, region: Region) -> None:
        region.redis_proc, region.redis_port = start_redis_server(
            self.root / f"redis-{region.name}"
        )

    def engine(self, region: str) -> Engine:
        """An engine on ``region``'s Redis."""
        url = self.regions[region].redis_url
        return Engine(redis.Redis.from_url(url, decode_responses=True, socket_timeout=2))

    def _create_room(self) -> None:
        config = {
            "slug": ROOM_NAME, "name": "A drop across regions",
            "redirectUrl": "https://shop.example/checkout", "ratePerMinute": self.rate,
            "admissionTtlSec": self.admission_ttl, "abandonAfterSec": 3600,
        }  # fmt: skip
        if self.capacity:
            config["capacity"] = self.capacity
        for region in self.regions.values():
            engine = self.engine(region.name)
            region.room_id = str(engine.create_room("rig", config)["id"])
            engine.join_regions(region.room_id, region.fallback)  # nobody straight in
            engine.open(region.room_id)
        write_spec(
            Etcd(self.etcd.endpoints),
            ROOM_NAME,
            {r.name: (r.room_id, r.fallback) for r in self.regions.values()},
        )

    def _spawn(self, *args: str, log_name: str) -> subprocess.Popen[bytes]:
        with open(self.root / log_name, "ab") as log:
            return subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), *args],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            )  # fmt: skip

    def start_instance(self, region: str, name: str) -> None:
        """Start one instance of ``region`` (its tick and its RegionCell)."""
        r = self.regions[region]
        r.instances[name] = self._spawn(
            "instance", region, name, r.redis_url, r.room_id, ",".join(r.etcd_endpoints),
            log_name=f"{name}.log",
        )  # fmt: skip

    def kill_instance(self, name: str) -> None:
        """SIGKILL one instance (a crash: no resignation, its leadership lapses)."""
        for region in self.regions.values():
            proc = region.instances.pop(name, None)
            if proc is not None:
                proc.kill()
                proc.wait(5)

    def start_visitors(
        self, schedule: Sequence[tuple[float, dict[str, float]]], poll_s: float = 2.0
    ) -> None:
        """Start each region's visitor process: ``schedule`` is (seconds from now, arrivals a
        second by region) steps; each runs until its last step's time."""
        began = time.time()
        for region in self.regions.values():
            steps = [(began + at, rates.get(region.name, 0.0)) for at, rates in schedule]
            region.visitors = self._spawn(
                "visitors", region.name, region.redis_url, region.room_id, json.dumps(steps),
                str(poll_s), str(self.root / f"visitors-{region.name}.jsonl"),
                log_name=f"visitors-{region.name}.log",
            )  # fmt: skip

    def wait_visitors(self, timeout: float = 120) -> None:
        """Wait for every visitor process to finish its schedule."""
        for region in self.regions.values():
            if region.visitors is not None:
                region.visitors.wait(timeout)

    def close(self) -> None:
        """Stop every process and server."""
        self._sampling.set()
        for region in self.regions.values():
            procs = [*region.instances.values(), region.visitors, region.redis_proc]
            for proc in procs:
                if proc is not None and proc.poll() is None:
                    proc.terminate()
            for proc in procs:
                if proc is not None:
                    try:
                        proc.wait(5)
                    except subprocess.TimeoutExpired:
                        proc.kill()
            for proxy in region.proxies:
                proxy.close()
        self.etcd.close()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- faults ----------------------------------------------------------------------------

    def cut_off(self, region: str) -> None:
        """``region`` loses etcd: new connections refused, open ones reset."""
        for proxy in self.regions[region].proxies:
            proxy.refuse = True
            proxy.reset()

    def rejoin(self, region: str) -> None:
        """``region`` reaches etcd again."""
        for proxy in self.regions[region].proxies:
            proxy.refuse = False

    def lose_redis(self, region: str) -> None:
        """``region``'s Redis dies (SIGKILL)."""
        proc = self.regions[region].redis_proc
        if proc is not None:
            proc.kill()
            proc.wait(5)

    def leader(self) -> tuple[str, int] | None:
        """The coordinator's candidate and epoch on record, or None."""
        found = Etcd(self.etcd.endpoints).get("/anteroom/leader")
        return (found.value.decode(), found.create_revision) if found else None

    # -- what happened ---------------------------------------------------------------------

    def start_sampling(self, every_s: float = 0.05) -> None:
        """Sample the active sessions across the regions (for the capacity's overshoot)."""
        engines = {name: self.engine(name) for name in self.regions}

        def run() -> None:
            while not self._sampling.wait(every_s):
                total = 0
                for name, engine in engines.items():
                    # a lost region's sessions are not countable
                    with contextlib.suppress(StorageError, EngineError, redis.RedisError):
                        total += engine.stats(self.regions[name].room_id).active
                self.samples.append((int(time.time() * 1000), total))

        threading.Thread(target=run, daemon=True, name="rig-sampler").start()

    def visitors(self) -> list[dict[str, object]]:
        """Every visitor's record: region, vid, arrival ms, admitted ms (None: not admitted)."""
        out: list[dict[str, object]] = []
        for region in self.regions.values():
            path = self.root / f"visitors-{region.name}.jsonl"
            if path.exists():
                out += [json.loads(line) for line in path.read_text().splitlines() if line]
        return out


# -- the rig's processes -------------------------------------------------------------------


def run_instance(region: str, name: str, url: str, room_id: str, endpoints: str) -> None:
    """One instance: the room's tick (as the service's ticker) and its RegionCell."""
    engine = Engine(redis.Redis.from_url(url, decode_responses=True, socket_timeout=2))
    cell = RegionCell(engine, Etcd(endpoints.split(","), timeout=0.8), region, name)
    cell.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    while not stop.wait(0.25):
        # the region's Redis is gone: nothing to tick
        with contextlib.suppress(StorageError, EngineError, redis.RedisError):
            engine.tick(room_id, 200)
    cell.stop()


def run_visitors(
    region: str, url: str, room_id: str, steps_json: str, poll_s: float, out: str
) -> None:
    """Visitors of one region: enter on the schedule, poll each waiting one every ``poll_s``;
    each visitor's record is written when it is admitted or when the schedule ends."""
    engine = Engine(redis.Redis.from_url(url, decode_responses=True, socket_timeout=2))
    steps: list[tuple[float, float]] = json.loads(steps_json)
    rng = random.Random(region)
    waiting: dict[str, dict[str, object]] = {}
    done: list[dict[str, object]] = []
    count, owed, last = 0, 0.0, time.time()
    next_poll: dict[str, float] = {}
    errors = 0
    end = steps[-1][0]
    while time.time() < end:
        now = time.time()
        rate = next((r for at, r in reversed(steps) if at <= now), 0.0)
        owed += rate * (now - last)
        last = now
        while owed >= 1:
            owed -= 1
            vid = f"{region}-{count}"
            count += 1
            try:
                answer = engine.enter(room_id, vid, "s", 10)
            except (StorageError, EngineError, redis.RedisError):
                errors += 1
                continue
            record: dict[str, object] = {
                "region": region, "vid": vid, "arrival": int(time.time() * 1000),
                "ticket": answer.ticket, "admitted": None,
            }  # fmt: skip
            if answer.status == "admitted" and answer.admission is not None:
                record["admitted"] = answer.admission.issued_ms
                done.append(record)
            else:
                waiting[vid] = record
                next_poll[vid] = now + poll_s * rng.random()
        for vid in [v for v, t in next_poll.items() if t <= now]:
            record = waiting[vid]
            try:
                answer = engine.poll(room_id, vid, int(record["ticket"] or 0), 1)  # type: ignore[call-overload]
            except (StorageError, EngineError, redis.RedisError):
                errors += 1
                next_poll[vid] = now + poll_s
                continue
            if answer.status == "admitted" and answer.admission is not None:
                record["admitted"] = answer.admission.issued_ms
                done.append(waiting.pop(vid))
                del next_poll[vid]
            else:
                next_poll[vid] = now + poll_s
        time.sleep(0.02)
    with open(out, "w") as f:
        for record in [*done, *waiting.values()]:
            f.write(json.dumps(record | {"errors": errors}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["instance", "visitors"])
    parser.add_argument("args", nargs="*")
    ns = parser.parse_args()
    if ns.role == "instance":
        run_instance(*ns.args)
    else:
        region, url, room_id, steps, poll_s, out = ns.args
        run_visitors(region, url, room_id, steps, float(poll_s), out)


if __name__ == "__main__":
    main()


# -- the figures ---------------------------------------------------------------------------


def admitted_between(
    visitors: Sequence[dict[str, object]], start_ms: int, end_ms: int, region: str | None = None
) -> int:
    """Admissions dealt in [start, end) (of ``region``, or all)."""
    return sum(
        1
        for v in visitors
        if v["admitted"] is not None
        and start_ms <= int(v["admitted"]) < end_ms  # type: ignore[call-overload]
        and (region is None or v["region"] == region)
    )


def order_inversions(visitors: Sequence[dict[str, object]], bound_ms: int, until_ms: int) -> int:
    """Visitors admitted before ``until_ms`` ahead of someone of another region who arrived
    more than ``bound_ms`` earlier (admitted later, or still waiting at ``until_ms``).
    Admissions from ``until_ms`` on are not judged here: the window ends where the faults
    begin, and a region cut off from the coordinator is behind the others by design (its
    fallback share; the bench's ``partition`` figure)."""
    never = until_ms + 1
    by_arrival = sorted(visitors, key=lambda v: int(v["arrival"]))  # type: ignore[call-overload]
    # per region, the latest admission among those who arrived before each point, as a sweep
    latest: dict[str, int] = {}
    inversions = 0
    j = 0
    for v in by_arrival:
        arrival = int(v["arrival"])  # type: ignore[call-overload]
        while j < len(by_arrival) and int(by_arrival[j]["arrival"]) < arrival - bound_ms:  # type: ignore[call-overload]
            w = by_arrival[j]
            done = int(w["admitted"]) if w["admitted"] is not None else never  # type: ignore[call-overload]
            done = min(done, never)
            region = str(w["region"])
            latest[region] = max(latest.get(region, 0), done)
            j += 1
        if v["admitted"] is None or int(v["admitted"]) >= until_ms:  # type: ignore[call-overload]
            continue
        admitted = int(v["admitted"])  # type: ignore[call-overload]
        if any(r != v["region"] and t > admitted for r, t in latest.items()):
            inversions += 1
    return inversions


def starved_seconds(
    visitors: Sequence[dict[str, object]], start_ms: int, end_ms: int, bound_ms: int
) -> int:
    """Region-seconds in which a region admitted nobody while someone waited there who had
    arrived more than ``bound_ms`` before someone another region admitted in that second."""
    starved = 0
    regions = sorted({str(v["region"]) for v in visitors})
    for second in range(start_ms, end_ms, 1_000):
        window = [
            v
            for v in visitors
            if v["admitted"] is not None and second <= int(v["admitted"]) < second + 1_000
        ]  # type: ignore[call-overload]
        for region in regions:
            if any(v["region"] == region for v in window):
                continue
            waiting = [
                int(v["arrival"])  # type: ignore[call-overload]
                for v in visitors
                if v["region"] == region
                and int(v["arrival"]) < second  # type: ignore[call-overload]
                and (v["admitted"] is None or int(v["admitted"]) >= second + 1_000)  # type: ignore[call-overload]
            ]
            if not waiting:
                continue
            oldest = min(waiting)
            if any(v["region"] != region and int(v["arrival"]) > oldest + bound_ms for v in window):  # type: ignore[call-overload]
                starved += 1
    return starved


def inversion_depths(visitors: Sequence[dict[str, object]], until_ms: int) -> list[int]:
    """For each visitor admitted before someone of another region who arrived earlier (and was
    admitted later, or still waited at ``until_ms``): by how much (ms) the earliest such one
    arrived earlier. The bench's measure of the order across regions, whatever the bound."""
    never = until_ms + 1
    rows = sorted(
        (
            int(v["arrival"]),  # type: ignore[call-overload]
            int(v["admitted"]) if v["admitted"] is not None else never,  # type: ignore[call-overload]
            str(v["region"]),
        )
        for v in visitors
    )
    depths = []
    for i, (arrival, admitted, region) in enumerate(rows):
        if admitted == never:
            continue
        for earlier, their_admission, theirs in rows[:i]:
            if theirs != region and their_admission > admitted and earlier < arrival:
                depths.append(arrival - earlier)
                break
    return depths
