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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
# bench/http.py would stand for the standard library's http (urllib.request imports it): this
# folder goes after the standard library on the path, where sibling benchmarks are still found.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]


import drain  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default="HEAD~1", help="git revision of the before lua/")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "fairness_counts.json"))
    args = parser.parse_args()
    with drain.two_script_sets(args.before) as two:
        version = two.version
        result = {"redis_version": version, "before": args.before, "rounds": args.rounds}
        result["load_average"] = round(os.getloadavg()[0], 1)
        result["tickets"] = drain.side_by_side(two.before, two.after, args.rounds, False, two.pid)
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
