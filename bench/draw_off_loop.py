"""What a 100,000 draw and its receipt tree cost the other greenlets of a gevent worker.

In a gevent worker every request is a greenlet on one event loop; the draw's ordering and the
receipts' tree are seconds of CPU. This patches the standard library as ``anteroom serve``'s
worker does, runs a heartbeat greenlet (a 5 ms sleep in a loop, standing for every other
request and room) and makes draws on an embedded Redis, alternately with the CPU work on the
loop (``inline``: as before, queue/connection/os_threads.py bypassed) and off it (``off_loop``: as
the
service does now), each followed by its opening's receipt tree. Figures per mode, medians of
the rounds: ``draw_s`` and ``tree_s`` wall times, ``stall_ms_max`` the heartbeat's longest gap
(what every other greenlet waited at worst). Beside them, ``first_receipt_ms``: the first poll
answer after a draw in a process, which built the tree inside the request before
(``inline``: the build) and now answers at once without a receipt (``off_loop``). The
ordering's sort is made in runs merged in Python (sdk/draw.drawn_order) so the OS thread
gives the GIL up: one C sort of 100,000 keys held it ~0.7 s.
Run: ``python bench/draw_off_loop.py [--entrants 100000] [--rounds 2] [--out FILE]``; writes
``bench/results/draw_off_loop.json`` by default.
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import gevent  # noqa: E402
import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.draw import room_draw, room_receipts  # noqa: E402
from anteroom.queue.draw.receipt_keys import ReceiptSigner  # noqa: E402
from anteroom.queue.draw.room_receipts import ReceiptBook  # noqa: E402
from anteroom.sdk.tokens import Keyring  # noqa: E402
from draw_service import START, fill  # noqa: E402


class Heartbeat:
    """A greenlet sleeping 5 ms at a time; ``worst`` is its longest gap since :meth:`reset`."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._last = time.perf_counter()
        self._greenlet = gevent.spawn(self._beat)

    def _beat(self) -> None:
        while True:
            gevent.sleep(0.005)
            now = time.perf_counter()
            self.worst = max(self.worst, now - self._last)
            self._last = now

    def reset(self) -> None:
        gevent.sleep(0.02)
        self.worst, self._last = 0.0, time.perf_counter()

    def stop(self) -> None:
        self._greenlet.kill()


def one_round(engine: Engine, room: str, inline: bool, beat: Heartbeat) -> dict[str, float]:
    real = room_draw.off_the_loop
    if inline:
        room_draw.off_the_loop = room_receipts.off_the_loop = lambda f, *a: f(*a)  # type: ignore[assignment]
    try:
        beat.reset()
        began = time.perf_counter()
        room_draw.make_draw(engine.redis, engine.keys, room, engine._run)
        draw_s = time.perf_counter() - began
        draw_stall = beat.worst
        book = ReceiptBook(engine.redis, engine.keys, ReceiptSigner(Keyring.generate("k1")))
        drawn = engine.get_room(room)
        beat.reset()
        began = time.perf_counter()
        if inline:  # as before: the request's receipt() call built it
            book.prepare(drawn)
            first = time.perf_counter() - began
        else:
            book.receipt(drawn, "v0000000")  # answers at once; the build runs meanwhile
            first = time.perf_counter() - began
            while book.receipt(drawn, "v0000000") is None:
                gevent.sleep(0.01)
        tree_s = time.perf_counter() - began
        return {
            "draw_s": draw_s,
            "tree_s": tree_s,
            "stall_ms_max": max(draw_stall, beat.worst) * 1000,
            "first_receipt_ms": first * 1000,
        }
    finally:
        room_draw.off_the_loop = room_receipts.off_the_loop = real  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entrants", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "bench/results/draw_off_loop.json"))
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"inline": [], "off_loop": []}
    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(data, port=0).start()
        try:
            client = redis.Redis.from_url(server.url, decode_responses=True)
            engine = Engine(client)
            beat = Heartbeat()
            for n in range(args.rounds):
                for mode in ("inline", "off_loop") if n % 2 == 0 else ("off_loop", "inline"):
                    room = engine.create_room(
                        "bench", {"slug": f"drop-{n}-{mode}".replace("_", "-"), "name": "Drop",
                                  "maxWaiting": 1_000_000, "redirectUrl": "https://shop.example/"},
                    )["id"]  # fmt: skip
                    engine.set_clock(room, START)
                    engine.open(room, START + 60_000)
                    fill(engine, room, args.entrants)
                    engine.shift_clock(room, 60_000)
                    runs[mode].append(one_round(engine, room, mode == "inline", beat))
                    engine.delete_room(room)
            beat.stop()
        finally:
            server.stop()
    result: dict[str, Any] = {"entrants": args.entrants, "rounds": args.rounds}
    for mode, rounds in runs.items():
        result[mode] = {
            name: round(statistics.median(r[name] for r in rounds), 3) for name in rounds[0]
        }
    result["stall_inline_to_off_loop"] = round(
        result["inline"]["stall_ms_max"] / result["off_loop"]["stall_ms_max"], 1
    )
    print(json.dumps(result, indent=2))
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
