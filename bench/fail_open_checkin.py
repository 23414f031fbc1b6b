"""What the fail-open check-ins cost Redis (queue/line/fail_open_checkin.py, issue 32): every
process's room ticker checks in with each open failMode-open room every step (~0.5 s).

Several processes (``--processes``, names only: the script's cost is per call) check in with
``--rooms`` fail-open rooms in one pipelined round each, as their tickers do, for ``--steps``
steps; the figures are Redis's own time per check-in call (``INFO commandstats``, the EVALSHA
calls of the round), side by side with the tick's call that finds the room ticked already
(which each ticker sends each room with a line every step), the wall time of one process's
round, and what the check-ins make a second for the whole service (each process twice a
second).

Run: ``python bench/fail_open_checkin.py [--processes N] [--rooms N] [--steps N]
[--out FILE]`` (``--out``: bench/results/fail_open_checkin.json by
default; ``--no-out`` only prints).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
# bench/http.py would stand for the standard library's http: this folder goes last on the path.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.line.fail_open_checkin import GRACE_MS, LATE_MS, STALE_MS  # noqa: E402


def evalsha_usec(client: redis.Redis) -> tuple[int, int]:
    """(calls, usec) of EVALSHA so far."""
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)), int(stats.get("usec", 0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--rooms", type=int, default=100)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "fail_open_checkin.json"))
    parser.add_argument("--no-out", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(Path(data)).start()
        try:
            client = redis.Redis.from_url(server.url, decode_responses=True)
            engine = Engine(client)
            rooms = []
            for i in range(args.rooms):
                config = {"slug": f"room-{i}", "name": "Drop", "redirectUrl": "https://shop.example/",
                          "failMode": "open"}  # fmt: skip
                room = str(engine.create_room("bench", config)["id"])
                engine.open(room)
                rooms.append(room)
            processes = [f"host:{1000 + p}:bench" for p in range(args.processes)]
            clocks = {room: engine.stats(room).now_ms for room in rooms}
            rounds: list[float] = []
            before = evalsha_usec(client)
            for _ in range(args.steps):
                for process in processes:
                    checks = [(room, clocks[room] + 10 * LATE_MS, False) for room in rooms]
                    started = time.perf_counter()
                    engine.check_in_fail_open(process, checks, STALE_MS, GRACE_MS)
                    rounds.append(time.perf_counter() - started)
            calls, usec = (a - b for a, b in zip(evalsha_usec(client), before, strict=True))
            # side by side: the tick's call that finds the room ticked this second (what each
            # process's ticker already sends each room of a line every step)
            for room in rooms:
                engine.tick(room, 10**9)
            before = evalsha_usec(client)
            for _ in range(args.steps):
                for room in rooms:
                    engine.tick(room, 10**9)
            tick_calls, tick_usec = (
                a - b for a, b in zip(evalsha_usec(client), before, strict=True)
            )
        finally:
            server.stop()
    per_call = usec / calls
    figures = {
        "processes": args.processes,
        "rooms": args.rooms,
        "redis_usec_per_check_in": round(per_call, 2),
        "redis_usec_per_idle_tick_call": round(tick_usec / tick_calls, 2),
        "check_in_over_idle_tick": round(per_call / (tick_usec / tick_calls), 2),
        "round_ms_p50": round(statistics.median(rounds) * 1000, 2),
        "round_ms_max": round(max(rounds) * 1000, 2),
        # every process twice a second, each room once per round
        "redis_ms_per_second_of_service": round(
            per_call * args.rooms * args.processes * 2 / 1000, 2
        ),
    }
    print(json.dumps(figures, indent=2))
    if not args.no_out:
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
