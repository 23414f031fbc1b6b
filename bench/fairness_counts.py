"""What the fairness report's counts cost the drain (issue 23 items 5-6), side by side: the
tick admitting 200 later arrivals from a line of 400 with lua/ at a git revision (before)
against the worktree's lua/ (after), alternated in one process on one Redis
(bench/drain.py's harness). Only the tickets case: since the service's draw, a pool's tick at
opensAt admits nobody until the draw is made, which bench/drain.py's pool case does not wait for.

Run: ``python bench/fairness_counts.py [--before REV] [--rounds N]``; writes
bench/results/fairness_counts.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
sys.path.insert(0, str(ROOT / "bench"))

import redis  # noqa: E402

import drain  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default="HEAD~1", help="git revision of the before lua/")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "fairness_counts.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data, tempfile.TemporaryDirectory() as old:
        server = EmbeddedRedis(data, port=0).start()
        try:
            pid = server.process.pid  # type: ignore[union-attr]
            client = redis.Redis.from_url(server.url, decode_responses=True)
            version = client.info("server")["redis_version"]
            before = drain.engine_with_lua(client, drain.lua_at(args.before, Path(old)), "b:")
            after = drain.engine_with_lua(client, ROOT / "lua", "a:")
            result = {"redis_version": version, "before": args.before, "rounds": args.rounds}
            result["load_average"] = round(os.getloadavg()[0], 1)
            result["tickets"] = drain.side_by_side(before, after, args.rounds, False, pid)
        finally:
            server.stop()
    figures = result["tickets"]
    print(
        f"drain of 200 later arrivals: before {figures['before_ms_median']} ms -> after "
        f"{figures['after_ms_median']} ms (ratio {figures['ratio_median']}); CPU "
        f"{figures['before_cpu_ms_median']} -> {figures['after_cpu_ms_median']} ms "
        f"(ratio {figures['cpu_ratio_median']}), Redis {version}"
    )
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
