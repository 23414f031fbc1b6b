"""The drain of 200 as a cursor over the line (a prototype), beside today's drain, in one run.

Today's drain (lua/_drain.lua) reads every spot it deals and writes each one's admitted record,
its active slot, its line entry and its block count. The design tried here (bench/lua/: loaded
by this benchmark only, not by the product) touches no per-spot state when it admits: a tick
moves a cursor over the line (admitted up to order key K, kept in the room hash) and books the
move (its time, its expiry, how many it admitted); the per-spot admission is taken at the
visitor's next poll (bench/lua/take_cursor.lua). Variants, each its own room with the same line,
alternated in one process on one embedded Redis, the order rotated every round:

- ``current``: lua/tick.lua, today's drain;
- ``cursor``: bench/lua/tick_cursor.lua, the cursor moving over 200 admissible spots, reading
  each spot it passes (HMGET) for the skip rules (held, abandoned, revoked) so that passed-over
  spots do not spend the budget;
- ``cursor_lean``: the same, lighter per spot passed: only score, seen and the session's id are
  matched, the wait histogram is counted at the take (which rewrites the record anyway), and
  the revocations are read whole once a drain while they are few, not once per spot passed;
- ``cursor_bare``: the same cursor moving over 200 line entries without reading a spot (the
  design's floor; the skip rules cannot hold there).

Each figure is Redis's own time for the measured tick (``INFO commandstats``, EVALSHA) and the
server thread's CPU for it; ``*_take_added_*``: what taking one admission adds to the polls
(take_cursor.lua minus the same script stopping after the reads the poll makes anyway, over
every spot the cursor passed, divided by the 200 admitted), so the design's whole cost for 200
admissions is ``cursor + 200 * take``; ``*_waiting_poll_added_*``: what looking at the cursor
adds to the poll of a spot still waiting.

Run: ``python bench/drain_cursor.py [--rounds N] [--redis-server PATH] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
# bench/http.py would stand for the standard library's http: this folder goes last on the path.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import redis  # noqa: E402
from redis.commands.core import Script  # noqa: E402

import engine as engine_bench  # noqa: E402
from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.connection import lua_scripts  # noqa: E402

PROTOTYPE = ROOT / "bench" / "lua"
LINE = 400  # --line sets it
# the line: a drawn pre-opening pool, tickets taken after opening, or such tickets with every
# fourth session revoked (the skip rules at work: 200 admitted from the first ~267 passed)
CASES = ("pool", "tickets", "revoked")
VARIANTS = ("current", "cursor", "cursor_lean", "cursor_bare")
MODES = {"cursor": "read", "cursor_lean": "lean", "cursor_bare": "bare"}
TAKES = {"cursor": "take", "cursor_lean": "take_waits"}

NOTES = (
    "Redis's wall-clock figures (*_ms) move with the machine's load; the server thread's CPU "
    "(*_cpu_ms) far less: compare ratios within one run. In the recorded run the move with the "
    "skip rules read (cursor, cursor_lean) is near 1 ms on a line of tickets and above it on a "
    "drawn pool (its spots scattered through the spots hash) and with revocations; only the "
    "move without reads (cursor_bare) is well under 1 ms in every case, and it cannot keep the "
    "skip rules. What bounds the move: the tick's own work and the line's range (bare), then "
    "the HMGET of the spots passed and the matching of their records (skip_reads_*). The "
    "per-spot work does not go away: each take adds its writes to a poll (*_take_added_*), "
    "paid per call instead of in one batch, so the Redis work for 200 admissions "
    "(*_plus_200_takes_*) is larger than today's drain; the design shortens the script that "
    "holds Redis, not what admitting costs. cursor_lean's one read of the revocations per "
    "drain (while they are few) instead of one per spot passed would serve today's drain too "
    "(the revoked case)."
)

NOT_GUARANTEED = [
    "Spots filed behind the cursor are never admitted: an invitee's lane key (below every "
    "public key), a held spot a regrouping step puts back into the line, any key placed below "
    "K. The line is not append-only, so the design needs a second, small structure read first "
    "(today's per-spot drain) for whatever lands behind the cursor.",
    "Line positions and the block counts (lua/_blocks.lua) still include admitted-but-untaken "
    "entries: places, the snapshot's ranks and the far poll's estimates would count from the "
    "cursor, not from the line's head, and the sweep must drop entries behind K whose move "
    "lapsed.",
    "Per-spot deal numbers (room.dealt per admission) are not assigned: a take cannot derive "
    "its own from the move.",
    "The random mode's drain is not prototyped (it picks ranks, not a prefix).",
    "The skip rules are re-decided at the take from the move's time (abandoned: seen + "
    "abandonAfter <= the move's time; held: the score against the holdScore now): a revocation "
    "that lapsed between move and take, or a holdScore changed between them, makes the take "
    "disagree with the count the move spent; the budget is then off by those spots.",
    "Records not in today's waiting layout (older records) are passed over rather than read "
    "the long way.",
    "The moves' keys (ROOM:xmv, ROOM:xml) are derived from the room key in the script, not "
    "declared: same hash slot, but against the rule that scripts declare their keys.",
    "Capacity counts the active slots and the moves' untaken admissions, each lapsing with its "
    "move (a visitor who never polls frees its slot at the move's expiry; a spot covered by a "
    "lapsed move takes nothing, x:gone): capacity_lapse_check asserts it once a run, on one "
    "room. Not kept: the fail-open lease check of drain_budget; the active count the stats and "
    "the console read (ZCARD of the active set) leaves the untaken out; the untaken are freed "
    "only when a drain with budget runs. An admission taken late expires at the move's time "
    "plus the TTL (its TTL counts from the move).",
    "No engine test runs these scripts (the bench's asserts are their only checks): the "
    "product's drain is unchanged.",
]


def load(client: redis.Redis, name: str) -> Script:
    """Prototype operation ``name`` (bench/lua/, pieces from lua/) registered on ``client``."""
    read = lua_scripts._read

    def read_from(piece: str) -> str:
        path = PROTOTYPE / f"{piece}.lua"
        return (path if path.exists() else ROOT / "lua" / f"{piece}.lua").read_text("utf-8")

    lua_scripts._read = read_from
    try:
        return client.register_script(lua_scripts.operation.__wrapped__(name).source)
    finally:
        lua_scripts._read = read


def fill_sessions(engine: Engine, room: str, n: int) -> None:
    """``n`` spots, each with a session of its own, every fourth session then revoked."""
    script, keys = engine._scripts["enter"], engine.script_keys("enter", room)
    pipe = engine.redis.pipeline(transaction=False)
    for i in range(n):
        script(keys=keys, args=[f"v{i}", f"s{i}", 10, "", "", 0], client=pipe)
    pipe.execute()
    for i in range(3, n, 4):
        engine.revoke(room, jti=f"s{i}", life_ms=3_600_000)


def ready_room(engine: Engine, slug: str, case: str) -> str:
    """A room with a line of LINE spots whose next tick may admit 200 (drawn first: a pool)."""
    pool = case == "pool"
    config = engine_bench.ROOM_CONFIG | {"slug": slug, "ratePerMinute": 100_000}
    room = engine.create_room("bench", config)["id"]
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)
    engine.open(room, now + 1_000 if pool else now)
    if case == "revoked":
        fill_sessions(engine, room, LINE)
    else:
        engine_bench.fill(engine, room, LINE)
    engine.shift_clock(room, 1_500)
    if pool:  # today's tick finds the draw due and this process makes it (as drain_of_200)
        drawing = engine.tick(room)
        assert drawing.draw_due and drawing.dealt == 0, drawing
        engine.shift_clock(room, 1_000)
    return room


def measured(client: redis.Redis, pid: int, call: Any) -> tuple[float, float, Any]:
    """Redis time (ms) and server CPU (ms) of ``call()``'s scripts, and its result."""
    client.config_resetstat()
    cpu = engine_bench.on_cpu_ns(pid)
    result = call()
    cpu = engine_bench.on_cpu_ns(pid) - cpu
    usec, _ = engine_bench.evalsha_usec(client)
    return usec / 1000, cpu / 1e6, result


def commands_usec(client: redis.Redis) -> dict[str, float]:
    """Redis time (µs) by command since the last reset (Redis 7 counts a script's commands)."""
    return {
        name.removeprefix("cmdstat_"): stats["usec"]
        for name, stats in client.info("commandstats").items()
        if name not in ("cmdstat_config|resetstat", "cmdstat_info", "cmdstat_script|load")
    }


def take_cost(
    engine: Engine, take: Script, room: str, pid: int, mode: str
) -> tuple[float, float, float, float]:
    """What the take adds (µs: Redis time, then the server's CPU; take minus peek, pipelined, the
    same requests and replies each): per admission, over the polls of every spot the cursor
    passed (the refusals of those passed over included); per waiting poll, over up to 200 spots
    behind the cursor (each poll's look at the cursor, which this design adds)."""
    client, keys = engine.redis, engine.script_keys("poll", room)
    cursor = client.hget(keys[0], "x:cur")
    passed = client.zrangebyscore(keys[2], "-inf", cursor)
    behind = client.zrangebyscore(keys[2], f"({cursor}", "+inf", start=0, num=200)

    def run(vids: list[str], mode: str) -> list[int]:
        pipe = client.pipeline(transaction=False)
        for vid in vids:
            take(keys=keys, args=[vid, mode], client=pipe)
        return pipe.execute()

    # spots still waiting only (not those of revoked sessions, which a poll refuses)
    behind = [vid for vid, seen in zip(behind, run(behind, "peek"), strict=True) if seen == 0]
    peek_ms, peek_cpu, _ = measured(client, pid, lambda: run(behind, "peek"))
    wait_ms, wait_cpu, waiting = measured(client, pid, lambda: run(behind, mode))
    assert waiting == [0] * len(behind), collections.Counter(waiting)
    n = len(behind)
    per_wait = ((wait_ms - peek_ms) * 1000 / n, (wait_cpu - peek_cpu) * 1000 / n)
    peek_ms, peek_cpu, _ = measured(client, pid, lambda: run(passed, "peek"))
    take_ms, take_cpu, taken = measured(client, pid, lambda: run(passed, mode))
    assert taken.count(1) == 200, collections.Counter(taken)
    assert client.zcard(keys[3]) == 200  # the active set holds exactly the 200 taken
    assert int(client.hget(keys[0], "x:pend")) == 0
    per_take = ((take_ms - peek_ms) * 1000 / 200, (take_cpu - peek_cpu) * 1000 / 200)
    return (*per_take, *per_wait)


def check_capacity_and_lapse(engine: Engine, tick: Script, take: Script) -> dict[str, int]:
    """The prototype's capacity and expiry, checked once a run (asserts, figures returned):
    admissions the cursor gave and nobody took hold capacity until their move lapses, then
    free it; a spot covered by a lapsed move takes nothing, not even from a later move."""
    client = engine.redis
    config = engine_bench.ROOM_CONFIG | {
        "slug": "c-lapse-check",
        "ratePerMinute": 100_000,
        "capacity": 250,
        "admissionTtlSec": 60,
        "abandonAfterSec": 3_600,
    }
    room = engine.create_room("bench", config)["id"]
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)
    engine.open(room, now)
    engine_bench.fill(engine, room, LINE)
    engine.shift_clock(room, 1_500)
    keys, poll_keys = engine.script_keys("tick", room), engine.script_keys("poll", room)

    def move() -> int:
        return int(tick(keys=keys, args=[1000, "read"])[2])

    def pending() -> int:
        return int(client.hget(keys[0], "x:pend") or 0)

    first = move()
    assert first == 200 and pending() == 200
    engine.shift_clock(room, 1_000)
    second = move()  # capacity 250: 200 untaken still count
    assert second == 50 and pending() == 250, (second, pending())
    taken = [take(keys=poll_keys, args=[f"v{i}", "take"]) for i in range(50)]
    assert taken == [1] * 50 and pending() == 200 and client.zcard(keys[3]) == 50
    engine.shift_clock(room, 61_000)  # both moves and the 50 taken lapse
    third = move()
    rest = min(200, LINE - 250)
    assert third == rest and pending() == rest, (third, pending())  # the line's rest
    assert client.zcard(keys[3]) == 0
    late = take(keys=poll_keys, args=["v60", "take"])  # covered by the first move, never taken
    assert late == -1, late
    engine.delete_room(room)
    client.delete(*(engine.keys.room(room) + suffix for suffix in (":xmv", ":xml")))
    return {"first_move": first, "second_move_capacity_250": second, "after_lapse": third}


def one_round(
    engine: Engine, tick: Script, take: Script, r: int, case: str, pid: int, order: list[str]
) -> dict[str, Any]:
    client, figures = engine.redis, {}
    for variant in order:
        room = ready_room(engine, f"c-{variant.replace('_', '-')}-{case}-{r}", case)
        if variant == "current":
            ms, cpu, _ = measured(client, pid, lambda room=room: engine.tick(room))
            figures[f"{variant}_commands"] = commands_usec(client)
            assert engine.stats(room).dealt_total == 200
        else:
            keys = engine.script_keys("tick", room)
            ms, cpu, reply = measured(
                client,
                pid,
                lambda keys=keys, mode=MODES[variant]: tick(keys=keys, args=[1000, mode]),
            )
            figures[f"{variant}_commands"] = commands_usec(client)
            assert int(reply[2]) == 200, reply  # dealt
            assert client.zcard(keys[3]) == 0  # no active slot written by the move
            if variant in TAKES:
                figures[f"{variant}_take"] = take_cost(engine, take, room, pid, TAKES[variant])
        figures[variant] = (ms, cpu)
        engine.delete_room(room)
        client.delete(*(engine.keys.room(room) + suffix for suffix in (":xmv", ":xml")))
    return figures


def run_case(engine: Engine, tick: Script, take: Script, rounds: int, case: str, pid: int):
    """Medians over alternated rounds: each variant's ms and CPU, ratios to current per round."""
    ms: dict[str, list[float]] = {v: [] for v in VARIANTS}
    cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
    takes: dict[str, list[tuple[float, ...]]] = {v: [] for v in TAKES}
    commands: dict[str, collections.Counter] = {v: collections.Counter() for v in VARIANTS}
    one_round(engine, tick, take, rounds, case, pid, list(VARIANTS))  # loads the scripts
    k = len(VARIANTS)
    for r in range(rounds):
        order = list(VARIANTS[r % k :] + VARIANTS[: r % k])
        figures = one_round(engine, tick, take, r, case, pid, order)
        for v in VARIANTS:
            ms[v].append(figures[v][0])
            cpu[v].append(figures[v][1])
        for v in VARIANTS:
            commands[v].update(figures[f"{v}_commands"])
        for v in TAKES:
            takes[v].append(figures[f"{v}_take"])
    out: dict[str, Any] = {}
    for v in VARIANTS:
        out[f"{v}_ms_median"] = round(statistics.median(ms[v]), 3)
        out[f"{v}_cpu_ms_median"] = round(statistics.median(cpu[v]), 3)
    for v in VARIANTS[1:]:
        ratios = [a / b for a, b in zip(ms[v], ms["current"], strict=True)]
        out[f"{v}_ratio_median"] = round(statistics.median(ratios), 3)
    for v in VARIANTS:
        out[f"{v}_commands_ms"] = {
            name: round(usec / rounds / 1000, 3) for name, usec in commands[v].most_common(8)
        }
    # what bounds the move: the tick's own work and the line's range (bare), then the per-spot
    # reads and matching the skip rules need (lean minus bare)
    out["skip_reads_ms"] = round(out["cursor_lean_ms_median"] - out["cursor_bare_ms_median"], 3)
    out["skip_reads_cpu_ms"] = round(
        out["cursor_lean_cpu_ms_median"] - out["cursor_bare_cpu_ms_median"], 3
    )
    for v in TAKES:
        take_us = statistics.median(t[0] for t in takes[v])
        take_cpu_us = statistics.median(t[1] for t in takes[v])
        out[f"{v}_take_added_us_median"] = round(take_us, 2)
        out[f"{v}_take_added_cpu_us_median"] = round(take_cpu_us, 2)
        out[f"{v}_waiting_poll_added_us_median"] = round(
            statistics.median(t[2] for t in takes[v]), 2
        )
        out[f"{v}_waiting_poll_added_cpu_us_median"] = round(
            statistics.median(t[3] for t in takes[v]), 2
        )
        # the design's whole Redis work for 200 admissions: the move, then the passed spots' takes
        out[f"{v}_plus_200_takes_ms"] = round(out[f"{v}_ms_median"] + 200 * take_us / 1000, 3)
        out[f"{v}_plus_200_takes_cpu_ms"] = round(
            out[f"{v}_cpu_ms_median"] + 200 * take_cpu_us / 1000, 3
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "drain_cursor.json"))
    parser.add_argument("--line", type=int, default=400, help="spots in each room's line")
    args = parser.parse_args()
    global LINE
    LINE = args.line
    os.environ["ANTEROOM_REDIS_SERVER"] = args.redis_server
    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(data, port=0).start()
        try:
            client = redis.Redis.from_url(server.url, decode_responses=True)
            pid = server.process.pid  # type: ignore[union-attr]
            engine = Engine(client, prefix="cur:")
            tick, take = load(client, "tick_cursor"), load(client, "take_cursor")
            result: dict[str, Any] = {
                "redis_version": client.info("server")["redis_version"],
                "rounds": args.rounds,
                "line": LINE,
                "load_average": round(os.getloadavg()[0], 1),
            }
            for case in CASES:
                result[case] = run_case(engine, tick, take, args.rounds, case, pid)
            result["capacity_lapse_check"] = check_capacity_and_lapse(engine, tick, take)
            result["load_average_after"] = round(os.getloadavg()[0], 1)
        finally:
            server.stop()
    result["conditions"] = (
        f"one embedded Redis, a room per variant a round with the same line of {LINE} (a drawn "
        "pre-opening pool; tickets taken after opening; such tickets, each with its own "
        "session, every fourth session revoked), the tick admitting 200, variants alternated "
        "in a rotated order; in pool and tickets every spot is fresh (no skip taken)"
    )
    result["notes"] = NOTES
    result["not_guaranteed"] = NOT_GUARANTEED
    for case in CASES:
        f = result[case]
        print(f"{case:<8} current {f['current_ms_median']} ms (CPU {f['current_cpu_ms_median']})")
        for v in VARIANTS[1:]:
            line = (
                f"  {v:<12} {f[f'{v}_ms_median']} ms (ratio {f[f'{v}_ratio_median']}), CPU "
                f"{f[f'{v}_cpu_ms_median']} ms"
            )
            if v in TAKES:
                line += (
                    f"; a take adds {f[f'{v}_take_added_us_median']} µs a poll (CPU "
                    f"{f[f'{v}_take_added_cpu_us_median']}; a waiting poll "
                    f"{f[f'{v}_waiting_poll_added_cpu_us_median']}): move + 200 takes "
                    f"{f[f'{v}_plus_200_takes_ms']} ms (CPU {f[f'{v}_plus_200_takes_cpu_ms']})"
                )
            print(line)
    Path(args.out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
