"""One address holding thousands of slow-body connections (issue 32, item 1): other visitors'
/healthz and poll latency without and with the attack, on the service before the connection
limits (a git revision, default 708458e) and after (this tree), side by side in one run.

    python bench/slow_clients.py [--before 708458e] [--connections 9000] [--seconds 12]
        [--out bench/results/slow_clients.json]

Each side is ``anteroom serve`` with its default settings (2 workers of 4,096 connections each;
after: a 10 s request deadline and 256 open connections per address per worker) on one
embedded Redis; the before side runs ``git archive <before>``'s code with this venv. The attacker,
a process of its own from 127.0.0.2 (``tests/slow_bodies.py --hold``), opens N connections that
each send a request's headers and one byte of its body (``Content-Length: 16000``, or chunked,
to the poll and the challenge routes), then keeps N open for the window, opening a new one for
each the server closes. Other visitors, from 127.0.0.1: 6 threads, each a /healthz and a poll
every 0.5 s, each on a fresh connection (a browser polling every few seconds finds its kept-alive
one gone), with a 5 s timeout; an unanswered request counts as 5 s. Also: how many of the
attacker's connections each worker held mid-window, and the workers' CPU seconds in the window.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402
import requests  # noqa: E402

from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.line.room_engine import Engine  # noqa: E402
from anteroom.store.keystore import KeyStore  # noqa: E402
from helpers import free_port, make_room  # noqa: E402
from live_server import LiveServer  # noqa: E402
from slow_bodies import ATTACKER, held_by_workers  # noqa: E402
from visitor_client import Visitor  # noqa: E402

VISITORS = 6
PACE = 0.5  # seconds between one visitor's rounds (a ticket may poll 90 times a minute)
TIMEOUT = 5.0


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, in ms (nearest rank)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def export(revision: str, into: Path) -> Path:
    """The tree of ``revision`` (code, Lua, templates, static files) in ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "backend", "lua", "templates", "static"],
        check=True,
        capture_output=True,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes ``pids`` have used (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class Others:
    """Other visitors: each a /healthz and a poll every ``PACE`` s on fresh connections."""

    def __init__(self, url: str, visitors: list[Visitor]) -> None:
        self.url, self.visitors = url, visitors

    def measure(self, seconds: float) -> dict[str, Any]:
        """Latencies over ``seconds``: p50, p99 and how many were answered in time."""
        took: dict[str, list[float]] = {"healthz": [], "poll": []}
        unanswered = {"healthz": 0, "poll": 0}
        lock = threading.Lock()
        end = time.monotonic() + seconds

        def one(kind: str, call: Any) -> None:
            start = time.perf_counter()
            try:
                answer = call()
                ok = answer.status_code == 200
            except requests.RequestException:
                ok = False
            with lock:
                took[kind].append(time.perf_counter() - start if ok else TIMEOUT)
                unanswered[kind] += not ok

        def run(visitor: Visitor) -> None:
            body = {"apiKey": visitor.api_key, "ticket": visitor.ticket}
            fresh = {"Connection": "close"}
            while (began := time.monotonic()) < end:
                one("healthz", lambda: requests.get(self.url + "/healthz", headers=fresh,
                                                    timeout=TIMEOUT))  # fmt: skip
                one("poll", lambda: requests.post(self.url + "/api/v1/queue/poll", json=body,
                                                  headers=fresh, timeout=TIMEOUT))  # fmt: skip
                time.sleep(max(0.0, began + PACE - time.monotonic()))  # a visitor's pace

        threads = [threading.Thread(target=run, args=(v,)) for v in self.visitors]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {
            kind: {
                "p50_ms": pct(values, 0.5),
                "p99_ms": pct(values, 0.99),
                "answered": f"{len(values) - unanswered[kind]}/{len(values)}",
            }
            for kind, values in took.items()
        }


def side(
    name: str, server: LiveServer, engine: Engine, api_key: str, args: argparse.Namespace
) -> dict[str, Any]:
    """One server's figures: without the attack, then with it."""
    server.start(timeout=120)
    try:
        room = make_room(engine, env="bench", slug=f"calm-{name}", ratePerMinute=1)
        engine.open(room)
        visitors = [Visitor(server.url, api_key) for _ in range(VISITORS)]
        for v in visitors:
            assert v.enter(f"calm-{name}").status_code == 200
            v.close()
        others = Others(server.url, visitors)
        quiet = others.measure(args.seconds)
        print(name, "without the attack", quiet, flush=True)
        command = [sys.executable, str(ROOT / "tests" / "slow_bodies.py"), str(server.port)]
        command += [str(args.connections), "--hold", "--seconds", str(args.seconds + 2)]
        attacker = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert attacker.stdout is not None
            assert attacker.stdout.readline().strip() == "opened"
            workers = server.workers()
            cpu0 = cpu_seconds(workers)
            held: list[dict[int, int]] = []
            sampler = threading.Timer(
                args.seconds / 2,
                lambda: held.append(held_by_workers(server.port, workers, ATTACKER).per_worker),
            )
            sampler.start()
            attacked = others.measure(args.seconds)
            sampler.join()
            cpu = cpu_seconds(workers) - cpu0
            summary = json.loads(attacker.communicate(timeout=120)[0])
        finally:
            attacker.kill()
            attacker.wait()
        attacked |= {
            "attacker": summary,
            "held_per_worker_mid_window": sorted(held[0].values()) if held else None,
            "worker_cpu_seconds": round(cpu, 2),
        }
        print(name, "with the attack", attacked, flush=True)
        return {"without_attack": quiet, "with_attack": attacked}
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="708458e", help="git revision of the before side")
    parser.add_argument("--connections", type=int, default=9000, help="the attacker's, held")
    parser.add_argument("--seconds", type=float, default=12.0, help="each measuring window")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(HERE / "results" / "slow_clients.json"))
    args = parser.parse_args()
    results: dict[str, Any] = {
        "connections": args.connections,
        "window_seconds": args.seconds,
        "workers": args.workers,
        "visitors": VISITORS,
        "pace_seconds": PACE,
        "timeout_seconds": TIMEOUT,
    }
    with tempfile.TemporaryDirectory(prefix="anteroom-bench-slow-") as tmp_name:
        tmp = Path(tmp_name)
        before_tree = export(args.before, tmp / "before")
        store = EmbeddedRedis(tmp / "redis", port=free_port()).start()
        try:
            client = redis.Redis.from_url(store.url, decode_responses=True)
            for name in ("before", "after"):
                prefix = f"{name}:"
                engine = Engine(client, prefix)
                api_key = KeyStore(client, engine.keys).create("bench")[0].public_key
                server = LiveServer(
                    store.url,
                    tmp / f"data-{name}",
                    ANTEROOM_WORKERS=str(args.workers),
                    ANTEROOM_KEY_PREFIX=prefix,
                    ANTEROOM_POW_DIFFICULTY="4",  # the visitors enter at once
                )
                if name == "before":
                    server.command = [sys.executable, "-m", "anteroom.ops.cli", "serve"]
                    assert server.env is not None
                    server.env["PYTHONPATH"] = str(before_tree / "backend")
                    code = subprocess.run(
                        [sys.executable, "-c", "import anteroom; print(anteroom.__file__)"],
                        env=server.env, capture_output=True, text=True, check=True,
                    ).stdout  # fmt: skip
                    assert code.startswith(str(before_tree)), code  # the old code, not this tree
                results[name] = side(name, server, engine, api_key, args)
                results[name]["revision"] = args.before if name == "before" else "this tree"
        finally:
            store.stop()
    results["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)
    return 0


def print_table(results: dict[str, Any]) -> None:
    """The figures, before and after side by side."""
    rows = []
    for phase, label in (("without_attack", "no attack"), ("with_attack", "attacked")):
        for kind in ("healthz", "poll"):
            cells = []
            for name in ("before", "after"):
                f = results[name][phase][kind]
                cells.append(f"{f['p50_ms']:>7} / {f['p99_ms']:>7} ms  ({f['answered']})")
            rows.append((f"{kind} p50/p99, {label}", *cells))
    for name in ("before", "after"):
        attacked = results[name]["with_attack"]
        results[name]["_held"] = (
            f"held {attacked['held_per_worker_mid_window']}, "
            f"{attacked['attacker']['attempts']} attempts"
        )
    rows.append(("attacker's connections", results["before"]["_held"], results["after"]["_held"]))
    rows.append(
        (
            "worker CPU in the window",
            f"{results['before']['with_attack']['worker_cpu_seconds']} s",
            f"{results['after']['with_attack']['worker_cpu_seconds']} s",
        )
    )
    for name in ("before", "after"):
        del results[name]["_held"]
    width = max(len(r[0]) for r in rows)
    print(f"\n{results['connections']} slow-body connections from {ATTACKER}:")
    print(f"{'':{width}}  {'before (' + results['before']['revision'] + ')':38}  after")
    for label, before, after in rows:
        print(f"{label:{width}}  {before:38}  {after}")


if __name__ == "__main__":
    sys.exit(main())
