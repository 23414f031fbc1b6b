"""Queue-engine benchmark: Redis's cost of each thing a line does, at 1k/100k/1M waiting spots,
beside the floor of what a poll must do, and a model of a 1M line from this run's figures.

A poll is answered from one of two sources. A far spot whose ticket carries its order key is
answered inside the web process from its snapshot of the room (queue/line/far_poll.py,
queue/line/room_snapshot.py): Redis pays only the snapshot read (lua/snapshot.lua, once a second per
room per process) and the batched last-seen bookings (lua/book_seen_many.lua, one call per room
per process per second). Every other poll (the front and the exact band behind it, what the
snapshot cannot decide, a ticket without an order key) is the full script, lua/poll.lua.

Per-call time is Redis's own figure: ``CONFIG RESETSTAT``, a batch of EVALSHA calls, then
``INFO commandstats`` (usec / calls) — one figure per batch; median and p99 are over batches.

Per line size (keys are by size):

- ``far_poll_snapshot_us``: Redis time per far poll as the service answers it =
  ``snapshot_us_per_poll`` (one snapshot read a second, amortised over the far polls one of
  ``MODEL_PROCESSES`` processes answers in that second when the line polls as told at 100
  admissions a second) + ``booking_us_per_poll`` (book_seen_many's cost per booked spot times
  the share of far polls that book when visitors poll at their own cadence). Measured on a line
  of tickets taken after opening, the room's clock pinned, one process answering its share for
  ten seconds of a stand-in monotonic clock (``snapshot_far_poll`` holds the parts). Target: ≤ 2.
- ``full_poll_us`` (and ``_p99``): poll.lua on a deep spot (a ticket without an order key, or
  what the snapshot hands on); ``near_poll_us``: poll.lua in the first ``NEAR_HEAD`` places,
  the near poll's one round trip. ``near_poll_wall_us`` / ``ping_wall_us``: the near poll's
  whole call from this process (send, script, read, decode) beside a plain round trip (PING),
  interleaved; their ratio is the engine's side of the near poll vs the plain endpoint (the
  target, ≥ 0.8x the plain endpoint's requests a second, is over HTTP: bench/http.py).
- ``entry_us``: lua/enter.lua taking a new spot at the back of the line (Engine.enter).
- ``floor_us``: one script doing what any poll must: HGET of the room, ZRANK of the visitor in
  a line of the same length (random order, as the pre-queue's lottery order is) and HSET of its
  last-seen time; ``full_poll_ratio_to_floor``: the figure to compare between machines.

Lines for the full poll, the near poll, entry and the floor are filled as a pre-queue (opensAt
a day ahead, rate 1/min) with the room's clock pinned, so the drain stays idle and no sweep pass
or booking falls due while measuring.

Drain of 200 (``drain200_ms_median``, target ≤ 1 ms): the service's tick (lua/tick.lua)
admitting 200 from a line of 400, no sweep pass due. The line is a pre-opening pool (opensAt
1 s ahead, the clock moved 1.5 s): the first tick finds its draw due and the service makes it
(queue/draw/room_draw.py); the tick a second later, the one measured, drains 200 of the drawn pool.
``drain200_tickets_ms_median``: the same from a line of tickets taken after opening.

The 1M model (``model_1m``): a line of 1,000,000 at 100 admissions a second polling as told
(queue/line/poll_cadence.py, the default budget), its polls split at ``SNAPSHOT_FROM`` places:
behind it the snapshot answers (snapshot reads: replica-able, one a second per process; the
bookings: primary), ahead of it poll.lua does (primary, at the near poll's cost); plus the
drain, the idle ticks, one entry per admission (a line that stays a million long) and the sweep's
pass over every spot once a minute (``sweep_cores``, from ``sweep_pass``).

Side by side (``--before REV``): an engine whose scripts are lua/ at a git revision answers the
same far polls on the same line, a second each in turn with this tree's (``*_before`` keys and
``snapshot_far_poll.<size>.before``), and sweeps a line of its own (``sweep_pass``).

Sweep pass (``sweep_pass``): Redis time per spot of a whole sweep pass (100 spots a step, as the
service's) over 100,000 far spots whose last-seen was booked by far polls (book_seen_many) and
whose records' own `seen` has lapsed: the pass every line pays once a minute, which keeps them.

Scripts' fixed cost (``script_overhead``, embedded Redis only): Redis CPU per call (the server
thread's schedstat, which other processes' load moves far less than Redis's wall-clock figures)
of the near poll beside PING, a bare EVALSHA with the poll's keys and arguments, and poll.lua's
pieces alone (their local functions and tables are made again on every call):
``pieces_cpu_us`` is what carrying them costs each call.

AOF bytes per poll (``aof_bytes_per_full_poll``): ``aof_current_size`` before and after every
spot of a 1,000-spot pre-queue polls every 15 s for ten minutes of room clock; a line that
short is all within the exact band, so these are full polls (a far poll writes only its share
of a booking).
Run: ``python bench/engine.py [--redis-url URL] [--sizes 1000,100000,1000000] [--out FILE]
[--before REV] [--only far]``.
Writes ``bench/results/engine.json`` by default (keys written by bench/drain.py are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
# bench/http.py would stand for the standard library's http (urllib.request imports it): this
# folder goes after the standard library on the path, where sibling benchmarks are still found.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.connection import lua_scripts as scripts  # noqa: E402
from anteroom.queue.line import far_poll  # noqa: E402
from anteroom.queue.line.line_blocks import TICKET_BLOCK  # noqa: E402
from anteroom.queue.line.poll_cadence import DEFAULT_POLL_BUDGET, poll_after  # noqa: E402
from anteroom.sdk.tokens import TicketClaims  # noqa: E402

SIZES = (1_000, 100_000, 1_000_000)
NEAR_HEAD = 100  # the near poll's sample: the first places of the line
MODEL_LINE = 1_000_000
MODEL_PACE = 100  # admissions a second in the model (and in the snapshot's room)
MODEL_PROCESSES = 4  # web processes sharing a room's far polls (each reads its own snapshot)
# Where the snapshot starts answering: far_poll.py hands on a spot with fewer than EXACT_WITHIN
# + the admissions it may not have seen ahead even at the least; the least counts whole blocks
# of TICKET_BLOCK tickets ahead, half a block short of the place on average.
SNAPSHOT_FROM = far_poll.EXACT_WITHIN + far_poll.MAX_ADMIT + 2 * MODEL_PACE + TICKET_BLOCK // 2
FAR_FROM_TICKET = 2_001  # a sampled far spot is surely past the exact band
TARGETS = {"far_poll_snapshot_us": 2.0, "drain200_ms_median": 1.0, "near_vs_plain": 0.8}
FLOOR_SCRIPT = """
-- The floor of a poll. KEYS: room hash, line sorted set, last-seen hash. ARGV: vid, now (ms).
local status = redis.call('HGET', KEYS[1], 'st')
local rank = redis.call('ZRANK', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
return {status, rank}
"""
ROOM_CONFIG = {"name": "b", "redirectUrl": "https://x.example/", "maxWaiting": 10_000_000}
# Keys of engine.json this script writes; others (bench/drain.py's) are kept as they are.
OTHER_SCRIPTS_KEYS = ("drain200_side_by_side", "drain200_breakdown")


def polls_by_source(line: int, pace: float = MODEL_PACE) -> tuple[float, float]:
    """Polls a second of ``line`` spots polling as told: (answered by poll.lua, by snapshot)."""
    near = far = 0.0
    position = 1
    while position <= line:  # buckets of 1 %, as poll_cadence.polls_per_second
        last = min(line, position + max(1, position // 100) - 1)
        middle = (position + last) // 2
        rate = (last - position + 1) * 1000 / poll_after(middle, pace, 0, line, DEFAULT_POLL_BUDGET)
        if middle < SNAPSHOT_FROM:
            near += rate
        else:
            far += rate
        position = last + 1
    return near, far


def far_ticket(room: str, ticket: int, claims: dict[str, Any]) -> TicketClaims:
    """A far spot's ticket claims as the views pass them: ``claims`` with the spot's own."""
    spot = {"qr": room, "vid": f"v{ticket - 1}", "t": ticket, "g": 1, "env": "bench"}
    return TicketClaims.from_wire(spot | claims)


def evalsha_usec(client: redis.Redis) -> tuple[float, int]:
    """Time and calls of every script run since the last reset (EVALSHA_RO too, on Redis 7)."""
    commands = client.info("commandstats")
    usec = calls = 0
    for name in ("cmdstat_evalsha", "cmdstat_evalsha_ro"):
        usec += float(commands.get(name, {}).get("usec", 0))
        calls += int(commands.get(name, {}).get("calls", 0))
    return usec, calls


def fill(engine: Engine, room: str, n: int) -> None:
    script = engine._scripts["enter"]
    keys = engine.script_keys("enter", room)
    for start in range(0, n, 5_000):
        pipe = engine.redis.pipeline(transaction=False)
        for i in range(start, min(n, start + 5_000)):
            script(keys=keys, args=[f"v{i}", "s", 10, "", "", 0], client=pipe)
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
        out.append(usec / per)
    return out


def wall_costs(call: Any, n: int, batches: int, per: int) -> list[float]:
    """µs of wall time per call from this process, one figure per batch."""
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per):
            call(random.randrange(n))
        out.append((time.perf_counter() - t0) / per * 1e6)
    return out


def p99(costs: list[float]) -> float:
    ordered = sorted(costs)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def deep_sample(engine: Engine, room: str, n: int, size: int = 2_000) -> list[tuple[str, int]]:
    """(vid, ticket) of ``size`` distinct random spots ranked past the near-head band."""
    line = engine.keys.room_keys(room)["line"]
    ranks = random.sample(range(NEAR_HEAD, n), min(size, n - NEAR_HEAD))
    pipe = engine.redis.pipeline(transaction=False)
    for rank in ranks:
        pipe.zrange(line, rank, rank)
    vids = [found[0] for found in pipe.execute()]
    return [(vid, int(vid[1:]) + 1) for vid in vids]


def head_sample(engine: Engine, room: str) -> list[tuple[str, int]]:
    """(vid, ticket) of the spots in the near-head band."""
    vids = engine.redis.zrange(engine.keys.room_keys(room)["line"], 0, NEAR_HEAD - 1)
    return [(vid, int(vid[1:]) + 1) for vid in vids]


def scripts_and_floor(engine: Engine, n: int, results: dict[str, Any]) -> float:
    """Full poll, near poll, entry and floor costs at ``n`` spots, interleaved batch by batch;
    engine bytes per spot."""
    client = engine.redis
    config = ROOM_CONFIG | {"slug": f"line-{n}", "ratePerMinute": 1}
    room = engine.create_room("bench", config)["id"]
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)  # pinned: nothing falls due while measuring
    engine.open(room, now + 86_400_000)
    before = int(client.info("memory")["used_memory"])
    t0 = time.monotonic()
    fill(engine, room, n)
    filled = time.monotonic() - t0
    engine_bytes = (int(client.info("memory")["used_memory"]) - before) / n
    while not engine.sweep(room, 10_000)[1]:  # the pass the first entry began, finished
        pass
    before = int(client.info("memory")["used_memory"])
    fill_floor(client, n)
    floor_bytes = (int(client.info("memory")["used_memory"]) - before) / n
    floor = client.register_script(FLOOR_SCRIPT)
    keys = floor_keys(n)
    deep, head = deep_sample(engine, room, n), head_sample(engine, room)
    entered = [0]

    def full(i: int) -> None:
        vid, ticket = deep[i]
        engine.poll(room, vid, ticket, 1)  # no order key carried: the full poll

    def near(i: int) -> None:
        vid, ticket = head[i]
        engine.poll(room, vid, ticket, 1, near_head=True)

    def entry(_: int) -> None:
        entered[0] += 1
        engine.enter(room, f"new{entered[0]}", "s", 10)

    def floor_poll(i: int) -> None:
        floor(keys=keys, args=[f"v{i}", int(time.time() * 1000)])

    def ping(_: int) -> None:
        client.ping()

    fulls: list[float] = []
    nears: list[float] = []
    entries: list[float] = []
    floors: list[float] = []
    near_walls: list[float] = []
    ping_walls: list[float] = []
    for _ in range(10):  # interleaved, so all see the same load on a shared machine
        fulls += batch_costs(client, full, len(deep), 10, 20)
        floors += batch_costs(client, floor_poll, n, 10, 20)
        nears += batch_costs(client, near, len(head), 10, 20)
        entries += batch_costs(client, entry, 1, 5, 20)
        near_walls += wall_costs(near, len(head), 5, 20)
        ping_walls += wall_costs(ping, 1, 5, 20)
    key = str(n)
    full_us, floor_us = statistics.median(fulls), statistics.median(floors)
    near_wall, ping_wall = statistics.median(near_walls), statistics.median(ping_walls)
    results["full_poll_us"][key] = round(full_us, 2)
    results["full_poll_us_p99"][key] = round(p99(fulls), 2)
    results["near_poll_us"][key] = round(statistics.median(nears), 2)
    results["near_poll_wall_us"][key] = round(near_wall, 1)
    results["ping_wall_us"][key] = round(ping_wall, 1)
    results["near_poll_calls_vs_ping"][key] = round(ping_wall / near_wall, 2)
    results["entry_us"][key] = round(statistics.median(entries), 2)
    results["floor_us"][key] = round(floor_us, 2)
    results["full_poll_ratio_to_floor"][key] = round(full_us / floor_us, 2)
    results["floor_bytes_per_spot"][key] = round(floor_bytes, 1)
    print(
        f"{n:>9} spots: filled in {filled:.1f}s; full poll {full_us:.1f} µs (p99 "
        f"{p99(fulls):.1f}), near poll {results['near_poll_us'][key]}, entry "
        f"{results['entry_us'][key]}; floor {floor_us:.1f} µs, full poll / floor "
        f"{full_us / floor_us:.2f}; near poll call {near_wall:.0f} µs wall vs PING "
        f"{ping_wall:.0f} ({ping_wall / near_wall:.2f}x the plain round trip's rate); "
        f"{engine_bytes:.0f} bytes per spot (floor {floor_bytes:.0f})"
    )
    engine.delete_room(room)
    client.delete(*keys)
    return engine_bytes


def drain_of_200(engine: Engine, pool: bool = True) -> tuple[float, float]:
    """Median Redis time (ms) of one tick that admits 200 from a line of 400, and of a tick
    that finds nothing to do (µs). ``pool``: the line is a pre-opening pool, drawn first (drawn
    order: its 200 first spread over the pool's blocks of lua/_blocks.lua as the lottery's
    were); else tickets taken after opening."""
    client = engine.redis
    drains, idle = [], []
    for t in range(20):
        config = ROOM_CONFIG | {"slug": f"drain-{t}", "ratePerMinute": 100_000}
        room = engine.create_room("bench", config)["id"]
        now = engine.stats(room).now_ms
        engine.set_clock(room, now)
        engine.open(room, now + 1_000 if pool else now)
        fill(engine, room, 400)
        engine.shift_clock(room, 1_500)
        if pool:
            # The pool is drawn by the service (queue/draw/room_draw.py), not by the tick: the first
            # tick past opensAt finds the draw due, admits nobody, and this process makes the
            # draw; the tick of the next second drains the drawn pool, the one measured.
            drawing = engine.tick(room)
            assert drawing.draw_due and drawing.dealt == 0, drawing
            assert len(engine.drawn_entrants(room)) == 400
            engine.shift_clock(room, 1_000)
        client.config_resetstat()
        engine.tick(room)
        usec, _ = evalsha_usec(client)
        assert engine.stats(room).dealt_total == 200
        drains.append(usec / 1000)
        client.config_resetstat()
        engine.tick(room)  # within the same second: read one field, return
        usec, _ = evalsha_usec(client)
        idle.append(usec)
        engine.delete_room(room)
    return statistics.median(drains), statistics.median(idle)


def bookings_at_cadence(snapshot: Any, now: int, n: int, polls: int = 12) -> float:
    """Share of far polls that book last-seen when visitors poll exactly as told.

    A sample of tickets across the line each polls ``polls`` times at its own ``pollAfterMs``
    through far_poll.answer_far (pure: no Redis), the ticket of each answer carried to the next.
    """
    booked = answered = 0
    for ticket in range(FAR_FROM_TICKET + 7, n + 1, max(1, (n - FAR_FROM_TICKET) // 200)):
        claims = {"qj": "s", "qs": 10, "qk": 2**52 + ticket, "qu": now + 1}
        clock = now
        for _ in range(polls):
            found = far_poll.answer_far(
                snapshot, clock, f"v{ticket - 1}", ticket, 1, far_ticket("r", ticket, claims)
            )
            assert found is not None
            answer, book = found
            booked += book > 0
            answered += 1
            claims = claims | {"qk": answer.order_key, "qu": answer.kept_until_ms}
            clock += answer.poll_after_ms
    return booked / answered


def far_poll_costs(
    engine: Engine, room: str, n: int, now: int, polls_per_second: int, seconds: int,
    ticks: list[float],
) -> dict[str, Any]:  # fmt: skip
    """One engine's far polls for ``seconds`` of the stand-in clock (see snapshot_far_polls):
    Redis time of its snapshot reads and booking calls, timed apart."""
    client = engine.redis
    engine.snapshots.clock = lambda: ticks[0]
    engine.bookings.clock = lambda: ticks[0]
    engine.snapshots.forget()
    score_claims = {"qj": "s", "qs": 10}
    # half the tickets say their spot is kept long enough already, half that it is due
    kept = {0: now + 10_000_000, 1: now + 1}
    split = {"snapshot": [0.0, 0], "booking": [0.0, 0], "booked": [0.0, 0]}
    read, run = engine.snapshots.read, engine.bookings.run

    def timed(kind: str, call: Any) -> Any:
        def wrapper(room_id: str, args: Any) -> Any:
            before, _ = evalsha_usec(client)
            reply = call(room_id, args)
            after, _ = evalsha_usec(client)
            split[kind][0] += after - before
            split[kind][1] += 1
            if kind == "booking":
                split["booked"][1] += (len(args) - 1) // 3
            return reply

        return wrapper

    engine.snapshots.read = timed("snapshot", read)
    engine.bookings.run = timed("booking", run)
    engine.snapshots.reads = engine.bookings.calls = 0
    polls = 0
    start = ticks[0]
    for second in range(seconds):
        for i in range(polls_per_second):
            ticks[0] = start + second + i / polls_per_second
            ticket = random.randrange(FAR_FROM_TICKET, n + 1)
            claims = score_claims | {"qk": 2**52 + ticket, "qu": kept[i % 2]}
            answer = engine.poll(
                room, f"v{ticket - 1}", ticket, 1, "s", carried=far_ticket(room, ticket, claims)
            )
            assert answer.position is not None and answer.position > 1_000
            polls += 1
        engine.flush_bookings()
    ticks[0] = start + seconds
    engine.snapshots.read, engine.bookings.run = read, run
    assert engine.snapshots.reads == seconds, engine.snapshots.reads  # all from the snapshot
    return {
        "polls": polls,
        "snapshot_read_us": split["snapshot"][0] / max(1, split["snapshot"][1]),
        "booking_call_us": split["booking"][0] / max(1, split["booking"][1]),
        "booking_us_per_booked_spot": split["booking"][0] / max(1, split["booked"][1]),
        "snapshot_reads": engine.snapshots.reads,
        "booking_calls": engine.bookings.calls,
        "booked_spots": split["booked"][1],
    }


def snapshot_far_polls(
    engine: Engine, n: int, seconds: int = 10, before: Engine | None = None
) -> dict[str, Any]:
    """Redis time per far poll as the service answers it (far_poll.py), amortised.

    A line of ``n`` spots after opening (ticket blocks) at ``MODEL_PACE`` admissions a second;
    one process answers its share (1 / ``MODEL_PROCESSES``) of the far polls the line makes
    polling as told, at random depths past the exact band, for ``seconds`` of a stand-in
    monotonic clock: it reads the room's snapshot once a second and flushes its bookings once a
    second in one book_seen_many call. Half the polls carry a ticket whose spot is due a booking
    (to measure a booked spot's cost); each snapshot read and booking call is timed apart (INFO
    commandstats around it). At the visitors' own cadence the share of far polls that book is
    ``booked_share_at_cadence``; the figure per poll is then the snapshot read over the polls
    answered in its second + that share times the cost per booked spot. Side by side: the same
    polls through the full poll (``full_poll_us``: tickets without an order key), and with
    ``before`` (an engine on an older lua/, the same line) the same far polls through its
    scripts, a second each in turn (``before``: its figures). Also the position error: shown
    minus exact rank (ZRANK + 1) over a sample, after 10% of the line, at random, left.
    """
    client = engine.redis
    config = ROOM_CONFIG | {
        "slug": f"snap-{n}",
        "ratePerMinute": MODEL_PACE * 60,
        "abandonAfterSec": 300,
    }
    polls_per_second = max(1, round(polls_by_source(n)[1] / MODEL_PROCESSES))
    room = engine.create_room("bench", config)["id"]
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)  # pinned: the line stands still while measured
    engine.open(room)
    fill(engine, room, n)
    sides = {"after": engine} | ({"before": before} if before is not None else {})
    parts: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    clocks = {side: [0.0] for side in sides}  # each engine's own stand-in clock
    for second in range(seconds):  # a second each in turn, the first alternating
        order = list(sides) if second % 2 == 0 else list(reversed(sides))
        for side in order:
            parts[side].append(
                far_poll_costs(sides[side], room, n, now, polls_per_second, 1, clocks[side])
            )
    ticks = clocks["after"]
    share = bookings_at_cadence(engine.snapshots.get(room), now, n)

    def summed(side: str) -> dict[str, Any]:
        runs = parts[side]
        polls = sum(r["polls"] for r in runs)
        reads = sum(r["snapshot_reads"] for r in runs)
        calls = sum(r["booking_calls"] for r in runs)
        booked = sum(r["booked_spots"] for r in runs)
        read_us = sum(r["snapshot_read_us"] * r["snapshot_reads"] for r in runs) / max(1, reads)
        call_us = sum(r["booking_call_us"] * r["booking_calls"] for r in runs) / max(1, calls)
        per_booked = call_us * calls / max(1, booked)
        snapshot_us, booking_us = read_us / polls_per_second, share * per_booked
        return {
            "far_poll_snapshot_us": round(snapshot_us + booking_us, 3),
            "snapshot_us_per_poll": round(snapshot_us, 3),
            "booking_us_per_poll": round(booking_us, 3),
            "snapshot_read_us": round(read_us, 1),
            "booking_call_us": round(call_us, 1),
            "booking_us_per_booked_spot": round(per_booked, 3),
            "polls": polls,
            "snapshot_reads": reads,
            "booking_calls": calls,
            "booked_spots": booked,
        }

    after = summed("after")
    client.config_resetstat()
    for _ in range(after["polls"]):
        ticket = random.randrange(FAR_FROM_TICKET, n + 1)
        engine.poll(room, f"v{ticket - 1}", ticket, 1, "s")
    full_usec, _ = evalsha_usec(client)
    # position error after random leavers
    score_claims = {"qj": "s", "qs": 10}
    leavers = random.sample(range(1, n + 1), n // 10)
    pipe = client.pipeline(transaction=False)
    script, keys = engine._scripts["leave"], engine.script_keys("leave", room)
    for ticket in leavers:
        script(keys=keys, args=[f"v{ticket - 1}", ticket, 1], client=pipe)
    pipe.execute()
    engine.snapshots.forget()
    ticks[0] += 2
    gone = set(leavers)
    far_tickets = range(FAR_FROM_TICKET, n + 1)
    sample = [t for t in random.sample(far_tickets, min(4_000, len(far_tickets))) if t not in gone]
    sample = sample[:2_000]
    line = engine.keys.room_keys(room)["line"]
    pipe = client.pipeline(transaction=False)
    for ticket in sample:
        pipe.zrank(line, f"v{ticket - 1}")
    ranks = pipe.execute()
    errors = []
    for ticket, rank in zip(sample, ranks, strict=True):
        claims = score_claims | {"qk": 2**52 + ticket, "qu": now + 10_000_000}
        answer = engine.poll(
            room, f"v{ticket - 1}", ticket, 1, "s", carried=far_ticket(room, ticket, claims)
        )
        errors.append((answer.position or 0) - (rank + 1))
    errors.sort()
    engine.delete_room(room)
    out = {
        "line": n,
        "polls_per_second_per_process": polls_per_second,
        **after,
        "booked_share_at_cadence": round(share, 3),
        "full_poll_us": round(full_usec / after["polls"], 3),
        "far_poll_snapshot_ratio_to_full_poll": round(
            after["far_poll_snapshot_us"] * after["polls"] / full_usec, 3
        ),
        "position_error_p50": errors[len(errors) // 2],
        "position_error_p99": errors[int(len(errors) * 0.99)],
        "position_error_max": errors[-1],
        "position_error_min": errors[0],
    }
    if before is not None:
        out["before"] = summed("before")
        out["after_vs_before"] = round(
            after["far_poll_snapshot_us"] / out["before"]["far_poll_snapshot_us"], 3
        )
    return out


def sweep_pass_costs(engine: Engine, n: int, before: Engine | None = None) -> dict[str, Any]:
    """Redis time per spot of a sweep pass (100 spots a step, as the service's) over a line of
    ``n`` far spots that all polled through the snapshot ``abandonAfterSec`` ago and more:
    each engine books every spot once (book_seen_many), the room's clock moves past what
    their records say but not past the bookings, and a whole pass keeps them all (the median of
    three passes). With ``before`` (an older lua/), the same on a line of its own, passes in
    turn; the lines are deleted only after (a deletion frees memory in the background, which
    would weigh on the next pass)."""
    sides = {"after": engine} | ({"before": before} if before is not None else {})
    rooms = {}
    for side, eng in sides.items():
        config = ROOM_CONFIG | {"slug": f"sweep-{side}-{n}", "ratePerMinute": 1,
                                "abandonAfterSec": 300}  # fmt: skip
        room = eng.create_room("bench", config)["id"]
        eng.set_clock(room, eng.stats(room).now_ms)
        eng.open(room)
        fill(eng, room, n)
        while not eng.sweep(room, 10_000)[1]:  # the pass the first entry began, finished
            pass
        for ticket in range(1, n + 1):
            eng.bookings.note(room, f"v{ticket - 1}", ticket, 1, 1_400_000)
        eng.flush_bookings()
        eng.shift_clock(room, 1_100_000)  # past every record's own seen, not the bookings'
        rooms[side] = room
    out: dict[str, Any] = {"line": n}
    costs: dict[str, list[float]] = {side: [] for side in sides}
    for rounds in range(3):  # whole passes in turn, the first alternating
        order = list(sides) if rounds % 2 == 0 else list(reversed(sides))
        for side in order:
            eng = sides[side]
            engine.redis.config_resetstat()
            steps = 1
            while not eng.sweep(rooms[side], 100)[1]:
                steps += 1
            usec, _ = evalsha_usec(engine.redis)
            assert eng.stats(rooms[side]).waiting == n, side  # every booked spot kept
            costs[side].append(usec / n)
            eng.shift_clock(rooms[side], 60_000)  # the next pass is due (still booked)
    for side, eng in sides.items():  # deleted after: a deletion frees memory in the background
        out[side] = {"us_per_spot": round(statistics.median(costs[side]), 3), "steps": steps}
        eng.delete_room(rooms[side])
    return out


def on_cpu_ns(pid: int) -> int:
    """Time the server's main thread has run on a CPU (ns, Linux schedstat): unlike Redis's own
    wall-clock figures, it does not grow while other processes hold the machine's cores."""
    return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0])


def script_overhead(engine: Engine, pid: int, rounds: int = 15, per: int = 300) -> dict[str, Any]:
    """Redis CPU per call (µs, the server thread's schedstat, median of rounds) of the near poll
    beside what any call of it pays before its own work: PING; EVALSHA of ``return 1`` with the
    poll's keys and arguments; poll.lua's pieces (lua/_*.lua: their local functions and tables,
    made again on every call) and nothing else. Pieces-only minus bare is what carrying the
    pieces costs each call of poll.lua."""
    client = engine.redis
    config = ROOM_CONFIG | {"slug": "overhead", "ratePerMinute": 1}
    room = engine.create_room("bench", config)["id"]
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)
    engine.open(room, now + 86_400_000)
    fill(engine, room, 1_000)
    source = scripts.operation("poll").source
    pieces = client.register_script(source[: source.index("-- poll.lua\n")] + "\nreturn 1\n")
    bare = client.register_script("return 1")
    keys = engine.script_keys("poll", room)

    def args(i: int) -> list[Any]:
        return [f"v{i % 100}", i % 100 + 1, 1, "", ""]

    calls = {
        "near_poll": lambda i: engine.poll(room, f"v{i % 100}", i % 100 + 1, 1, near_head=True),
        "pieces_only": lambda i: pieces(keys=keys, args=args(i)),
        "bare_script": lambda i: bare(keys=keys, args=args(i)),
        "ping": lambda i: client.ping(),
    }
    costs: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            t0 = on_cpu_ns(pid)
            for i in range(per):
                call(i)
            costs[name].append((on_cpu_ns(pid) - t0) / per / 1000)
    engine.delete_room(room)
    out: dict[str, Any] = {
        f"{name}_cpu_us": round(statistics.median(c), 1) for name, c in costs.items()
    }
    out["pieces_cpu_us"] = round(out["pieces_only_cpu_us"] - out["bare_script_cpu_us"], 1)
    out["pieces_share_of_near_poll"] = round(out["pieces_cpu_us"] / out["near_poll_cpu_us"], 3)
    out["load_average"] = load_average()
    return out


def aof_bytes_per_full_poll(engine: Engine, spots: int = 1_000, every_ms: int = 15_000) -> float:
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


def model_1m(results: dict[str, Any], size: str, far_size: str | None) -> dict[str, Any]:
    """Redis core-seconds per second of a 1M line polling as told, from this run's figures.

    ``size`` is the largest line measured, ``far_size`` the largest with a snapshot figure
    (None: no line long enough; the far polls are then left out). See the module's docstring.
    """
    near_polls, far_polls = polls_by_source(MODEL_LINE)
    snap = results["snapshot_far_poll"].get(far_size, {}) if far_size else {}
    per_booked = snap.get("booking_us_per_booked_spot", 0.0)
    # Bookings: one call per process per second, its cost per booked spot measured; snapshot
    # reads: one per process per second, read-only (a replica may answer them).
    booking = far_polls * snap.get("booked_share_at_cadence", 0.0) * per_booked / 1e6
    snapshots = MODEL_PROCESSES * snap.get("snapshot_read_us", 0.0) / 1e6
    near = near_polls * results["near_poll_us"][size] / 1e6
    drain = MODEL_PACE * results["drain200_ms_median"] / 200 / 1e3
    entries = MODEL_PACE * results["entry_us"][size] / 1e6
    ticks = results["tick_idle_us"] / 1e6  # one working tick a second; the others read a field
    # a sweep pass over every spot once a minute (lua/_sweep.lua), at this run's cost per spot
    sweep = MODEL_LINE * results.get("sweep_pass", {}).get("after", {}).get("us_per_spot", 0.0)
    sweep = sweep / 60 / 1e6
    primary = booking + near + drain + entries + ticks + sweep
    floor = (near_polls + far_polls) * results["floor_us"][size] / 1e6
    return {
        "line": MODEL_LINE,
        "line_measured": int(size),
        "far_line_measured": int(far_size) if far_size else None,
        "polls_per_second": round(near_polls + far_polls),
        "far_polls_per_second": round(far_polls),
        "full_polls_per_second": round(near_polls),
        "snapshot_from_place": SNAPSHOT_FROM,
        "processes": MODEL_PROCESSES,
        "admissions_per_second": MODEL_PACE,
        "entries_per_second": MODEL_PACE,
        "snapshot_read_cores": round(snapshots, 4),
        "booking_cores": round(booking, 4),
        "full_poll_cores": round(near, 4),
        "entry_cores": round(entries, 4),
        "drain_cores": round(drain, 4),
        "sweep_cores": round(sweep, 4),
        "primary_cores": round(primary, 4),
        "replica_cores": round(snapshots, 4),
        "total_cores": round(primary + snapshots, 4),
        "floor_cores": round(floor, 4),
    }


def print_targets(results: dict[str, Any]) -> None:
    """The issue's carried targets beside this run's figures."""
    far = results.get("far_poll_snapshot_us", {})
    for size, value in far.items():
        mark = "met" if value <= TARGETS["far_poll_snapshot_us"] else "NOT met"
        print(f"target: Redis per far poll <= 2 µs @{size}: {value} µs ({mark})")
    drain = results.get("drain200_ms_median")
    if drain is not None:
        mark = "met" if drain <= TARGETS["drain200_ms_median"] else "NOT met"
        print(f"target: drain of 200 <= 1 ms: {drain} ms ({mark}); tickets: "
              f"{results.get('drain200_tickets_ms_median')} ms")  # fmt: skip
    for size, ratio in results.get("near_poll_calls_vs_ping", {}).items():
        print(
            f"target: near poll >= 0.8x plain (over HTTP: bench/http.py) @{size}: in-process "
            f"the near poll's call runs at {ratio}x a PING's rate "
            f"({results['near_poll_wall_us'][size]} vs {results['ping_wall_us'][size]} µs), "
            f"{results['near_poll_us'][size]} µs of it Redis's"
        )


def print_before_after(before: dict[str, Any], after: dict[str, Any]) -> None:
    """The headline figures of the previous run (same keys) beside this run's."""
    rows = ["far_poll_snapshot_us", "full_poll_us", "near_poll_us", "entry_us", "floor_us"]
    print("figure                            before -> after")
    for key in rows:
        for size, value in after.get(key, {}).items():
            print(f"{key + ' @' + size:<33} {before.get(key, {}).get(size, '-')} -> {value}")
    for key in ("drain200_ms_median", "drain200_tickets_ms_median", "bytes_per_waiting_spot"):
        print(f"{key:<33} {before.get(key, '-')} -> {after.get(key)}")
    for key in ("primary_cores", "replica_cores", "total_cores"):
        was = before.get("model_1m", {}).get(key, "-")
        print(f"{'model_1m ' + key:<33} {was} -> {after['model_1m'][key]}")


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def record_far(results: dict[str, Any], far: dict[str, Any]) -> None:
    """The far poll's headline figures per size (and the before engine's beside them)."""
    for size, part in far.items():
        for key in ("far_poll_snapshot_us", "snapshot_us_per_poll", "booking_us_per_poll"):
            results.setdefault(key, {})[size] = part[key]
            if "before" in part:
                results.setdefault(key + "_before", {})[size] = part["before"][key]


def remodel(results: dict[str, Any]) -> None:
    """The 1M model again from ``results`` (a part measured anew, the others of earlier runs)."""
    sizes_run = [size for size in results.get("near_poll_us", {}) if size in results["entry_us"]]
    if sizes_run and results.get("snapshot_far_poll") and "drain200_ms_median" in results:
        largest = str(max(int(size) for size in sizes_run))
        far_size = str(max(int(size) for size in results["snapshot_far_poll"]))
        results["model_1m"] = model_1m(results, largest, far_size)


def far_only(
    engine: Engine, sizes: list[int], out: Path, drain: bool = True, before: Engine | None = None,
    before_rev: str = "",
) -> None:  # fmt: skip
    """The snapshot far poll (and the drain of 200) alone, merged into the results in ``out``."""
    try:
        results = json.loads(out.read_text())
    except (OSError, ValueError):
        results = {}
    if drain:
        drain_ms, idle_us = drain_of_200(engine)
        results["drain200_ms_median"] = round(drain_ms, 3)
        results["drain200_tickets_ms_median"] = round(drain_of_200(engine, pool=False)[0], 3)
        results["tick_idle_us"] = round(idle_us, 2)
    far = {
        str(n): snapshot_far_polls(engine, n, before=before) for n in sizes if n > FAR_FROM_TICKET
    }
    results.setdefault("snapshot_far_poll", {}).update(far)
    record_far(results, far)
    if before is not None:
        results["before_lua_revision"] = before_rev
    results["sweep_pass"] = sweep_pass_costs(engine, 100_000, before)
    if drain and far:
        remodel(results)
    results["far_run_load_average"] = load_average()
    print(json.dumps(far, indent=2))
    print_targets(results)
    out.write_text(json.dumps(results, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-url")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "engine.json"))
    parser.add_argument(
        "--far-only",
        action="store_true",
        help="only the drain of 200 and the snapshot far poll (merged into --out)",
    )
    parser.add_argument(
        "--only",
        choices=["far", "overhead", "sweep"],
        help="far: only the snapshot far poll; overhead: only the scripts' fixed cost; sweep: "
        "only the sweep pass (each merged into --out)",
    )
    parser.add_argument(
        "--before",
        help="git revision whose lua/ answers the same far polls and sweep beside this tree's "
        "(the _before keys)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    server, data = None, tempfile.TemporaryDirectory()  # a 1M line leaves ~400 MB of AOF
    if not args.redis_url:
        server = EmbeddedRedis(data.name, port=0).start()
    client = redis.Redis.from_url(args.redis_url or server.url, decode_responses=True)  # type: ignore[union-attr]
    client.config_set("auto-aof-rewrite-percentage", 0)  # no rewrite fork in the middle of a batch
    engine = Engine(client, prefix="bench:")
    before: Engine | None = None
    old_lua = tempfile.TemporaryDirectory()
    if args.before:
        from drain import engine_with_lua, lua_at  # a sibling benchmark (it imports this one)

        before = engine_with_lua(client, lua_at(args.before, Path(old_lua.name)), "bench:")
    per_size = (
        "far_poll_snapshot_us", "snapshot_us_per_poll", "booking_us_per_poll", "full_poll_us",
        "full_poll_us_p99", "near_poll_us", "near_poll_wall_us", "ping_wall_us",
        "near_poll_calls_vs_ping", "entry_us", "floor_us", "full_poll_ratio_to_floor",
        "floor_bytes_per_spot",
    )  # fmt: skip
    results: dict[str, Any] = {key: {} for key in per_size}
    memory = 0.0
    out = Path(args.out)
    try:
        results["redis_version"] = client.info("server")["redis_version"]
        if args.before:
            results["before_lua_revision"] = args.before
        if args.only == "sweep":
            merged = json.loads(out.read_text()) if out.exists() else {}
            merged["sweep_pass"] = sweep_pass_costs(engine, 100_000, before)
            merged["sweep_pass"]["load_average"] = load_average()
            remodel(merged)
            print(json.dumps(merged["sweep_pass"], indent=2))
            out.write_text(json.dumps(merged, indent=2) + "\n")
            return
        if args.only == "overhead":
            merged = json.loads(out.read_text()) if out.exists() else {}
            merged["script_overhead"] = script_overhead(engine, server.process.pid)  # type: ignore[union-attr]
            print(json.dumps(merged["script_overhead"], indent=2))
            out.write_text(json.dumps(merged, indent=2) + "\n")
            return
        if args.far_only or args.only == "far":
            far_only(engine, sizes, out, not args.only, before, args.before or "")
            return
        results["load_average_before"] = load_average()
        t0 = time.monotonic()
        for n in sizes:
            memory = scripts_and_floor(engine, n, results)
        drain_ms, idle_us = drain_of_200(engine)
        results["drain200_ms_median"] = round(drain_ms, 3)
        results["drain200_tickets_ms_median"] = round(drain_of_200(engine, pool=False)[0], 3)
        results["tick_idle_us"] = round(idle_us, 2)
        results["bytes_per_waiting_spot"] = round(memory, 1)
        results["bytes_ratio_to_floor"] = round(
            memory / results["floor_bytes_per_spot"][str(sizes[-1])], 2
        )
        results["aof_bytes_per_full_poll"] = round(aof_bytes_per_full_poll(engine), 1)
        if server is not None:  # the server thread's CPU is read from /proc
            results["script_overhead"] = script_overhead(engine, server.process.pid)  # type: ignore[union-attr]
        # A far poll needs spots past the exact band.
        far = {
            str(n): snapshot_far_polls(engine, n, before=before)
            for n in sizes
            if n > FAR_FROM_TICKET
        }
        results["snapshot_far_poll"] = far
        record_far(results, far)
        results["sweep_pass"] = sweep_pass_costs(engine, 100_000, before)
        far_size = str(max(int(s) for s in far)) if far else None
        results["model_1m"] = model_1m(results, str(sizes[-1]), far_size)
        results["seconds"] = round(time.monotonic() - t0)
        results["load_average_after"] = load_average()
        print(
            f"{memory:.0f} bytes per spot ({results['bytes_ratio_to_floor']}x floor); "
            f"{results['aof_bytes_per_full_poll']} AOF bytes per full poll (15 s cadence)"
        )
        print(f"1M model: {json.dumps(results['model_1m'])}")
        try:
            before = json.loads(out.read_text())
        except (OSError, ValueError):
            before = {}
        print_before_after(before, results)
        print_targets(results)
        kept = {key: before[key] for key in OTHER_SCRIPTS_KEYS if key in before}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results | kept, indent=2) + "\n")
        print(json.dumps(results, indent=2))
    finally:
        if server:
            server.stop()
        data.cleanup()
        old_lua.cleanup()


if __name__ == "__main__":
    main()
