"""Queue-engine benchmark: server-side cost of poll at 1k/100k/1M waiting spots beside the floor
of what a poll must do, a drain of 200, memory per waiting spot and AOF bytes per poll.

Per-call time is Redis's own figure: ``CONFIG RESETSTAT``, a batch of EVALSHA calls, then
``INFO commandstats`` (usec / calls) — one figure per batch; median and p99 are over batches.
Lines are filled as a pre-queue (opensAt a day ahead, rate 1/min) so the drain stays idle while
positions are still computed; polled spots are random across the whole line.

The floor is one script doing what any poll must: HGET of the room, ZRANK of the visitor in a
line of the same length (random order, as the pre-queue's lottery order is) and HSET of its
last-seen time. It runs in the same batches' conditions, so ``ratio_to_floor`` is the figure to
compare between machines; absolute microseconds depend on the machine and its load.

The 1M model (``model_1m``): the polls a second of a 1M line polling as told (cadence bands),
times this run's per-poll costs (far and near the head), plus the drain at 100 admissions a second.

AOF bytes per poll: ``aof_current_size`` (``INFO persistence``) before and after every spot of
a 1,000-spot pre-queue polls every 15 s (the cadence deep in a line) for ten minutes of room clock.
Run: ``python bench/engine.py [--redis-url URL] [--sizes 1000,100000,1000000]``.
Writes ``bench/results/engine.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402

SIZES = (1_000, 100_000, 1_000_000)
NEAR_HEAD = 100  # positions that run the full poll (poll_far.lua answers the others)
# Polls a second of a 1M line polling as told: spots per cadence band / its pollAfterMs.
CADENCE_1M = {"near": 10 / 1.0 + 90 / 2.5, "far": 900 / 5.0 + 999_000 / 15.0}
MODEL_RATE_PER_MINUTE = 6_000  # admissions a second in the model: 100
FLOOR_SCRIPT = """
-- The floor of a poll. KEYS: room hash, line sorted set, last-seen hash. ARGV: vid, now (ms).
local status = redis.call('HGET', KEYS[1], 'st')
local rank = redis.call('ZRANK', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
return {status, rank}
"""
ROOM_CONFIG = {"name": "b", "redirectUrl": "https://x.example/", "maxWaiting": 10_000_000}


def evalsha_usec(client: redis.Redis) -> tuple[float, int]:
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec", 0)), int(stats.get("calls", 0))


def fill(engine: Engine, room: str, n: int) -> None:
    script = engine._scripts["enter"]
    keys = engine.script_keys("enter", room)
    for start in range(0, n, 5_000):
        pipe = engine.redis.pipeline(transaction=False)
        for i in range(start, min(n, start + 5_000)):
            script(keys=keys, args=[f"v{i}", "s", 10, "", ""], client=pipe)
        pipe.execute()


def floor_keys(n: int) -> list[str]:
    return [f"floor:{{{n}}}:room", f"floor:{{{n}}}:line", f"floor:{{{n}}}:seen"]


def fill_floor(client: redis.Redis, n: int) -> None:
    room, line, seen = floor_keys(n)
    client.hset(room, mapping={"st": "open", "rate": 1})
    now = int(time.time() * 1000)
    for start in range(0, n, 5_000):
        pipe = client.pipeline(transaction=False)
        ids = range(start, min(n, start + 5_000))
        pipe.zadd(line, {f"v{i}": random.random() for i in ids})
        pipe.hset(seen, mapping={f"v{i}": now for i in ids})
        pipe.execute()


def batch_costs(client: redis.Redis, call: Any, n: int, batches: int, per: int) -> list[float]:
    out = []
    for _ in range(batches):
        client.config_resetstat()
        for _ in range(per):
            call(random.randrange(n))
        usec, _ = evalsha_usec(client)
        out.append(usec / per)  # per poll: a poll near the head is two scripts
    return out


def p99(costs: list[float]) -> float:
    ordered = sorted(costs)
    return ordered[int(len(ordered) * 0.99) - 1]


def poll_and_floor(engine: Engine, n: int, results: dict[str, Any]) -> float:
    """Poll and floor costs at ``n`` spots, interleaved batch by batch; engine bytes per spot."""
    client = engine.redis
    room = engine.create_room("bench", ROOM_CONFIG | {"slug": f"line-{n}", "ratePerMinute": 1})[
        "id"
    ]
    engine.open(room, engine.stats(room).now_ms + 86_400_000)
    before = int(client.info("memory")["used_memory"])
    t0 = time.monotonic()
    fill(engine, room, n)
    filled = time.monotonic() - t0
    engine_bytes = (int(client.info("memory")["used_memory"]) - before) / n
    before = int(client.info("memory")["used_memory"])
    fill_floor(client, n)
    floor_bytes = (int(client.info("memory")["used_memory"]) - before) / n
    floor = client.register_script(FLOOR_SCRIPT)
    keys = floor_keys(n)

    def poll(i: int) -> None:
        engine.poll(room, f"v{i}", i + 1, 1)

    def floor_poll(i: int) -> None:
        floor(keys=keys, args=[f"v{i}", int(time.time() * 1000)])

    polls: list[float] = []
    floors: list[float] = []
    near: list[float] = []
    for _ in range(10):  # interleaved, so both see the same load on a shared machine
        polls += batch_costs(client, poll, n, 20, 20)
        floors += batch_costs(client, floor_poll, n, 20, 20)
        near += batch_costs(client, poll, min(n, NEAR_HEAD), 5, 20)
    key = str(n)
    results["poll_near_head_us_median"][key] = round(statistics.median(near), 2)
    poll_us, floor_us = statistics.median(polls), statistics.median(floors)
    results["poll_us_median"][key] = round(poll_us, 2)
    results["poll_us_p99"][key] = round(p99(polls), 2)
    results["floor_us"][key] = round(floor_us, 2)
    results["ratio_to_floor"][key] = round(poll_us / floor_us, 2)
    results["floor_bytes_per_spot"][key] = round(floor_bytes, 1)
    print(
        f"{n:>9} spots: filled in {filled:.1f}s, poll median {poll_us:.1f} µs "
        f"(p99 {p99(polls):.1f}), floor {floor_us:.1f} µs, ratio {poll_us / floor_us:.2f}; "
        f"{engine_bytes:.0f} bytes per spot (floor {floor_bytes:.0f})"
    )
    engine.delete_room(room)
    client.delete(*keys)
    return engine_bytes


def drain_of_200(engine: Engine) -> float:
    """Median Redis time (ms) of one poll that admits 200 from a line of 400."""
    client = engine.redis
    drains = []
    for t in range(20):
        config = ROOM_CONFIG | {"slug": f"drain-{t}", "ratePerMinute": 100_000}
        room = engine.create_room("bench", config)["id"]
        engine.open(room, engine.stats(room).now_ms + 60_000)
        fill(engine, room, 400)
        engine.shift_clock(room, 65_000)
        client.config_resetstat()
        engine.poll(room, "v0", 1, 1)
        usec, _ = evalsha_usec(client)
        assert engine.stats(room).dealt_total == 200
        drains.append(usec / 1000)
        engine.delete_room(room)
    return statistics.median(drains)


def aof_bytes_per_poll(engine: Engine, spots: int = 1_000, every_ms: int = 15_000) -> float:
    """AOF bytes written per poll while every spot polls every ``every_ms`` for ten minutes."""
    client = engine.redis
    config = ROOM_CONFIG | {"slug": "aof", "ratePerMinute": 1}
    room = engine.create_room("bench", config)["id"]
    engine.open(room, engine.stats(room).now_ms + 86_400_000)
    fill(engine, room, spots)
    engine.shift_clock(room, 1_000)
    before = int(client.info("persistence")["aof_current_size"])
    polls = 0
    for _ in range(600_000 // every_ms):
        for i in range(spots):
            engine.poll(room, f"v{i}", i + 1, 1)
            polls += 1
        engine.shift_clock(room, every_ms)
    after = int(client.info("persistence")["aof_current_size"])
    engine.delete_room(room)
    # The clock shifts themselves are written too; they are not the polls' doing.
    shift = 600_000 // every_ms * len(f"HINCRBY {room} clk {every_ms}") * 2
    return max(0.0, (after - before - shift) / polls)


def model_1m(results: dict[str, Any], size: str) -> dict[str, Any]:
    """Redis core-seconds per second of a 1M line polling as told, from this run's figures.

    Every poll script writes (the per-ticket counter, unreplicated) so all of it is primary
    work; none can go to a replica yet. ``size`` is the largest line measured.
    """
    far = CADENCE_1M["far"] * results["poll_us_median"][size] / 1e6
    near = CADENCE_1M["near"] * results["poll_near_head_us_median"][size] / 1e6
    drain = MODEL_RATE_PER_MINUTE / 60 * results["drain200_ms_median"] / 200 / 1e3
    floor = sum(CADENCE_1M.values()) * results["floor_us"][size] / 1e6
    total = far + near + drain
    return {
        "line_measured": int(size),
        "polls_per_second": round(sum(CADENCE_1M.values())),
        "admissions_per_second": MODEL_RATE_PER_MINUTE // 60,
        "far_poll_cores": round(far, 3),
        "near_poll_cores": round(near, 3),
        "drain_cores": round(drain, 3),
        "primary_cores": round(total, 3),
        "replica_cores": 0.0,
        "total_cores": round(total, 3),
        "floor_cores": round(floor, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-url")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    server, data = None, tempfile.TemporaryDirectory()  # a 1M line leaves ~400 MB of AOF
    if not args.redis_url:
        server = EmbeddedRedis(data.name, port=0).start()
    client = redis.Redis.from_url(args.redis_url or server.url, decode_responses=True)  # type: ignore[union-attr]
    client.config_set("auto-aof-rewrite-percentage", 0)  # no rewrite fork in the middle of a batch
    engine = Engine(client, prefix="bench:")
    results: dict[str, Any] = {
        "poll_us_median": {},
        "poll_us_p99": {},
        "floor_us": {},
        "ratio_to_floor": {},
        "floor_bytes_per_spot": {},
        "poll_near_head_us_median": {},
    }
    memory = 0.0
    try:
        results["redis_version"] = client.info("server")["redis_version"]
        for n in sizes:
            memory = poll_and_floor(engine, n, results)
        results["drain200_ms_median"] = round(drain_of_200(engine), 3)
        results["bytes_per_waiting_spot"] = round(memory, 1)
        results["bytes_ratio_to_floor"] = round(
            memory / results["floor_bytes_per_spot"][str(sizes[-1])], 2
        )
        results["aof_bytes_per_poll"] = round(aof_bytes_per_poll(engine), 1)
        results["model_1m"] = model_1m(results, str(sizes[-1]))
        print(
            f"drain of 200: {results['drain200_ms_median']} ms; {memory:.0f} bytes per spot "
            f"({results['bytes_ratio_to_floor']}x floor); "
            f"{results['aof_bytes_per_poll']} AOF bytes per poll (15 s cadence)"
        )
        print(f"1M model: {results['model_1m']}")
        out = ROOT / "bench" / "results" / "engine.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(json.dumps(results, indent=2))
    finally:
        if server:
            server.stop()
        data.cleanup()


if __name__ == "__main__":
    main()
