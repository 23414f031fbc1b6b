"""What a primary's crash loses to asynchronous replication, and what ``WAIT 1`` costs to avoid it.

A local Redis Cluster (3 primaries + 3 replicas, tests/redis_cluster.py) holds one open room;
``WRITERS`` processes enter new visitors into it as fast as they can (each ``enter`` is one Lua
script that takes a ticket: the write whose loss would hand a ticket number out twice), each on
a connection to the room's primary. After ``STEADY_S`` seconds the primary is killed (SIGKILL);
the writers carry on against the promoted replica. Lost = tickets the writers were told they
had minus the tickets the promoted replica's room counted at the end (each enter takes exactly
one ticket, and nobody enters twice).

Run twice: plain, and with ``WAIT 1 <ms>`` pipelined after each script on the same connection
(WAIT only waits for the writes of its own connection). Reports enters/s and latency in the
steady phase, and the loss. Writes ``bench/results/cluster_failover.json``.
Run: ``python bench/cluster_failover.py``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]
# bench/http.py would stand for the standard library's http (urllib.request imports it): this
# folder goes after the standard library on the path, where sibling benchmarks are still found.
_BENCH = str(ROOT / "bench")
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _BENCH] + [_BENCH]

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.queue.connection.redis_link import connect  # noqa: E402
from redis_cluster import local_cluster  # noqa: E402

WRITERS = 4
STEADY_S = 4.0
AFTER_S = 3.0
WAIT_MS = 100
LAG_S = 1.5
RESULTS = ROOT / "bench" / "results" / "cluster_failover.json"


def writer(
    url: str, room: str, wait: bool, index: int, ready: Any, calm: Any, stop: Any, out: Any
) -> None:
    """Enter new visitors until ``stop``: (vid, ticket) acknowledged, latencies and duration of
    the steady phase (while ``calm`` is set: before any freeze or crash), failures."""
    cluster = connect(url, timeout=2)
    engine = Engine(cluster)
    script = engine._scripts["enter"]
    base = engine.keys.room_base(room)
    acked: list[tuple[str, int]] = []
    steady: list[float] = []
    failures = 0
    node: redis.Redis | None = None
    first: float | None = None
    last = 0.0
    n = 0
    ready.wait()  # every writer connected: the steady phase starts for all at once
    while not stop.is_set():
        vid = f"w{index}-{n}"
        n += 1
        try:
            if node is None:
                node = cluster.get_node_from_key(base).redis_connection  # type: ignore[union-attr]
            started = time.perf_counter()
            pipe = node.pipeline(transaction=False)
            script(keys=[base], args=[vid, "s-" + vid, 10, ""], client=pipe)
            if wait:
                pipe.execute_command("WAIT", 1, WAIT_MS)
            raw = pipe.execute()
            took = time.perf_counter() - started
        except (redis.RedisError, OSError):
            failures += 1
            node = None
            try:
                cluster.nodes_manager.initialize()  # type: ignore[union-attr]
            except Exception:  # the whole cluster may look down for a moment
                time.sleep(0.05)  # back off while the cluster elects a new primary
            continue
        if calm.is_set():
            steady.append(took)
            if first is None:
                first = started
            last = started + took
        acked.append((vid, int(raw[0][1])))
    rate = len(steady) / (last - first) if first is not None and last > first else 0.0
    out.put({"acked": acked, "steady": steady, "rate": rate, "failures": failures})


def run(wait: bool, lag_s: float = 0.0) -> dict[str, Any]:
    """One run: plain or with WAIT; its figures. ``lag_s``: the replica is frozen (SIGSTOP) that
    long before the crash and thawed after it, as a replica that fell behind would be."""
    with local_cluster() as cluster:
        client = connect(cluster.url, timeout=30)
        engine = Engine(client)
        config = {"slug": "busy", "name": "Drop", "redirectUrl": "https://shop.example/co"}
        room = engine.create_room(
            "bench", config | {"ratePerMinute": 60, "maxWaiting": 10_000_000}
        )["id"]
        engine.open(room)
        doomed = cluster.primary_for(engine.keys.room(room))
        ctx = mp.get_context("spawn")
        calm, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
        ready = ctx.Barrier(WRITERS + 1)
        calm.set()
        procs = [
            ctx.Process(target=writer, args=(cluster.url, room, wait, i, ready, calm, stop, out))
            for i in range(WRITERS)
        ]
        for p in procs:
            p.start()
        replica = cluster.node(cluster.replica_of(doomed))
        ready.wait(120)
        time.sleep(STEADY_S)  # the load runs a while before the crash
        calm.clear()
        if lag_s:
            replica.process.send_signal(signal.SIGSTOP)
            time.sleep(lag_s)
        killed = time.monotonic()
        cluster.kill(doomed)
        if lag_s:
            replica.process.send_signal(signal.SIGCONT)
        cluster.wait_promoted(doomed)
        promoted_after = time.monotonic() - killed
        time.sleep(AFTER_S)
        stop.set()
        results = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(30)
        tickets = engine.stats(room).tickets
        client.close()
    acked = [a for r in results for a in r["acked"]]
    steady = sorted(t for r in results for t in r["steady"])
    ticket_numbers = [t for _, t in acked]
    return {
        "wait": f"WAIT 1 {WAIT_MS}" if wait else None,
        "replica_frozen_before_crash_s": lag_s,
        "writers": WRITERS,
        "steady_enters_per_s": round(sum(r["rate"] for r in results), 1),
        "steady_latency_ms_p50": round(statistics.median(steady) * 1000, 3),
        "steady_latency_ms_p99": round(steady[int(len(steady) * 0.99)] * 1000, 3),
        "promoted_after_s": round(promoted_after, 2),
        "acknowledged_enters": len(acked),
        "tickets_counted_after": tickets,
        "lost_tickets": len(acked) - tickets,
        "ticket_numbers_handed_twice": len(ticket_numbers) - len(set(ticket_numbers)),
        "failed_calls": sum(r["failures"] for r in results),
    }


def main() -> None:
    figures: dict[str, Any] = {
        "plain": run(wait=False),
        "wait": run(wait=True),
        "plain_lagging_replica": run(wait=False, lag_s=LAG_S),
        "wait_lagging_replica": run(wait=True, lag_s=LAG_S),
    }
    figures["note"] = (
        "loopback, 2 shared cores: replication lag is far below a LAN's; each writer has one "
        "connection to the room's primary and pipelines the enter script (and WAIT) on it"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
