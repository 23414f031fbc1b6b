"""The drain of 200, side by side: lua/ at a git revision (before) against the worktree's lua/
(after), alternated in one process on one Redis, so both meet the same load.

Each round runs bench/engine.py's case (the service's tick admitting 200 from a line of 400,
a pre-opening pool or tickets taken after opening) once with each script set; the figure is
Redis's own time for the tick (``INFO commandstats``). Rounds alternate which set goes first.
On Redis 7 the commands a script calls are counted too: ``--breakdown`` prints the time per
command inside the after set's drain, the rest being the script's own Lua.

Run: ``python bench/drain.py [--before REV] [--redis-server PATH] [--rounds N] [--out FILE]``
(``--out`` merges ``drain200_side_by_side`` into that JSON, by default
bench/results/engine.json; ``--no-out`` only prints).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
# bench/http.py would stand for the standard library's http (urllib.request imports it): this
# folder goes after the standard library on the path, where sibling benchmarks are still found.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import redis  # noqa: E402

import engine as engine_bench  # noqa: E402
from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.connection import lua_scripts  # noqa: E402


def engine_with_lua(client: redis.Redis, lua_dir: Path, prefix: str) -> Engine:
    """An engine whose scripts are assembled from ``lua_dir`` instead of the package's lua/."""
    read = lua_scripts._read

    def read_from(name: str) -> str:
        # a script the revision did not have yet (the benchmarks never call it on that side)
        path = lua_dir / f"{name}.lua"
        return (path if path.exists() else ROOT / "lua" / f"{name}.lua").read_text("utf-8")

    lua_scripts._read = read_from
    lua_scripts.operation.cache_clear()
    try:
        return Engine(client, prefix=prefix)
    finally:
        lua_scripts._read = read
        lua_scripts.operation.cache_clear()


@dataclass
class TwoScriptSets:
    """One embedded Redis holding two engines: ``before`` on ``lua/`` at a revision, ``after`` on
    this tree's, each under its own key prefix."""

    client: redis.Redis
    pid: int  # the Redis server's, whose CPU time the benchmarks read
    version: str
    before: Engine
    after: Engine


@contextlib.contextmanager
def two_script_sets(revision: str) -> Iterator[TwoScriptSets]:
    """Start an embedded Redis with the engines of ``revision``'s Lua and of this tree's."""
    with tempfile.TemporaryDirectory() as data, tempfile.TemporaryDirectory() as old:
        server = EmbeddedRedis(data, port=0).start()
        try:
            client = redis.Redis.from_url(server.url, decode_responses=True)
            yield TwoScriptSets(
                client,
                server.process.pid,  # type: ignore[union-attr]
                client.info("server")["redis_version"],
                engine_with_lua(client, lua_at(revision, Path(old)), "before:"),
                engine_with_lua(client, ROOT / "lua", "after:"),
            )
        finally:
            server.stop()


def lua_at(revision: str, into: Path) -> Path:
    """lua/ of ``revision`` written into ``into``."""
    names = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{revision}:lua"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in names:
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{revision}:lua/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (into / name).write_text(text, encoding="utf-8")
    return into


on_cpu_ns = engine_bench.on_cpu_ns


def one_drain(
    engine: Engine, slug: str, pool: bool, pid: int, stats: collections.Counter, line: int
) -> tuple[float, float]:
    """Redis time (ms) of one tick admitting 200 from a line of 400, and the server's CPU time
    (ms) for that call (request, script, reply, its AOF write); adds its commands to ``stats``
    (usec per command name)."""
    client = engine.redis
    config = engine_bench.ROOM_CONFIG | {"slug": slug, "ratePerMinute": 100_000}
    room = engine.create_room("bench", config)["id"]
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)
    engine.open(room, now + 1_000 if pool else now)
    engine_bench.fill(engine, room, line)
    engine.shift_clock(room, 1_500)
    if pool:  # since draws are checkable, nobody leaves a pool before its draw is made
        engine.draw(room)
    client.config_resetstat()
    cpu = on_cpu_ns(pid)
    engine.tick(room)
    cpu = on_cpu_ns(pid) - cpu
    usec, _ = engine_bench.evalsha_usec(client)
    for name, figures in client.info("commandstats").items():
        stats[name] += figures["usec"]
    assert engine.stats(room).dealt_total == 200
    engine.delete_room(room)
    return usec / 1000, cpu / 1e6


def side_by_side(
    before: Engine, after: Engine, rounds: int, pool: bool, pid: int, line: int = 400
) -> dict[str, Any]:
    """Medians of alternated rounds, and the ratio after / before of each round."""
    times: dict[str, list[float]] = {"before": [], "after": []}
    cpus: dict[str, list[float]] = {"before": [], "after": []}
    stats: collections.Counter = collections.Counter()
    ignored: collections.Counter = collections.Counter()
    for r in range(rounds):
        order = [("before", before), ("after", after)]
        for label, engine in order if r % 2 == 0 else order[::-1]:
            counter = stats if label == "after" else ignored
            took, cpu = one_drain(engine, f"d-{label}-{r}", pool, pid, counter, line)
            times[label].append(took)
            cpus[label].append(cpu)
    ratios = [a / b for a, b in zip(times["after"], times["before"], strict=True)]
    cpu_ratios = [a / b for a, b in zip(cpus["after"], cpus["before"], strict=True)]
    return {
        "before_ms_median": round(statistics.median(times["before"]), 3),
        "after_ms_median": round(statistics.median(times["after"]), 3),
        "ratio_median": round(statistics.median(ratios), 3),
        "before_cpu_ms_median": round(statistics.median(cpus["before"]), 3),
        "after_cpu_ms_median": round(statistics.median(cpus["after"]), 3),
        "cpu_ratio_median": round(statistics.median(cpu_ratios), 3),
        "after_commands_ms": {
            name.removeprefix("cmdstat_"): round(usec / rounds / 1000, 3)
            for name, usec in stats.most_common()
            if name not in ("cmdstat_config|resetstat", "cmdstat_script|load")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default="HEAD", help="git revision of the before lua/")
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "engine.json"))
    parser.add_argument("--no-out", action="store_true")
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    os.environ["ANTEROOM_REDIS_SERVER"] = args.redis_server
    with two_script_sets(args.before) as two:
        version = two.version
        result: dict[str, Any] = {"redis_version": version, "before": args.before}
        result["rounds"] = args.rounds
        result["load_average"] = round(os.getloadavg()[0], 1)
        result["pool"] = side_by_side(two.before, two.after, args.rounds, pool=True, pid=two.pid)
        result["tickets"] = side_by_side(two.before, two.after, args.rounds, False, two.pid)
        result["load_average_after"] = round(os.getloadavg()[0], 1)
    for case in ("pool", "tickets"):
        figures = result[case]
        print(
            f"{case:<8} before {figures['before_ms_median']} ms -> after "
            f"{figures['after_ms_median']} ms (ratio {figures['ratio_median']}); CPU "
            f"{figures['before_cpu_ms_median']} -> {figures['after_cpu_ms_median']} ms (ratio "
            f"{figures['cpu_ratio_median']}), Redis {version}"
        )
        if args.breakdown:
            for name, ms in figures["after_commands_ms"].items():
                print(f"    {name:<22} {ms} ms")
    if not args.no_out:
        out = Path(args.out)
        results = json.loads(out.read_text()) if out.exists() else {}
        runs = results.get("drain200_side_by_side", {})
        if "how" in runs:  # an earlier harness's figures, of other revisions
            runs = {}
        runs[f"redis{version.split('.')[0]}"] = result
        results["drain200_side_by_side"] = runs
        out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
