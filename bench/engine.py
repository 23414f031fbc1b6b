"""Queue-engine benchmark: server-side cost of poll at 1k/100k/1M waiting spots, of a drain of
200, and Redis memory per waiting spot.

Per-call time is Redis's own figure: ``CONFIG RESETSTAT``, a batch of EVALSHA calls, then
``INFO commandstats`` (usec / calls) — one figure per batch; median and p99 are over batches.
Lines are filled as a pre-queue (opensAt a day ahead, rate 1/min) so the drain stays idle while
positions are still computed; polled spots are random across the whole line.
Run: ``python bench/engine.py [--redis-url URL]``. Writes ``bench/results/engine.json``.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402

SIZES = (1_000, 100_000, 1_000_000)


def evalsha_usec(client: redis.Redis) -> tuple[float, int]:
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec", 0)), int(stats.get("calls", 0))


def fill(engine: Engine, room: str, n: int) -> None:
    script = engine._scripts["enter"]
    base = engine.keys.room_base(room)
    for start in range(0, n, 5_000):
        pipe = engine.redis.pipeline(transaction=False)
        for i in range(start, min(n, start + 5_000)):
            script(keys=[base], args=[f"v{i}", "s", 10, ""], client=pipe)
        pipe.execute()


def poll_costs(engine: Engine, room: str, n: int, batches: int = 200, per: int = 20) -> list[float]:
    client = engine.redis
    out = []
    for _ in range(batches):
        client.config_resetstat()
        for _ in range(per):
            i = random.randrange(n)
            engine.poll(room, f"v{i}", i + 1, 1)
        usec, calls = evalsha_usec(client)
        out.append(usec / calls)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-url")
    args = parser.parse_args()
    server = None
    if not args.redis_url:
        server = EmbeddedRedis(tempfile.mkdtemp(), port=0).start()
    client = redis.Redis.from_url(args.redis_url or server.url, decode_responses=True)  # type: ignore[union-attr]
    engine = Engine(client, prefix="bench:")
    results: dict[str, object] = {"poll_us_median": {}, "poll_us_p99": {}}
    memory = 0.0
    try:
        for n in SIZES:
            room = engine.create_room(
                "bench",
                {
                    "slug": f"line-{n}",
                    "name": "b",
                    "redirectUrl": "https://x.example/",
                    "ratePerMinute": 1,
                    "maxWaiting": 10_000_000,
                },
            )["id"]
            engine.open(room, engine.stats(room).now_ms + 86_400_000)
            before = int(client.info("memory")["used_memory"])
            t0 = time.monotonic()
            fill(engine, room, n)
            filled = time.monotonic() - t0
            if n == SIZES[-1]:
                memory = (int(client.info("memory")["used_memory"]) - before) / n
            costs = sorted(poll_costs(engine, room, n))
            results["poll_us_median"][str(n)] = round(statistics.median(costs), 2)  # type: ignore[index]
            results["poll_us_p99"][str(n)] = round(costs[int(len(costs) * 0.99) - 1], 2)  # type: ignore[index]
            print(
                f"{n:>9} spots: filled in {filled:.1f}s, poll median "
                f"{statistics.median(costs):.1f} µs, p99 {costs[int(len(costs) * 0.99) - 1]:.1f} µs"
            )
            engine.delete_room(room)
        drains = []
        for t in range(20):
            room = engine.create_room(
                "bench",
                {
                    "slug": f"drain-{t}",
                    "name": "d",
                    "redirectUrl": "https://x.example/",
                    "ratePerMinute": 100_000,
                },
            )["id"]
            opens = engine.stats(room).now_ms + 60_000
            engine.open(room, opens)
            fill(engine, room, 400)
            engine.shift_clock(room, 65_000)
            client.config_resetstat()
            engine.poll(room, "v0", 1, 1)
            usec, _ = evalsha_usec(client)
            assert engine.stats(room).dealt_total == 200
            drains.append(usec / 1000)
            engine.delete_room(room)
        results["drain200_ms_median"] = round(statistics.median(drains), 3)
        results["bytes_per_waiting_spot"] = round(memory, 1)
        print(f"drain of 200: {results['drain200_ms_median']} ms; {memory:.0f} bytes per spot")
        out = ROOT / "bench" / "results" / "engine.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(json.dumps(results, indent=2))
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
