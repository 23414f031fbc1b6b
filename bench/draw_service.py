"""The service's draw (queue/draw/room_draw.py) over a pre-queue of 100,000, on an embedded Redis.

What it costs, in one run: ``draw_s`` the whole draw's wall time (opensAt to the seed revealed:
the time the drain waits), split into ``read_s`` (the frozen pool's vids, one ZRANGEBYSCORE per
line and held bucket), ``order_s`` (sdk/draw.drawn_order, in Python), ``ids_and_root_s`` (the
rest in Python: salted entrant ids, the Merkle root) and ``write_s`` (the place_drawn batches and
finish_draw). ``batch_ms_max``/``_p99``/``_median``: single place_drawn calls as the client saw
them; ``redis_batch_ms_max``/``_median``: the same calls as Redis timed them (SLOWLOG), i.e. the
longest Redis is held at once by the draw. Beside them ``enter_ms_median``, one entry's call in
the same run, so ``batch_to_enter`` says how many entries' worth of time one batch takes.

Receipts (queue/draw/room_receipts.py), after the draw, in the same run: ``receipts_load_s`` what a
process's background build of the opening costs with its first receipt (the drawn list and salt
read, the tree and index built, one signed),
``receipts_opening_mb`` what the process then keeps for the opening (tracemalloc),
``receipt_us_median`` a receipt made for an entrant (proof, JSON, Ed25519 signature),
``receipt_cached_us_median`` the same entrant's next answer, ``later_arrival_us_median`` a
visitor who is not an entrant (one HMAC, a miss), ``no_draw_us_median`` a room without a draw,
and ``receipt_bytes`` one receipt's length.
Run: ``python bench/draw_service.py [--entrants 100000] [--out FILE]``; writes
``bench/results/draw_service.json`` by default.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
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
from anteroom.queue.draw import room_draw  # noqa: E402
from anteroom.queue.draw.receipt_keys import ReceiptSigner  # noqa: E402
from anteroom.queue.draw.room_receipts import ReceiptBook  # noqa: E402
from anteroom.sdk import draw  # noqa: E402
from anteroom.sdk.tokens import Keyring  # noqa: E402

START = 1_800_000_000_000


def fill(engine: Engine, room: str, entrants: int) -> None:
    """``entrants`` pool entries, pipelined 1,000 at a time (the enter script itself)."""
    script, keys = engine._scripts["enter"], engine.script_keys("enter", room)
    for start in range(0, entrants, 1_000):
        pipe = engine.redis.pipeline(transaction=False)
        for i in range(start, min(start + 1_000, entrants)):
            script(keys=keys, args=[f"v{i:07d}", "s", 10, "", "", 0], client=pipe)
        pipe.execute()


def per_call_us(fn: Any, items: list[str]) -> float:
    """The median of one call of ``fn`` per item, in microseconds."""
    times = []
    for item in items:
        began = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - began)
    return round(statistics.median(times) * 1e6, 1)


def receipts(client: redis.Redis, engine: Engine, room_id: str) -> dict[str, Any]:
    """What receipts cost a process after the draw (see the module's docstring)."""
    room = engine.get_room(room_id)
    book = ReceiptBook(client, engine.keys, ReceiptSigner(Keyring.generate("k1")))
    began = time.perf_counter()
    book.prepare(room)  # in the background in the service (the draw worker, or a thread)
    first = book.receipt(room, "v0000000")
    load_s = time.perf_counter() - began
    assert first is not None
    entrants = [f"v{i:07d}" for i in range(1, 99_000, 97)]
    made = per_call_us(lambda vid: book.receipt(room, vid), entrants)
    cached = per_call_us(lambda vid: book.receipt(room, vid), entrants)
    later = per_call_us(lambda vid: book.receipt(room, vid), [f"late{i}" for i in range(1_000)])
    undrawn = room | {"draw": None}
    no_draw = per_call_us(lambda vid: book.receipt(undrawn, vid), entrants)
    book._openings.clear()
    tracemalloc.start()
    book.prepare(room)
    kept, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "receipts_load_s": round(load_s, 3),
        "receipts_opening_mb": round(kept / 1e6, 1),
        "receipt_us_median": made,
        "receipt_cached_us_median": cached,
        "later_arrival_us_median": later,
        "no_draw_us_median": no_draw,
        "receipt_bytes": len(first),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entrants", type=int, default=100_000)
    parser.add_argument("--out", default=str(ROOT / "bench/results/draw_service.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(data, port=0).start()
        try:
            client = redis.Redis.from_url(server.url, decode_responses=True)
            engine = Engine(client)
            room = engine.create_room(
                "bench", {"slug": "drop", "name": "Drop", "maxWaiting": 1_000_000,
                          "redirectUrl": "https://shop.example/"},
            )["id"]  # fmt: skip
            engine.set_clock(room, START)
            engine.open(room, START + 60_000)
            enters = []
            for i in range(200):  # one entry's call, timed alone
                began = time.perf_counter()
                engine.enter(room, f"e{i}", "s", 10)
                enters.append(time.perf_counter() - began)
            fill(engine, room, args.entrants - 200)
            engine.shift_clock(room, 60_000)

            calls: dict[str, list[float]] = {}

            def run(op: str, *call: Any) -> Any:
                began = time.perf_counter()
                result = engine._run(op, *call)
                calls.setdefault(op, []).append(time.perf_counter() - began)
                return result

            pure_order = draw.drawn_order
            order_s = [0.0]

            def timed_order(*a: Any, **k: Any) -> list[str]:
                began = time.perf_counter()
                out = pure_order(*a, **k)
                order_s[0] += time.perf_counter() - began
                return out

            read = room_draw.pool_vids
            read_s = [0.0]

            def timed_read(*a: Any) -> list[str]:
                began = time.perf_counter()
                out = read(*a)
                read_s[0] += time.perf_counter() - began
                return out

            room_draw.draw.drawn_order = timed_order  # type: ignore[assignment]
            room_draw.pool_vids = timed_read  # type: ignore[assignment]
            # Redis's own time per call (not the client's, which a busy machine stretches).
            client.config_set("slowlog-log-slower-than", 1_000)  # calls over 1 ms
            client.config_set("slowlog-max-len", 10_000)
            client.slowlog_reset()
            began = time.perf_counter()
            done = room_draw.make_draw(client, engine.keys, room, run)
            draw_s = time.perf_counter() - began
            sha = engine._scripts["place_drawn"].sha
            logged = [(e["duration"], e["command"].split()) for e in client.slowlog_get(10_000)]
            held = [us / 1000 for us, words in logged if words[1:2] == [sha.encode()]]
            room_draw.draw.drawn_order = pure_order  # type: ignore[assignment]
            made = receipts(client, engine, room)
        finally:
            server.stop()
    batches = calls["place_drawn"]
    write_s = sum(batches) + sum(calls["finish_draw"])
    result = {
        "entrants": done.entrants,
        "batch": room_draw.BATCH,
        "draw_s": round(draw_s, 3),
        "read_s": round(read_s[0], 3),
        "order_s": round(order_s[0], 3),
        "ids_and_root_s": round(draw_s - read_s[0] - order_s[0] - write_s, 3),
        "write_s": round(write_s, 3),
        "batch_ms_max": round(max(batches) * 1000, 2),
        "batch_ms_median": round(statistics.median(batches) * 1000, 2),
        "batch_ms_p99": round(sorted(batches)[int(len(batches) * 0.99)] * 1000, 2),
        "redis_batch_ms_max": round(max(held), 2),
        "redis_batch_ms_median": round(statistics.median(held), 2),
        "redis_batches": len(held),
        "enter_ms_median": round(statistics.median(enters) * 1000, 3),
    }
    result["batch_to_enter"] = round(result["batch_ms_median"] / result["enter_ms_median"], 1)
    result |= made
    print(json.dumps(result, indent=2))
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
