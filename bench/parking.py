"""What parking costs ("tell me when it's my turn", queue/line/parking.py): Redis memory and
commands per parked spot, and what N parked spots cost the calls every room makes all the time.

Two rooms side by side, each with ``--waiting`` spots on a pinned clock: in one, every other
spot is parked (an address left), in the other none. Measured on each:
- memory: the room's ``park`` sorted set and ``mail`` hash per parked spot (MEMORY USAGE), and
  its spots hash before and after parking (the record is rewritten in place: same size);
- commands: Redis commands run per park call (INFO commandstats, the script's own included);
- the turns' pass (lua/turns.lua, each notify room once a second per process): Redis time per
  call with N parked, beside a room with none;
- the calls every room makes: a tick (drain of one admission + sweep step) and a poll at the
  front, Redis time per call, parked room beside the plain one, in the same run.
Run: ``python bench/parking.py [--redis-url URL] [--waiting N]``. Writes
``bench/results/parking.json``.
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
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.line.parking import Parking  # noqa: E402

T0 = 1_800_000_000_000


def commands(client: redis.Redis) -> dict[str, dict[str, float]]:
    return {k: v for k, v in client.info("commandstats").items() if k.startswith("cmdstat_")}


def script_us(client: redis.Redis, call: object, times: int) -> float:
    """Redis time (µs) per EVALSHA of ``call()`` run ``times`` times."""
    client.config_resetstat()
    for _ in range(times):
        call()  # type: ignore[operator]
    stat = client.info("commandstats").get("cmdstat_evalsha", {"usec_per_call": 0.0})
    return float(stat["usec_per_call"])


def make_room(engine: Engine, slug: str, waiting: int) -> tuple[str, list[int]]:
    config = {"slug": slug, "name": "Bench", "redirectUrl": "https://shop.example/checkout"}
    room = engine.create_room("bench", config | {"ratePerMinute": 60, "notify": True})["id"]
    engine.set_clock(room, T0)
    engine.open(room)
    tickets = [engine.enter(room, f"v{i}", f"s{i}", 10).ticket or 0 for i in range(waiting)]
    return room, tickets


def measure(client: redis.Redis, waiting: int, rounds: int) -> dict[str, object]:
    client.flushall()
    engine = Engine(client)
    parking = Parking(engine)
    plain, _ = make_room(engine, "plain", waiting)
    parked_room, tickets = make_room(engine, "parked", waiting)
    keys = engine.keys.room_keys(parked_room)
    spots_before = client.memory_usage(keys["spots"], samples=0) or 0
    parked = list(range(0, waiting, 2))
    client.config_resetstat()
    started = time.perf_counter()
    for i in parked:
        parking.park(parked_room, f"v{i}", tickets[i], 1, f"visitor{i}@mail.example.com", "pk_x")
    park_ms = (time.perf_counter() - started) * 1000 / len(parked)
    stats = commands(client)
    park_calls = stats["cmdstat_evalsha"]["calls"]
    inner = sum(v["calls"] for k, v in stats.items() if k not in ("cmdstat_evalsha",))
    park_us = stats["cmdstat_evalsha"]["usec_per_call"]
    spots_after = client.memory_usage(keys["spots"], samples=0) or 0
    park_bytes = client.memory_usage(keys["park"], samples=0) or 0
    mail_bytes = client.memory_usage(keys["mail"], samples=0) or 0

    def side_by_side(call_of: object) -> dict[str, float]:
        # alternated in one run, so the machine's noise falls on both alike
        plain_us = parked_us = 0.0
        for _ in range(5):
            plain_us += script_us(client, lambda: call_of(plain), rounds)  # type: ignore[operator]
            parked_us += script_us(client, lambda: call_of(parked_room), rounds)  # type: ignore[operator]
        return {
            "plain_us": round(plain_us / 5, 1),
            "parked_us": round(parked_us / 5, 1),
            "ratio": round(parked_us / plain_us, 3) if plain_us else 0.0,
        }

    turns = side_by_side(lambda room: parking.turns(room, 900))
    # a poll of an unparked spot (each once: a spot polled sooner than asked is refused), the
    # same spots of both rooms, and a tick that finds nothing due (the clock is pinned: the
    # common case of every call after the first in a second)
    pollers = {plain: iter(range(1, waiting, 2)), parked_room: iter(range(1, waiting, 2))}

    def poll_one(room: str) -> None:
        i = next(pollers[room])
        engine.poll(room, f"v{i}", tickets[i], 1)

    poll = side_by_side(poll_one)
    tick = side_by_side(lambda room: engine.tick(room))

    # a tick that works: one second on, one admission dealt, a sweep step (both rooms alike)
    def working_tick(room: str) -> None:
        engine.shift_clock(room, 1_000)
        engine.tick(room)

    work = side_by_side(working_tick)
    return {
        "waiting": waiting,
        "parked": len(parked),
        "bytes_per_parked_spot": round((park_bytes + mail_bytes) / len(parked), 1),
        "park_set_bytes_per_spot": round(park_bytes / len(parked), 1),
        "mail_hash_bytes_per_spot": round(mail_bytes / len(parked), 1),
        "spot_record_bytes_change_per_spot": round((spots_after - spots_before) / len(parked), 2),
        "park_call_redis_us": round(park_us, 1),
        "park_call_round_trip_ms": round(park_ms, 3),
        "commands_per_park": round(inner / park_calls, 2),
        "turns_pass_us": turns,
        "poll_front_us": poll,
        "tick_idle_us": tick,
        "tick_working_us": work,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--waiting", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    server = None
    if not args.redis_url:
        server = EmbeddedRedis(tempfile.mkdtemp()).start()
    try:
        client = redis.Redis.from_url(args.redis_url or server.url, decode_responses=True)
        result = measure(client, args.waiting, args.rounds)
    finally:
        if server is not None:
            server.stop()
    print(json.dumps(result, indent=2))
    out = ROOT / "bench" / "results" / "parking.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
