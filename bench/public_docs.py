"""What a draw's public documents cost the service, before (a git revision) and after (this
tree), side by side in one run (issue 32 item 4).

One embedded Redis; one ``anteroom serve`` (gunicorn, ``--workers`` gevent workers) per side, the
before one running the revision's code from a ``git worktree`` of it, each with its own key
prefix. Each side has a drawn room of ``--entrants`` entrants (fairness.json and its 3.35 MB list
at 50,000) and another environment's room whose waiting spots are polled.

Figures, per side:

- ``cost``: per request, the web workers' CPU (utime + stime of their processes) and Redis's
  (``INFO commandstats`` usec), over ``--requests`` requests one after another, less what the
  idle server spends in as long: for the list (plain, gzip, revalidated with its ETag, HEAD) and
  for fairness.json;
- ``polls``: another room's poll latency (p50/p99, ms, from a separate process: 40 polls a
  second from 8 threads) with nobody fetching, then while ``--fetchers`` clients fetch the list
  as fast as they can for ``--seconds`` (each from its own 127.0.0.x address, no validators,
  no gzip; the after side's per-address limit and egress cap lifted: what a request costs
  alone) — and the after code as shipped (its default limit and egress cap, "shipped"), with the
  same fetchers from one address and from 20.

Rounds alternate the sides. Run: ``python bench/public_docs.py [--before 708458e] [--entrants
50000] [--rounds 2] [--polite] [--out public_docs.json]``; writes bench/results/<out>.
``--polite`` adds fetchers from one address that wait as long as a 429's Retry-After says.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
# bench/http.py would shadow the standard library's http for whatever imports it: drop bench/.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]

import http.client  # noqa: E402

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.sdk.tokens import Keyring  # noqa: E402
from anteroom.store.keystore import KeyStore  # noqa: E402
from anteroom.visit.answers import queue_token  # noqa: E402
from live_server import LiveServer  # noqa: E402

MINUTE = 60_000
NO_LIMIT = "1000000/minute"
POLLERS = 40  # spots of the other room, each polled once a second (under its 90 a minute)


# -- measuring ---------------------------------------------------------------------------------


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of ``pids`` (Linux /proc)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def redis_usec(client: redis.Redis) -> float:
    """Microseconds Redis has spent in commands (all of them) since its stats were reset."""
    return float(sum(v["usec"] for v in client.info("commandstats").values()))


def fetch(
    port: int, method: str, path: str, headers: dict[str, str], source: str = "127.0.0.1"
) -> tuple[int, dict[str, str], int]:
    """One request on a new connection from ``source``: status, headers, body length."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        conn.request(method, path, headers=headers)
        got = conn.getresponse()
        return got.status, dict(got.getheaders()), len(got.read())
    finally:
        conn.close()


class Side:
    """One server (before or after) with its drawn room and the other room's tickets."""

    def __init__(self, name: str, server: LiveServer, engine: Engine, key: str) -> None:
        self.name, self.server, self.engine, self.key = name, server, engine, key
        self.tickets: list[str] = []
        self.other_key = ""

    @property
    def port(self) -> int:
        return self.server.port

    def list_path(self) -> str:
        return f"/queue/drop/fairness/entrants.json?key={self.key}"

    def document_path(self) -> str:
        return f"/queue/drop/fairness.json?key={self.key}"

    def idle_rates(self, seconds: float = 2.0) -> tuple[float, float]:
        """What the idle server spends a second: web CPU s, Redis usec."""
        pids = self.server.workers()
        cpu, usec = cpu_seconds(pids), redis_usec(self.engine.redis)
        time.sleep(seconds)  # measuring the idle server's own background work
        return (cpu_seconds(pids) - cpu) / seconds, (redis_usec(self.engine.redis) - usec) / seconds

    def cost(
        self, method: str, path: str, headers: dict[str, str], n: int, idle: tuple[float, float]
    ) -> dict[str, float]:
        """Per request: web CPU ms and Redis ms (idle spending taken off), bytes answered."""
        fetch(self.port, method, path, headers)  # each worker builds its documents first
        fetch(self.port, method, path, headers)
        pids = self.server.workers()
        cpu, usec, t0 = cpu_seconds(pids), redis_usec(self.engine.redis), time.monotonic()
        sizes, statuses = [], set()
        for _ in range(n):
            status, _, size = fetch(self.port, method, path, headers)
            sizes.append(size)
            statuses.add(status)
        elapsed = time.monotonic() - t0
        web = cpu_seconds(pids) - cpu - idle[0] * elapsed
        red = redis_usec(self.engine.redis) - usec - idle[1] * elapsed
        return {
            "web_cpu_ms": round(max(0.0, web) / n * 1e3, 2),
            "redis_ms": round(max(0.0, red) / n / 1e3, 3),
            "bytes": int(statistics.median(sizes)),
            "status": sorted(statuses)[0] if len(statuses) == 1 else -1,
        }


# -- the other room's polls, from their own process ---------------------------------------------


def poller(port: int, key: str, tickets: list[str], seconds: float, out: Any) -> None:
    """Poll ``tickets`` for ``seconds``, each once a second from one of 8 threads (so a slow
    answer delays no other poll); send the latencies."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    start = time.monotonic()

    def share(offset: int) -> None:
        mine = list(tickets[offset::8])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        i = 0
        while time.monotonic() - start < seconds:
            pause = start + i + offset / 8 - time.monotonic()
            if pause > 0:
                time.sleep(pause)  # the poller's cadence: its share once a second
            for which, ticket in enumerate(mine):
                body = json.dumps({"apiKey": key, "ticket": ticket})
                t0 = time.perf_counter()
                try:
                    conn.request(
                        "POST", "/api/v1/queue/poll", body, {"Content-Type": "application/json"}
                    )
                    answer = conn.getresponse()
                    raw = answer.read()
                    took = (time.perf_counter() - t0) * 1e3
                    with lock:
                        latencies.append(took)
                        if answer.status != 200:
                            errors[0] += 1
                    if answer.status == 200:
                        mine[which] = json.loads(raw).get("queueToken") or ticket
                except (OSError, http.client.HTTPException):
                    with lock:
                        errors[0] += 1
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            i += 1

    threads = [threading.Thread(target=share, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.send((latencies, errors[0]))


def quantiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    if not ordered:
        return {"p50_ms": -1.0, "p99_ms": -1.0, "polls": 0}
    return {
        "p50_ms": round(ordered[len(ordered) // 2], 1),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
        "polls": len(ordered),
    }


def polls_while(
    side: Side, seconds: float, load: Callable[[threading.Event], None] | None
) -> dict[str, Any]:
    """The other room's poll latencies for ``seconds``, with ``load`` running meanwhile."""
    ours, theirs = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.Process(
        target=poller, args=(side.port, side.other_key, side.tickets, seconds, theirs)
    )
    stop = threading.Event()
    threads = []
    if load is not None:
        threads = [threading.Thread(target=load, args=(stop,), daemon=True)]
        threads[0].start()
        time.sleep(1.0)  # the fetchers under way before the polls are timed
    process.start()
    latencies, errors = ours.recv()
    process.join()
    stop.set()
    for thread in threads:
        thread.join()
    # The machine's 1-minute load as the polls ended: a busy machine moves the quiet p99 too.
    return quantiles(latencies) | {"poll_errors": errors, "load1": round(os.getloadavg()[0], 2)}


def fetcher_loop(
    port: int, path: str, source: str, stop: threading.Event, answered: Any, polite: bool = False
) -> None:
    """One client fetching ``path`` back to back on a keep-alive connection, reading each body
    into one reused buffer (the client's own CPU kept small: it shares the machine)."""
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    sock: socket.socket | None = None
    while not stop.is_set():
        try:
            if sock is None:
                sock = socket.create_connection(("127.0.0.1", port), 30, (source, 0))
            sock.sendall(request)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                head += chunk
            header, _, rest = head.partition(b"\r\n\r\n")
            status = int(header.split(b" ", 2)[1])
            length, retry_after = 0, 1.0
            for line in header.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
                elif name.strip().lower() == b"retry-after":
                    retry_after = float(value)
            left = length - len(rest)
            while left > 0:
                got = sock.recv_into(view, min(left, len(buffer)))
                if not got:
                    raise ConnectionError("closed")
                left -= got
        except (OSError, ValueError, IndexError):
            status = 0
            if sock is not None:
                sock.close()
            sock = None
        answered[status] = answered.get(status, 0) + 1
        if status == 429:
            # told to wait: a polite client waits as long, an impatient one asks again soon
            stop.wait(retry_after if polite else 0.05)
    if sock is not None:
        sock.close()


def fetchers(
    side: Side, count: int, one_address: bool, polite: bool = False
) -> Callable[[threading.Event], None]:
    """``count`` clients fetching the list back to back until told to stop."""
    answered: dict[int, int] = {}

    def run(stop: threading.Event) -> None:
        workers = [
            threading.Thread(
                target=fetcher_loop,
                args=(side.port, side.list_path(), f"127.0.0.{1 if one_address else n + 2}",
                      stop, answered, polite),
                daemon=True,
            )
            for n in range(count)
        ]  # fmt: skip
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        run.answered = dict(answered)  # type: ignore[attr-defined]

    return run


# -- set-up ------------------------------------------------------------------------------------


def drawn_room(engine: Engine, entrants: int) -> str:
    room = str(
        engine.create_room(
            "bench",
            {"slug": "drop", "name": "Drop", "redirectUrl": "https://x.example/",
             "maxWaiting": entrants + 10},
        )["id"]
    )  # fmt: skip
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)  # pinned: nobody is admitted while the bench runs
    engine.open(room, now + MINUTE)
    pipe_size = 1000
    for start in range(0, entrants, pipe_size):
        for i in range(start, min(entrants, start + pipe_size)):
            engine.enter(room, f"v{i}", "s", 10)
    engine.shift_clock(room, MINUTE)
    assert engine.tick(room).draw_due
    assert len(engine.drawn_entrants(room)) == entrants
    return room


def other_room(engine: Engine, keyring: Keyring) -> list[str]:
    """Another environment's room: POLLERS spots waiting behind 20, and their tickets."""
    room_id = str(
        engine.create_room(
            "other",
            {"slug": "line", "name": "Line", "redirectUrl": "https://x.example/",
             "ratePerMinute": 1, "abandonAfterSec": 3600},
        )["id"]
    )  # fmt: skip
    engine.open(room_id)
    for i in range(20):
        engine.enter(room_id, f"ahead{i}", "s", 10)
    room = engine.get_room(room_id)
    signer = type("Signer", (), {"keyring": keyring})()  # all queue_token reads of the services
    tickets = []
    for i in range(POLLERS):
        answer = engine.enter(room_id, f"p{i}", f"jp{i}", 10)
        tickets.append(queue_token(room, signer, f"p{i}", answer))  # type: ignore[arg-type]
    return tickets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default="708458e")
    parser.add_argument("--entrants", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fetchers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--polite", action="store_true", help="also fetchers honouring 429s")
    parser.add_argument("--out", default="public_docs.json", help="under bench/results/")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="anteroom-bench-public-"))
    before_tree = tmp / "before"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before_tree), args.before],
        check=True,
        capture_output=True,
    )
    embedded = EmbeddedRedis(tmp / "redis", port=0).start()
    keys = Keyring.generate().serialize()
    keyring = Keyring.parse(keys)
    sides: dict[str, Side] = {}
    servers: list[LiveServer] = []
    try:
        trees = {"before": before_tree, "after": ROOT, "after_limited": ROOT}
        # One set of rooms, served in turn by each side's server (the others idle meanwhile).
        prefix = "benchpublic:"
        client = redis.Redis.from_url(embedded.url, decode_responses=True)
        engine = Engine(client, prefix=prefix)
        store = KeyStore(client, engine.keys)
        key, other_key = store.create("bench")[0].public_key, store.create("other")[0].public_key
        t0 = time.monotonic()
        drawn_room(engine, args.entrants)
        tickets = other_room(engine, keyring)
        print(f"{args.entrants} entrants drawn in {time.monotonic() - t0:.1f} s")
        for name, tree in trees.items():
            env = {
                "PYTHONPATH": str(tree / "backend"),
                "ANTEROOM_KEYS": keys,
                "ANTEROOM_KEY_PREFIX": prefix,
                "ANTEROOM_WORKERS": str(args.workers),
                "ANTEROOM_LIMIT_CHALLENGE": NO_LIMIT,
            }
            if name == "after":  # the costs of a request alone: no limit, no egress cap
                env["ANTEROOM_LIMIT_FAIRNESS"] = NO_LIMIT
                env["ANTEROOM_FAIRNESS_EGRESS_MB"] = "0"
            server = LiveServer(embedded.url, tmp / f"data-{name}", **env)
            side = Side(name, server, engine, key)
            side.other_key, side.tickets = other_key, tickets
            server.start()
            servers.append(server)
            sides[name] = side

        results: dict[str, Any] = {
            "entrants": args.entrants,
            "workers": args.workers,
            "fetchers": args.fetchers,
            "seconds": args.seconds,
            "before": args.before,
            "rounds": [],
        }
        kinds: dict[str, tuple[str, Callable[[Side], str], dict[str, str]]] = {
            "list_get": ("GET", Side.list_path, {}),
            "list_get_gzip": ("GET", Side.list_path, {"Accept-Encoding": "gzip"}),
            "list_head": ("HEAD", Side.list_path, {}),
            "document_get": ("GET", Side.document_path, {}),
        }
        for round_no in range(args.rounds):
            order = ["before", "after"] if round_no % 2 == 0 else ["after", "before"]
            one: dict[str, Any] = {}
            for name in order:
                side = sides[name]
                idle = side.idle_rates()
                costs = {
                    kind: side.cost(method, path(side), headers, args.requests, idle)
                    for kind, (method, path, headers) in kinds.items()
                }
                _, got, _ = fetch(side.port, "GET", side.list_path(), {})
                if "ETag" in got:
                    tagged = {"If-None-Match": got["ETag"]}
                    costs["list_revalidated"] = side.cost(
                        "GET", side.list_path(), tagged, args.requests, idle
                    )
                quiet = polls_while(side, args.seconds, None)
                load = fetchers(side, args.fetchers, one_address=False)
                busy = polls_while(side, args.seconds, load)
                one[name] = {
                    "cost": costs,
                    "polls_quiet": quiet,
                    "polls_fetched": busy | {"answers": getattr(load, "answered", {})},
                }
                print(f"round {round_no} {name}: {json.dumps(one[name])}")
            limited = sides["after_limited"]
            one["after_limited"] = {"polls_quiet": polls_while(limited, args.seconds, None)}
            phases = (("one_address", True, False), ("many_addresses", False, False))
            if args.polite:
                phases += (("one_address_polite", True, True),)
            for phase, one_address, polite in phases:
                load = fetchers(limited, args.fetchers, one_address, polite)
                one["after_limited"][f"polls_fetched_{phase}"] = polls_while(
                    limited, args.seconds, load
                ) | {"answers": getattr(load, "answered", {})}
            print(f"round {round_no} after_limited: {json.dumps(one['after_limited'])}")
            results["rounds"].append(one)
        results["summary"] = summary(results["rounds"])
        print(json.dumps(results["summary"], indent=2))
        out = ROOT / "bench" / "results" / args.out
        out.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        for server in servers:
            server.stop()
        embedded.stop()
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before_tree)],
            check=False,
            capture_output=True,
        )


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over rounds, before and after side by side, and the ratios that matter."""

    def med(path: list[str], side: str) -> float:
        values = []
        for r in rounds:
            node: Any = r[side]
            for step in path:
                node = node.get(step) if isinstance(node, dict) else None
            if isinstance(node, int | float):
                values.append(float(node))
        return round(statistics.median(values), 3) if values else -1.0

    out: dict[str, Any] = {}
    for kind in ("list_get", "list_get_gzip", "list_head", "list_revalidated", "document_get"):
        for figure in ("web_cpu_ms", "redis_ms", "bytes"):
            out[f"{kind}.{figure}"] = {
                side: med(["cost", kind, figure], side) for side in ("before", "after")
            }
    for phase in ("polls_quiet", "polls_fetched"):
        for q in ("p50_ms", "p99_ms"):
            out[f"{phase}.{q}"] = {side: med([phase, q], side) for side in ("before", "after")}
    for side in ("before", "after"):
        quiet = out["polls_quiet.p99_ms"][side]
        out[f"p99_fetched_over_quiet.{side}"] = (
            round(out["polls_fetched.p99_ms"][side] / quiet, 2) if quiet > 0 else -1.0
        )
    shipped = ("polls_quiet", "polls_fetched_one_address", "polls_fetched_many_addresses")
    for phase in (*shipped, "polls_fetched_one_address_polite"):
        for q in ("p50_ms", "p99_ms"):
            out[f"shipped.{phase}.{q}"] = med([phase, q], "after_limited")
    quiet = out["shipped.polls_quiet.p99_ms"]
    for phase in ("one_address", "many_addresses", "one_address_polite"):
        fetched = out[f"shipped.polls_fetched_{phase}.p99_ms"]
        out[f"shipped.p99_fetched_over_quiet.{phase}"] = (
            round(fetched / quiet, 2) if quiet > 0 else -1.0
        )
    loads = [p["load1"] for r in rounds for v in r.values() for p in _polls(v) if "load1" in p]
    out["load1"] = {"min": min(loads), "max": max(loads)} if loads else {}
    return out


def _polls(side: Any) -> list[dict[str, Any]]:
    """A side's poll figures (each a dict with p50_ms)."""
    found = side.values() if isinstance(side, dict) else ()
    return [v for v in found if isinstance(v, dict) and "p50_ms" in v]


if __name__ == "__main__":
    main()
