"""What the queueing modes (issue 26 item 1) cost a fifo room, side by side: lua/ at a git
revision (before) against the worktree's lua/ (after), alternated in one process on one Redis
(bench/drain.py's harness). The modes add one field to the room's read (_room.lua) and one
comparison to enter and the drain; a fifo room should pay nothing measurable for them.

Per round and per side, in a fresh fifo room with its clock pinned: ``enter_queued_us`` (a
newcomer filed into the line: rate 1, nothing earned), ``enter_straight_in_us`` (a newcomer
admitted at once: rate 100,000, a second earned), ``poll_full_us`` (poll.lua on each waiting
spot once) and ``drain200_ms`` (the tick admitting 200 from a line of 400). Figures are Redis's
own (usec / calls of EVALSHA over a batch, ``INFO commandstats``); ratios are after / before
per round, and medians over rounds.

Run: ``python bench/modes.py [--before REV] [--rounds N] [--batch N]``; writes
bench/results/modes.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
# bench/http.py would stand for the standard library's http (urllib.request imports it): this
# folder goes after the standard library on the path, where sibling benchmarks are still found.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]


import drain  # noqa: E402
import engine as engine_bench  # noqa: E402
from anteroom.engine import Engine  # noqa: E402


def pinned_room(engine: Engine, slug: str, rate: int) -> str:
    config = engine_bench.ROOM_CONFIG | {"slug": slug, "ratePerMinute": rate}
    room = str(engine.create_room("bench", config)["id"])
    engine.set_clock(room, engine.stats(room).now_ms)
    engine.open(room)
    return room


def per_call_us(engine: Engine, calls: Any) -> float:
    """Redis's usec per script call over ``calls`` (a thunk making the batch)."""
    engine.redis.config_resetstat()
    calls()
    usec, count = engine_bench.evalsha_usec(engine.redis)
    return usec / count


def one_round(engine: Engine, n: int, tag: str, pid: int) -> dict[str, float]:
    """One side's figures in fresh rooms (deleted after)."""
    out: dict[str, float] = {}
    queued = pinned_room(engine, f"q-{tag}", 1)
    vids = [f"v{i}" for i in range(n)]
    out["enter_queued_us"] = per_call_us(
        engine, lambda: [engine.enter(queued, v, "s", 10) for v in vids]
    )
    # every spot once (tickets are handed out in entry order): a poll of the same spot again
    # at once would be its poll limit's refusal, not a poll
    out["poll_full_us"] = per_call_us(
        engine,
        lambda: [engine.poll(queued, v, t, 1, near_head=True) for t, v in enumerate(vids, 1)],
    )
    engine.delete_room(queued)
    straight = pinned_room(engine, f"s-{tag}", 100_000)
    engine.shift_clock(straight, 1_000)
    out["enter_straight_in_us"] = per_call_us(
        engine, lambda: [engine.enter(straight, v, "s", 10) for v in vids]
    )
    assert engine.stats(straight).dealt_total == n  # each went straight in
    engine.delete_room(straight)
    tick = drain.one_drain(engine, f"d-{tag}", False, pid, collections.Counter(), 400)
    out["drain200_ms"] = tick[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default="HEAD~1", help="git revision of the before lua/")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1_000, help="entries per batch (≤ 1,666)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "modes.json"))
    args = parser.parse_args()
    rounds: list[tuple[dict[str, float], dict[str, float]]] = []
    with drain.two_script_sets(args.before) as two:
        version, before, after = two.version, two.before, two.after
        for i in range(args.rounds):
            # alternate which side goes first, so neither always finds a warmer server
            sides = (before, after) if i % 2 == 0 else (after, before)
            got = {id(e): one_round(e, args.batch, f"{i}", two.pid) for e in sides}
            rounds.append((got[id(before)], got[id(after)]))
    result: dict[str, Any] = {"redis_version": version, "before": args.before}
    result |= {"rounds": args.rounds, "batch": args.batch}
    result["load_average"] = round(os.getloadavg()[0], 1)
    for name in rounds[0][0]:
        b = statistics.median(r[0][name] for r in rounds)
        a = statistics.median(r[1][name] for r in rounds)
        ratio = statistics.median(r[1][name] / r[0][name] for r in rounds)
        result[name] = {"before": round(b, 3), "after": round(a, 3), "ratio": round(ratio, 3)}
        print(f"{name}: before {b:.3f} -> after {a:.3f} (median ratio {ratio:.3f})")
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
