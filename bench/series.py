"""What sampling a room costs: Redis time per sample, a round trip, and memory per sample.

A room with ``--waiting`` spots (one in ten held) and every counter and wait bucket set is
sampled ``--samples`` times, its pinned clock moved 10 s between samples with a plain HSET of
the room's ``fix`` field (so ``INFO commandstats``' EVALSHA figure is the sample script's alone).
Also timed: a call that finds its slot taken (another instance sampled first).
Run: ``python bench/series.py [--redis-url URL]``. Writes ``bench/results/series.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
# bench/http.py would stand for the standard library's http (urllib.request imports it): this
# folder goes after the standard library on the path, where sibling benchmarks are still found.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.series import room_series as rs  # noqa: E402

T0 = 1_800_000_000_000


def measure(client: redis.Redis, waiting: int, samples: int) -> dict[str, float]:
    """The figures of one run on ``client`` (flushed first)."""
    client.flushall()
    engine = Engine(client)
    series = rs.RoomSeries(client, engine.keys)
    config = {"slug": "bench", "name": "Bench", "redirectUrl": "https://shop.example/checkout"}
    room = engine.create_room("bench", config | {"ratePerMinute": 60})["id"]
    engine.set_clock(room, T0)
    engine.open(room)
    for i in range(waiting):
        engine.enter(room, f"v{i}", f"s{i}", 80 if i % 10 == 0 else 10)
    client.hset(engine.keys.room(room), mapping=dict.fromkeys(rs.COUNTERS, 12345))
    client.hset(engine.keys.room_base(room) + "waits", mapping=dict.fromkeys(rs.WAIT_BUCKETS, 99))
    series.sample(room)  # loads the script
    client.config_resetstat()
    round_trip = 0.0
    for k in range(1, samples + 1):
        client.hset(engine.keys.room(room), "fix", T0 + k * rs.FINE_MS)
        started = time.perf_counter()
        series.sample(room)
        round_trip += time.perf_counter() - started
    evalsha = client.info("commandstats")["cmdstat_evalsha"]
    started = time.perf_counter()
    for _ in range(samples):
        series.sample(room)  # the slot is taken
    taken = (time.perf_counter() - started) / samples
    key = engine.keys.room_base(room) + "s10"
    per_sample = client.memory_usage(key) / client.zcard(key)
    return {
        "waiting": waiting,
        "redis_us_per_sample": round(evalsha["usec_per_call"], 1),
        "round_trip_ms_per_sample": round(round_trip / samples * 1000, 3),
        "round_trip_ms_slot_taken": round(taken * 1000, 3),
        "bytes_per_sample": round(per_sample, 1),
        "mb_per_room_24h_fine": round(per_sample * 8640 / 1e6, 2),
        "mb_per_room_14d_minutes": round(per_sample * 20160 / 1e6, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=2_000)
    args = parser.parse_args()
    server = None
    if not args.redis_url:
        server = EmbeddedRedis(tempfile.mkdtemp()).start()
    try:
        client = redis.Redis.from_url(args.redis_url or server.url, decode_responses=True)
        result = measure(client, args.waiting, args.samples)
    finally:
        if server is not None:
            server.stop()
    print(json.dumps(result, indent=2))
    out = ROOT / "bench" / "results" / "series.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
