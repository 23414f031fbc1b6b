"""Queue-engine benchmark: server-side cost of poll at 1k/100k/1M waiting spots beside the floor
of what a poll must do, a drain of 200, memory per waiting spot, AOF bytes per poll, and a model
of a 1M line split into primary and replica-able work.

Per-call time is Redis's own figure: ``CONFIG RESETSTAT``, a batch of EVALSHA calls, then
``INFO commandstats`` (usec / calls) — one figure per batch; median and p99 are over batches.
Lines are filled as a pre-queue (opensAt a day ahead, rate 1/min) with the room's clock pinned,
so the drain stays idle, no sweep pass or last-seen booking falls due while measuring, and
positions are still computed; polled spots are random across the line (ranks > 100 for the far
poll, the 100 first for the near-head poll).

Per poll, four figures: ``poll_far_us`` (the read-only far poll, the common case: replica-able),
``book_seen_us`` (the primary's write when a far poll finds last-seen due, one poll in eleven at
the 15 s cadence), ``poll_full_us`` (poll.lua on a deep spot: what a far poll's MORE costs on the
primary) and ``poll_near_head_us_median`` (poll.lua near the head). ``poll_us_median`` is the
cost of an average deep poll at the 15 s cadence: far + book_seen / 11. The floor is one script
doing what any poll must: HGET of the room, ZRANK of the visitor in a line of the same length
(random order, as the pre-queue's lottery order is) and HSET of its last-seen time.
``ratio_to_floor`` = poll_us_median / floor_us: the figure to compare between machines.

Drain of 200: the service's tick (lua/tick.lua) admitting 200 from a line of 400, no sweep pass
due. The line is a pre-opening pool (opensAt 1 s ahead, the clock moved 1.5 s): the first tick
finds its draw due and the service makes it (queue/room_draw.py); the tick a second later, the
one measured, drains 200 of the drawn pool. ``drain200_tickets_ms_median``: the same from a line
of tickets taken after opening.

The 1M model (``model_1m``): the polls a second of a 1M line polling as told (cadence bands),
times this run's per-call costs. Replica-able: every far poll. Primary: the last-seen bookings
(1 in 11 polls at 15 s, 1 in 31 at 5 s), one full poll per admission (a far poll that finds an
admission owed hands on to the full poll, which drains it; this assumes replication lag well
under the 10 ms an admission takes to be earned at 100 a second), the near-head polls, the ticks
and the drain at 100 admissions a second.

AOF bytes per poll: ``aof_current_size`` (``INFO persistence``) before and after every spot of
a 1,000-spot pre-queue polls every 15 s (the cadence deep in a line) for ten minutes of room clock.
Run: ``python bench/engine.py [--redis-url URL] [--sizes 1000,100000,1000000] [--out FILE]``.
Writes ``bench/results/engine.json`` by default.
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
# bench/http.py would stand for the standard library's http (urllib.request imports it): this
# folder goes after the standard library on the path, where sibling benchmarks are still found.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.sdk.tokens import TicketClaims  # noqa: E402

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


def poll_and_floor(engine: Engine, n: int, results: dict[str, Any]) -> float:
    """Poll and floor costs at ``n`` spots, interleaved batch by batch; engine bytes per spot."""
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

    def far(i: int) -> None:
        vid, ticket = deep[i]
        engine.poll(room, vid, ticket, 1)

    def full(i: int) -> None:
        vid, ticket = deep[i]
        engine.poll(room, vid, ticket, 1, near_head=True)

    def near(i: int) -> None:
        vid, ticket = head[i]
        engine.poll(room, vid, ticket, 1, near_head=True)

    def floor_poll(i: int) -> None:
        floor(keys=keys, args=[f"v{i}", int(time.time() * 1000)])

    fars: list[float] = []
    fulls: list[float] = []
    nears: list[float] = []
    floors: list[float] = []
    for _ in range(10):  # interleaved, so all see the same load on a shared machine
        fars += batch_costs(client, far, len(deep), 20, 20)
        floors += batch_costs(client, floor_poll, n, 20, 20)
        fulls += batch_costs(client, full, len(deep), 5, 20)
        nears += batch_costs(client, near, len(head), 5, 20)
    # Last-seen falls due for every spot a millisecond on; each sampled spot books it once.
    engine.shift_clock(room, 1)
    books: list[float] = []
    for start in range(0, len(deep) - 19, 20):
        client.config_resetstat()
        for vid, ticket in deep[start : start + 20]:
            engine.poll(room, vid, ticket, 1)
        usec, _ = evalsha_usec(client)
        books.append(usec / 20)  # one far poll and one book_seen per poll
    key = str(n)
    far_us, floor_us = statistics.median(fars), statistics.median(floors)
    book_us = max(0.0, statistics.median(books) - far_us)
    poll_us = far_us + book_us / 11  # an average deep poll at the 15 s cadence
    results["poll_far_us"][key] = round(far_us, 2)
    results["poll_far_us_p99"][key] = round(p99(fars), 2)
    results["book_seen_us"][key] = round(book_us, 2)
    results["poll_full_us"][key] = round(statistics.median(fulls), 2)
    results["poll_near_head_us_median"][key] = round(statistics.median(nears), 2)
    results["poll_us_median"][key] = round(poll_us, 2)
    results["poll_us_p99"][key] = round(p99(fars) + book_us / 11, 2)
    results["floor_us"][key] = round(floor_us, 2)
    results["ratio_to_floor"][key] = round(poll_us / floor_us, 2)
    results["floor_bytes_per_spot"][key] = round(floor_bytes, 1)
    print(
        f"{n:>9} spots: filled in {filled:.1f}s; far poll {far_us:.1f} µs (p99 {p99(fars):.1f}), "
        f"book_seen {book_us:.1f}, poll {poll_us:.1f}, full poll "
        f"{results['poll_full_us'][key]}, near head {results['poll_near_head_us_median'][key]}; "
        f"floor {floor_us:.1f} µs, ratio {poll_us / floor_us:.2f}; "
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
            # The pool is drawn by the service (queue/room_draw.py), not by the tick: the first
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


def bookings_at_cadence(
    snapshot: Any, now: int, n: int, intervals_ahead: int, polls: int = 12
) -> float:
    """Share of far polls that book last-seen when visitors poll exactly as told.

    A sample of tickets across the line each polls ``polls`` times at its own ``pollAfterMs``
    through far_poll.answer_far (pure: no Redis), the ticket of each answer carried to the next;
    ``intervals_ahead`` is far_poll.BOOK_INTERVALS_AHEAD (1: the rule before it was 2).
    """
    from anteroom.queue import far_poll

    was, far_poll.BOOK_INTERVALS_AHEAD = far_poll.BOOK_INTERVALS_AHEAD, intervals_ahead
    booked = answered = 0
    try:
        for ticket in range(2_001 + 7, n + 1, max(1, (n - 2_001) // 200)):
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
    finally:
        far_poll.BOOK_INTERVALS_AHEAD = was
    return booked / answered


def snapshot_far_polls(
    engine: Engine, n: int, polls_per_second: int = 1_250, seconds: int = 10
) -> dict[str, float]:
    """Redis time per far poll answered from the process's snapshot (far_poll.py), amortised.

    A line of ``n`` spots after opening (ticket blocks); one process answers
    ``polls_per_second`` far polls a second at random depths past the first 2,000 (the budget
    of 5,000 a second shared by four processes) for ``seconds`` of a stand-in monotonic clock, so
    it reads the room's snapshot once a second; every other poll needs its last-seen booked
    (a far visitor books every other poll), flushed once a second in one call. Redis time is
    ``INFO commandstats`` of the snapshot and book_seen_many scripts over the polls made.
    Split: each snapshot read and booking call is timed apart (``snapshot_read_us``,
    ``booking_call_us``, ``booking_us_per_booked_spot``, and their shares of the figure per
    poll). At the visitors' own cadence (``bookings_at_cadence``) the share of far polls that
    book is measured for the rule before (one interval ahead) and now (two), and the figure per
    poll at that share (``redis_us_per_far_poll_at_cadence[_before]``) = snapshot share + share
    * cost per booked spot, from this run's figures.
    Also the position error: shown minus exact rank (ZRANK + 1) over a sample, after 10% of
    the line, at random, left.
    """
    client = engine.redis
    config = ROOM_CONFIG | {"slug": f"snap-{n}", "ratePerMinute": 6_000, "abandonAfterSec": 300}
    room = engine.create_room("bench", config)["id"]
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)  # pinned: the line stands still while measured
    engine.open(room)
    fill(engine, room, n)
    ticks = [0.0]
    engine.snapshots.clock = lambda: ticks[0]
    engine.bookings.clock = lambda: ticks[0]
    engine.snapshots.forget()
    score_claims = {"qj": "s", "qs": 10}
    # half the tickets say their spot is kept long enough already, half that it is due
    kept = {0: now + 10_000_000, 1: now + 1}
    # each snapshot read and booking call timed apart (INFO commandstats around it), so the
    # amortised figure splits into its two parts
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
    client.config_resetstat()
    for second in range(seconds):
        for i in range(polls_per_second):
            ticks[0] = second + i / polls_per_second
            ticket = random.randrange(2_001, n + 1)
            claims = score_claims | {"qk": 2**52 + ticket, "qu": kept[i % 2]}
            answer = engine.poll(
                room, f"v{ticket - 1}", ticket, 1, "s", carried=far_ticket(room, ticket, claims)
            )
            assert answer.position is not None and answer.position > 1_000
            polls += 1
        engine.flush_bookings()
    usec, _ = evalsha_usec(client)
    engine.snapshots.read, engine.bookings.run = read, run
    reads, calls = engine.snapshots.reads, engine.bookings.calls
    # side by side: the same number of polls through the scripts' far poll (and book_seen)
    client.config_resetstat()
    for _ in range(polls):
        ticket = random.randrange(2_001, n + 1)
        engine.poll(room, f"v{ticket - 1}", ticket, 1, "s")
    scripts_usec, _ = evalsha_usec(client)
    # bookings at the visitors' own cadence: one interval ahead (before) and two (now)
    snapshot = engine.snapshots.get(room)
    share_before = bookings_at_cadence(snapshot, now, n, 1)
    share_after = bookings_at_cadence(snapshot, now, n, 2)
    snapshot_us = split["snapshot"][0] / polls
    per_booked = split["booking"][0] / max(1, split["booked"][1])
    at_cadence_before = snapshot_us + share_before * per_booked
    # position error after random leavers
    leavers = random.sample(range(1, n + 1), n // 10)
    pipe = client.pipeline(transaction=False)
    script, keys = engine._scripts["leave"], engine.script_keys("leave", room)
    for ticket in leavers:
        script(keys=keys, args=[f"v{ticket - 1}", ticket, 1], client=pipe)
    pipe.execute()
    engine.snapshots.forget()
    ticks[0] += 2
    gone = set(leavers)
    sample = [t for t in random.sample(range(2_001, n + 1), 4_000) if t not in gone][:2_000]
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
    return {
        "line": n,
        "polls": polls,
        "redis_us_per_far_poll": round(usec / polls, 3),
        "scripts_far_poll_us": round(scripts_usec / polls, 3),
        "ratio_to_scripts_far_poll": round(usec / scripts_usec, 3),
        "snapshot_us_per_far_poll": round(split["snapshot"][0] / polls, 3),
        "booking_us_per_far_poll": round(split["booking"][0] / polls, 3),
        "snapshot_read_us": round(split["snapshot"][0] / max(1, split["snapshot"][1]), 1),
        "booking_call_us": round(split["booking"][0] / max(1, split["booking"][1]), 1),
        "booking_us_per_booked_spot": round(split["booking"][0] / max(1, split["booked"][1]), 3),
        "booked_spots": split["booked"][1],
        "booked_share_at_cadence_before": round(share_before, 3),
        "booked_share_at_cadence": round(share_after, 3),
        "redis_us_per_far_poll_at_cadence_before": round(at_cadence_before, 3),
        "redis_us_per_far_poll_at_cadence": round(snapshot_us + share_after * per_booked, 3),
        "snapshot_reads": reads,
        "booking_calls": calls,
        "position_error_p50": errors[len(errors) // 2],
        "position_error_p99": errors[int(len(errors) * 0.99)],
        "position_error_max": errors[-1],
        "position_error_min": errors[0],
    }


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

    ``size`` is the largest line measured. See the module's docstring for what goes where.
    """
    per_second = MODEL_RATE_PER_MINUTE / 60
    far_polls = CADENCE_1M["far"]
    bookings = 999_000 / 15.0 / 11 + 900 / 5.0 / 31
    replica = far_polls * results["poll_far_us"][size] / 1e6
    booking = bookings * results["book_seen_us"][size] / 1e6
    handed_on = per_second * results["poll_full_us"][size] / 1e6
    near = CADENCE_1M["near"] * results["poll_near_head_us_median"][size] / 1e6
    drain = per_second * results["drain200_ms_median"] / 200 / 1e3
    ticks = results["tick_idle_us"] / 1e6  # one working tick a second; the others read a field
    primary = booking + handed_on + near + drain + ticks
    floor = sum(CADENCE_1M.values()) * results["floor_us"][size] / 1e6
    return {
        "line_measured": int(size),
        "polls_per_second": round(sum(CADENCE_1M.values())),
        "admissions_per_second": int(per_second),
        "far_poll_cores": round(replica, 3),
        "booking_cores": round(booking, 3),
        "handed_on_cores": round(handed_on, 3),
        "near_poll_cores": round(near, 3),
        "drain_cores": round(drain, 3),
        "primary_cores": round(primary, 3),
        "replica_cores": round(replica, 3),
        "total_cores": round(primary + replica, 3),
        "floor_cores": round(floor, 3),
    }


def print_before_after(out: Path, after: dict[str, Any]) -> None:
    """The headline figures of the previous run in ``out`` (if any) beside this run's."""
    try:
        before = json.loads(out.read_text())
    except (OSError, ValueError):
        return
    rows = [("poll µs (median)", "poll_us_median"), ("floor µs", "floor_us")]
    rows += [("poll / floor", "ratio_to_floor"), ("near head µs", "poll_near_head_us_median")]
    print("figure                      before -> after")
    for label, key in rows:
        for size, value in after.get(key, {}).items():
            print(f"{label + ' @' + size:<27} {before.get(key, {}).get(size, '-')} -> {value}")
    for key in ("drain200_ms_median", "bytes_per_waiting_spot", "bytes_ratio_to_floor"):
        print(f"{key:<27} {before.get(key, '-')} -> {after.get(key)}")
    print(
        f"{'aof_bytes_per_poll':<27} {before.get('aof_bytes_per_poll', '-')} -> "
        f"{after.get('aof_bytes_per_poll')}"
    )
    for key in ("primary_cores", "replica_cores", "total_cores"):
        was = before.get("model_1m", {}).get(key, "-")
        print(f"{'model_1m ' + key:<27} {was} -> {after['model_1m'][key]}")


def far_only(engine: Engine, sizes: list[int], out: Path, drain: bool = True) -> None:
    """The snapshot far poll (and the drain of 200) alone, merged into the results in ``out``."""
    try:
        results = json.loads(out.read_text())
    except (OSError, ValueError):
        results = {}
    before = results.get("drain200_ms_median")
    if drain:
        drain_ms, idle_us = drain_of_200(engine)
        results["drain200_ms_median"] = round(drain_ms, 3)
        results["drain200_tickets_ms_median"] = round(drain_of_200(engine, pool=False)[0], 3)
        results["tick_idle_us"] = round(idle_us, 2)
    results.setdefault("snapshot_far_poll", {}).update(
        {str(n): snapshot_far_polls(engine, n) for n in sizes}
    )
    if drain:
        print(f"drain of 200: {before} -> {results['drain200_ms_median']} ms")
    print(json.dumps(results["snapshot_far_poll"], indent=2))
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
        choices=["far"],
        help="far: only the snapshot far poll (merged into --out)",
    )
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
        "poll_far_us": {},
        "poll_far_us_p99": {},
        "book_seen_us": {},
        "poll_full_us": {},
    }
    memory = 0.0
    try:
        results["redis_version"] = client.info("server")["redis_version"]
        if args.far_only or args.only == "far":
            far_only(engine, sizes, Path(args.out), drain=not args.only)
            return
        for n in sizes:
            memory = poll_and_floor(engine, n, results)
        drain_ms, idle_us = drain_of_200(engine)
        results["drain200_ms_median"] = round(drain_ms, 3)
        results["drain200_tickets_ms_median"] = round(drain_of_200(engine, pool=False)[0], 3)
        results["tick_idle_us"] = round(idle_us, 2)
        results["bytes_per_waiting_spot"] = round(memory, 1)
        results["bytes_ratio_to_floor"] = round(
            memory / results["floor_bytes_per_spot"][str(sizes[-1])], 2
        )
        results["aof_bytes_per_poll"] = round(aof_bytes_per_poll(engine), 1)
        # A far poll needs spots past the exact band (its tickets start at 2,001).
        results["snapshot_far_poll"] = {
            str(n): snapshot_far_polls(engine, n) for n in sizes if n > 2_000
        }
        results["model_1m"] = model_1m(results, str(sizes[-1]))
        print(
            f"drain of 200: {results['drain200_ms_median']} ms; {memory:.0f} bytes per spot "
            f"({results['bytes_ratio_to_floor']}x floor); "
            f"{results['aof_bytes_per_poll']} AOF bytes per poll (15 s cadence)"
        )
        print(f"1M model: {results['model_1m']}")
        out = Path(args.out)
        print_before_after(out, results)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(json.dumps(results, indent=2))
    finally:
        if server:
            server.stop()
        data.cleanup()


if __name__ == "__main__":
    main()
