"""What each room policy (issue 26) costs a poll and an entry in Redis, side by side with a
plain fifo room, in one process on one embedded Redis, the rooms alternated round by round.

Per round and per rule, in a fresh room with its clock pinned and rate 1 (nothing earned, so
nobody is dealt and every call does the same work): ``enter_us`` (a newcomer, as the rule
answers it: filed, admitted or refused) and ``poll_us`` (poll.lua once on each waiting spot).
Figures are Redis's own (usec / calls of EVALSHA over a batch, ``INFO commandstats``); the
ratio is the rule's over the fifo room's of the same round, and medians over rounds.
Rules whose cost is outside Redis (bypass rules: the edge's, or the service's, Python;
sessionRenewal: a claim in the admission) are not here: bench/bypass.py measures the edge's,
bench/service_bypass.py the service's.

Run: ``python bench/rules.py [--rounds N] [--batch N]``; writes bench/results/rules.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
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
from anteroom.queue.line import room_engine as eng  # noqa: E402
from anteroom.sdk.tokens import InviteClaims  # noqa: E402

HOUR = 3_600_000
FAR = 2**50


def room_with(engine: Engine, slug: str, **config: Any) -> tuple[str, int]:
    """An open room (clock pinned, rate 1 unless told) and its now."""
    room = str(engine.create_room("bench", engine_bench.ROOM_CONFIG | {"slug": slug,
                                  "ratePerMinute": 1} | config)["id"])  # fmt: skip
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)
    engine.open(room)
    return room, now


def per_call_us(engine: Engine, calls: Callable[[], Any]) -> float:
    """Redis's usec per script call over ``calls`` (a thunk making the batch)."""
    engine.redis.config_resetstat()
    calls()
    usec, count = engine_bench.evalsha_usec(engine.redis)
    return usec / count


def setups() -> dict[str, Callable[[Engine, str], tuple[str, Callable[[str], Any]]]]:
    """Each rule: make its room, and how a newcomer enters it."""

    def plain(**config: Any) -> Callable[[Engine, str], tuple[str, Callable[[str], Any]]]:
        def make(engine: Engine, slug: str) -> tuple[str, Callable[[str], Any]]:
            room, _ = room_with(engine, slug, **config)
            return room, lambda vid: engine.enter(room, vid, "s", 10)

        return make

    def event(
        running: bool, prequeue: bool = False
    ) -> Callable[[Engine, str], tuple[str, Callable[[str], Any]]]:
        def make(engine: Engine, slug: str) -> tuple[str, Callable[[str], Any]]:
            room, now = room_with(engine, slug)
            starts = now - HOUR if running else now + HOUR
            window = {"id": "ev000000000001", "startsAt": starts, "endsAt": starts + 2 * HOUR}
            if prequeue:
                window["preQueueOpensAt"] = now - HOUR
            engine.set_events(room, "0", [window | {"overrides": {"ratePerMinute": 2}}])
            return room, lambda vid: engine.enter(room, vid, "s", 10)

        return make

    def invited(engine: Engine, slug: str) -> tuple[str, Callable[[str], Any]]:
        room, _ = room_with(engine, slug)
        claims = InviteClaims(room, "bench", "iv-bench", FAR, 10_000_000, "priority")
        return room, lambda vid: engine.enter(room, vid, "s", 10, invite=claims)

    def rejecting(engine: Engine, slug: str) -> tuple[str, Callable[[str], Any]]:
        room, _ = room_with(engine, slug, mode="reject")

        def enter(vid: str) -> Any:
            try:
                return engine.enter(room, vid, "s", 10)
            except eng.RoomClosed:
                return None

        return room, enter

    net = {"activeSessions": 10_000_000, "arrivalsPerMinute": 1, "coolDownSec": 86_400}
    return {
        "fifo": plain(),
        "random": plain(mode="random"),
        "reject (entries refused; polls of those in line before)": rejecting,
        "event running (rate overridden)": event(True),
        "event to come": event(False),
        "event's pre-queue collecting": event(False, prequeue=True),
        "safety net queueing": plain(safetyNet=net),
        "invite, priority lane": invited,
    }


def measure(engine: Engine, name: str, n: int, slug: str) -> dict[str, float]:
    """One rule's figures in a fresh room (deleted after)."""
    room, enter = setups()[name](engine, slug)
    vids = [f"v{i}" for i in range(n)]
    entering = vids
    if name.startswith("reject"):
        engine.update_room(room, {"mode": "fifo"})
        for vid in vids:
            engine.enter(room, vid, "s", 10)  # in line before the room turned to reject
        engine.update_room(room, {"mode": "reject"})
        entering = [f"w{i}" for i in range(n)]
    enter_us = per_call_us(engine, lambda: [enter(v) for v in entering])
    poll_us = per_call_us(
        engine,
        lambda: [engine.poll(room, v, t, 1, near_head=True) for t, v in enumerate(vids, 1)],
    )
    engine.delete_room(room)
    return {"enter_us": enter_us, "poll_us": poll_us}


def one_round(engine: Engine, n: int, tag: str, order: list[str]) -> dict[str, dict[str, float]]:
    return {name: measure(engine, name, n, f"r{i}-{tag}") for i, name in enumerate(order)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--batch", type=int, default=500, help="spots per room (≤ 1,666)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "rules.json"))
    args = parser.parse_args()
    rounds: list[dict[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(data, port=0).start()
        try:
            client = redis.Redis.from_url(server.url, decode_responses=True)
            engine = Engine(client, prefix="rules:")
            version = client.info("server")["redis_version"]
            names = list(setups())
            for i in range(args.rounds):
                # rotate the order, so no rule always finds a warmer (or colder) server
                order = names[i % len(names) :] + names[: i % len(names)]
                rounds.append(one_round(engine, args.batch, str(i), order))
        finally:
            server.stop()
    result: dict[str, Any] = {"redis_version": version, "rounds": args.rounds}
    result |= {"batch": args.batch, "load_average": round(os.getloadavg()[0], 1), "rules": {}}
    for name in rounds[0]:
        figures: dict[str, Any] = {}
        for kind in ("enter_us", "poll_us"):
            median = statistics.median(r[name][kind] for r in rounds)
            ratio = statistics.median(r[name][kind] / r["fifo"][kind] for r in rounds)
            figures[kind] = round(median, 2)
            figures[kind.replace("_us", "_vs_fifo")] = round(ratio, 3)
        result["rules"][name] = figures
        print(
            f"{name:<58} enter {figures['enter_us']:7.2f} us ({figures['enter_vs_fifo']:.3f}x)"
            f"  poll {figures['poll_us']:7.2f} us ({figures['poll_vs_fifo']:.3f}x)"
        )
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
