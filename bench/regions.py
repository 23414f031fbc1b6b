"""One room across three regions on this machine, for minutes (tests/region_rig.py): the global
line's figures, through the coordinator's loss and a region's partition, and a region's cost
per waiting visitor beside a room in one region (side by side, one run).

    python bench/regions.py [--minutes 3] [--out bench/results/regions.json]

Three redis-servers, two instances and a visitor process per region, a 3-member etcd reached
over 30 / 90 / 150 ms round trips (tests/fault_proxy.py), arrivals 70 / 20 / 10 % shifting to
40 / 40 / 20 and 20 / 30 / 50 during the run, slightly above the room's rate so the line grows.
Figures (all clocks are this machine's: the skew is 0):

- ``rate_error``: each steady minute's admissions across regions against the room's rate;
- ``capacity_overshoot_max`` and its ``capacity_bound`` (a second run where the capacity binds);
- ``order_inversions_beyond_bound``: visitors admitted before one of another region who arrived
  more than the bound earlier (one interval, one bucket, one tick of the deal);
- ``starved_region_seconds``: seconds a region admitted nobody while someone waited there who
  arrived more than the bound before one another region admitted in that second;
- ``coordinator_failover_seconds``: the leader's instance killed, until another leads;
- ``partition``: what a region cut off from etcd for 20 s admitted during and after;
- ``position_error``: the global position shown (own line + the others' summaries) against
  the exact one, and the bound it is stated within;
- ``single_region_cost``: a poll, an entry and a tick of a room in one region against the same
  room across regions (with a lease), on one Redis, interleaved; and the summary's cost.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.queue.line import spot_record  # noqa: E402
from anteroom.queue.regions.etcd_kv import Etcd  # noqa: E402
from anteroom.queue.regions.global_line import BUCKET_MS, INTERVAL_MS  # noqa: E402
from anteroom.queue.regions.region_cell import HEAD, summary_of  # noqa: E402
from region_rig import (  # noqa: E402
    REGIONS,
    RegionRig,
    admitted_between,
    inversion_depths,
    order_inversions,
    start_redis_server,
    starved_seconds,
)

RATE = 600
BOUND_MS = INTERVAL_MS + BUCKET_MS + 200  # skew 0 (one machine) + interval + bucket + tick
SHIFTS = ({"eu": 0.7, "us": 0.2, "ap": 0.1}, {"eu": 0.4, "us": 0.4, "ap": 0.2},
          {"eu": 0.2, "us": 0.3, "ap": 0.5})  # fmt: skip
ARRIVALS = 12.0  # a second, against the rate's 10


def wait_until(at: float) -> None:
    time.sleep(max(0.0, at - time.time()))


# -- a region's cost beside one region's ---------------------------------------------------


def script_us(client: redis.Redis) -> tuple[float, int]:
    """Redis's own time in scripts so far (µs) and their calls (INFO commandstats)."""
    stats = client.info("commandstats")
    evalsha = stats.get("cmdstat_evalsha", {"usec": 0, "calls": 0})
    return float(evalsha["usec"]), int(evalsha["calls"])


def single_region_cost(root: Path, waiting: int = 2000, rounds: int = 20) -> dict[str, Any]:
    """Redis's time per call (µs, its own count: no client nor network in it) of poll, enter
    and tick: a room in one region beside the same room across regions (with a lease), on one
    Redis, interleaved; and the summary a region's instances write once an interval."""
    proc, port = start_redis_server(root / "cost")
    try:
        client = redis.Redis(port=port, decode_responses=True)
        engine = Engine(client)
        config = {"name": "cost", "redirectUrl": "https://shop.example/", "ratePerMinute": 1}
        rooms, tickets = {}, {}
        for kind in ("single", "regional"):
            room = str(engine.create_room("bench", config | {"slug": kind})["id"])
            if kind == "regional":
                engine.join_regions(room, 0)
                engine.apply_lease(room, 1, 10**9, 10**15, 10**9, 0)
            engine.open(room)
            tickets[kind] = [engine.enter(room, f"w{i}", "s", 10).ticket for i in range(waiting)]
            rooms[kind] = room
        times: dict[str, dict[str, list[float]]] = {
            k: {"poll": [], "enter": [], "tick": []} for k in rooms
        }
        rng = random.Random(1)
        fresh = 0

        def measure(kind: str, call: str, batch: Any) -> None:
            before, calls = script_us(client)
            batch()
            after, calls_after = script_us(client)
            times[kind][call].append((after - before) / max(1, calls_after - calls))

        for n in range(rounds):
            # interleaved, each first in turn: the machine's noise and warmth hit both alike
            order = list(rooms.items()) if n % 2 == 0 else list(rooms.items())[::-1]
            for kind, room in order:

                def polls(kind: str = kind, room: str = room) -> None:
                    for _ in range(300):
                        i = rng.randrange(waiting)
                        engine.poll(room, f"w{i}", tickets[kind][i], 1, near_head=True)

                def entries(room: str = room) -> None:
                    nonlocal fresh
                    for _ in range(100):
                        fresh += 1
                        engine.enter(room, f"n{fresh}", "s", 10)

                def ticks(room: str = room) -> None:
                    for _ in range(100):
                        engine.tick(room, 0)

                measure(kind, "poll", polls)
                measure(kind, "enter", entries)
                measure(kind, "tick", ticks)
        out: dict[str, Any] = {"waiting": waiting, "rounds": rounds}
        for call in ("poll", "enter", "tick"):
            single = statistics.median(times["single"][call])
            regional = statistics.median(times["regional"][call])
            out[f"{call}_redis_us_single"] = round(single, 1)
            out[f"{call}_redis_us_regional"] = round(regional, 1)
            out[f"{call}_regional_vs_single"] = round(regional / single, 3)
        before, calls = script_us(client)
        for _ in range(100):
            engine.region_summary(rooms["regional"], HEAD, BUCKET_MS)
        after, calls_after = script_us(client)
        summary_us = (after - before) / max(1, calls_after - calls)
        out["summary_redis_us"] = round(summary_us, 1)
        # each instance reports once an interval: its cost spread over the waiting
        per = summary_us / (waiting + rounds * 100)
        out["summary_redis_us_per_waiting_second_per_instance"] = round(per, 3)
        return out
    finally:
        proc.kill()
        proc.wait(5)


# -- the global line -----------------------------------------------------------------------


def exact_positions(rig: RegionRig) -> dict[str, list[int]]:
    """Each region's waiting visitors' arrival times (ms), read whole."""
    out: dict[str, list[int]] = {}
    for name, region in rig.regions.items():
        engine = rig.engine(name)
        raw = engine.redis.hgetall(engine.keys.room_keys(region.room_id)["spots"])
        arrivals = []
        for record in raw.values():
            spot = spot_record.parse(record)
            if spot["state"] == "w":
                arrivals.append(int(spot["since"]))
        out[name] = sorted(arrivals)
    return out


def sample_positions(rig: RegionRig, etcd: Etcd, rng: random.Random) -> list[tuple[int, int, int]]:
    """(shown, exact, bound) for a few waiting visitors of each region, now."""
    summaries = {}
    for kv in etcd.get_prefix("/anteroom/rooms/drop/summary/"):
        summary, _ = summary_of(kv.value)
        summaries[summary.region] = summary
    arrivals = exact_positions(rig)
    # read after the line: what was admitted while it was read counts in the bound too
    dealt_now = {
        name: rig.engine(name).stats(r.room_id).dealt_total for name, r in rig.regions.items()
    }
    everyone = sorted(t for ts in arrivals.values() for t in ts)
    out = []
    for region, mine in arrivals.items():
        for t in rng.sample(mine, min(5, len(mine))):
            local = sum(1 for x in mine if x < t)
            exact = sum(1 for x in everyone if x < t)
            shown = local + sum(s.arrived_before(t) for r, s in summaries.items() if r != region)
            # per other region: a bucket's arrivals, what it admitted since its report, and
            # who arrived there between its report and this visitor
            bound = sum(
                max((n for _, n in s.buckets), default=0)
                + max(0, dealt_now[r] - s.admitted)
                + sum(1 for x in arrivals.get(r, []) if s.at_ms < x < t)
                for r, s in summaries.items()
                if r != region
            )
            out.append((shown, exact, bound))
    return out


def schedule(minutes: int, faults_s: int) -> list[tuple[float, dict[str, float]]]:
    steps: list[tuple[float, dict[str, float]]] = []
    third = minutes * 60 / 3
    for i, shares in enumerate(SHIFTS):
        steps.append((i * third, {r: ARRIVALS * s for r, s in shares.items()}))
    steps.append((minutes * 60 + faults_s, {}))
    return steps


def line_run(root: Path, minutes: int) -> dict[str, Any]:
    faults_s = 75
    with RegionRig(root / "line", rate=RATE) as rig:
        while rig.leader() is None:
            time.sleep(0.1)
        etcd = Etcd(rig.etcd.endpoints)
        rng = random.Random(7)
        start = time.time()
        t0 = int(start * 1000)
        rig.start_visitors(schedule(minutes, faults_s), poll_s=3.0)
        positions: list[tuple[int, int, int]] = []
        end_steady = start + minutes * 60
        while time.time() < end_steady - 5:
            time.sleep(10)
            positions += sample_positions(rig, etcd, rng)
        wait_until(end_steady)
        # the coordinator's instance killed
        wait_until(end_steady + 10)
        before = rig.leader()
        assert before is not None
        killed = time.time()
        rig.kill_instance(before[0])
        while (leader := rig.leader()) is None or leader == before:
            time.sleep(0.02)
        failover = time.time() - killed
        # ap cut off from etcd for 20 s
        cut_at = end_steady + 30
        wait_until(cut_at)
        rig.cut_off("ap")
        wait_until(cut_at + 20)
        rig.rejoin("ap")
        rejoined = time.time()
        engine = rig.engine("ap")
        ap_room = rig.regions["ap"].room_id
        while True:
            raw = engine.redis.hget(engine.keys.room(ap_room), "rgl") or "0:0:0:0:0"
            if int(raw.split(":")[3]) > int(time.time() * 1000) + 1_000:
                break
            time.sleep(0.05)
        fresh_lease_s = time.time() - rejoined
        rig.wait_visitors(timeout=faults_s + 60)
        visitors = rig.visitors()

    def between(a: float, b: float, region: str | None = None) -> int:
        return admitted_between(visitors, int(a * 1000), int(b * 1000), region)

    minute_counts = [
        between(start + 10 + 60 * k, start + 70 + 60 * k)
        for k in range(minutes)
        if 70 + 60 * k <= minutes * 60
    ]
    steady_end_ms = int(end_steady * 1000)
    # arrived early enough to be admitted before the faults (the line is some 10 s long)
    steady_visitors = [v for v in visitors if int(v["arrival"]) < steady_end_ms - 20_000]  # type: ignore[call-overload]
    depths = inversion_depths(steady_visitors, steady_end_ms)
    errors = [abs(shown - exact) for shown, exact, _ in positions]
    cut_ms = int(cut_at * 1000)
    return {
        "rate_per_minute": RATE,
        "admitted_per_minute": minute_counts,
        "rate_error": [round((n - RATE) / RATE, 4) for n in minute_counts],
        "rate_error_max_abs": round(max(abs(n - RATE) / RATE for n in minute_counts), 4),
        "order_inversions_beyond_bound": order_inversions(steady_visitors, BOUND_MS, steady_end_ms),
        "order_bound_ms": BOUND_MS,
        "order_inversions_any": len(depths),
        "order_inversion_depth_max_ms": max(depths, default=0),
        "order_inversion_depth_p99_ms": sorted(depths)[int(0.99 * (len(depths) - 1))]
        if depths
        else 0,
        "starved_region_seconds": starved_seconds(visitors, t0 + 10_000, steady_end_ms, BOUND_MS),
        "admitted_by_region": {r: between(start, end_steady, r) for r in REGIONS},
        "coordinator_failover_seconds": round(failover, 2),
        "admitted_during_failover_10s": between(killed, killed + 10),
        "failover_bound_10s": RATE // 6 + RATE // 60,
        "partition": {
            "region": "ap",
            "cut_seconds": 20,
            "fallback_share": 0.1,
            "ap_admitted_during_cut": between(cut_at, cut_at + 20, "ap"),
            "ap_admitted_after_lease_expiry": between(cut_at + 3, cut_at + 20, "ap"),
            "ap_allowed_after_lease_expiry": int(RATE / 60 * 0.1 * 17) + 1,
            "others_admitted_during_cut": between(cut_at, cut_at + 20)
            - between(cut_at, cut_at + 20, "ap"),
            "ap_admitted_10s_after_rejoin": between(cut_at + 20, cut_at + 30, "ap"),
            "rejoin_to_fresh_lease_seconds": round(fresh_lease_s, 2),
            "cut_ms": cut_ms,
        },
        "position_error": {
            "samples": len(errors),
            "mean_abs": round(statistics.mean(errors), 2) if errors else None,
            "max_abs": max(errors, default=0),
            "p95_abs": sorted(errors)[int(0.95 * (len(errors) - 1))] if errors else None,
            "beyond_stated_bound": sum(1 for s, e, b in positions if abs(s - e) > b),
            "beyond_stated_bound_by_max": max((abs(s - e) - b for s, e, b in positions), default=0),
            "stated_bound_mean": round(statistics.mean(b for _, _, b in positions), 1)
            if positions
            else None,
            "mean_exact_position": round(statistics.mean(e for _, e, _ in positions), 1)
            if positions
            else None,
        },
    }


def capacity_run(root: Path, seconds: int = 75) -> dict[str, Any]:
    rate, capacity = 1200, 100
    with RegionRig(root / "capacity", rate=rate, capacity=capacity, admission_ttl=30) as rig:
        while rig.leader() is None:
            time.sleep(0.1)
        rig.start_sampling()
        rig.start_visitors([(0, {"eu": 4.2, "us": 1.2, "ap": 0.6}), (seconds, {})], poll_s=3.0)
        rig.wait_visitors(timeout=seconds + 60)
        peak = max((n for _, n in rig.samples), default=0)
    return {
        "capacity": capacity,
        "capacity_rate_per_minute": rate,
        "active_peak": peak,
        "capacity_overshoot_max": max(0, peak - capacity),
        "capacity_bound": rate * INTERVAL_MS // 60_000,  # one interval's admissions
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "regions.json"))
    parser.add_argument(
        "--cost-only", action="store_true", help="measure the cost alone, into the JSON there"
    )
    args = parser.parse_args()
    # stopped from outside: leave through the rigs' exits, which stop their processes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if args.cost_only:
        with tempfile.TemporaryDirectory() as tmp:
            cost = single_region_cost(Path(tmp))
        figures = json.loads(Path(args.out).read_text()) | {"single_region_cost": cost}
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
        print(json.dumps(cost, indent=2))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cost = single_region_cost(root)
        print("cost:", json.dumps(cost))
        line = line_run(root, args.minutes)
        print("line:", json.dumps(line))
        capacity = capacity_run(root)
        print("capacity:", json.dumps(capacity))
    figures = {
        "minutes": args.minutes,
        "regions": list(REGIONS),
        "rtt_ms": [30, 90, 150],
        **line,
        **capacity,
        "single_region_cost": cost,
    }
    Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
