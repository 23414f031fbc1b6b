"""Edge benchmark: what ``anteroom.edge`` costs an admitted visitor, through real gunicorn.

One Flask app, served twice by gunicorn (gthread, keep-alive, one worker each, as on a small
site): once behind ``AnteroomEdge`` and once bare. The client (threads on keep-alive
``http.client`` connections, in this process) loads one server at a time, in interleaved rounds
(ABBA, so drift hits both alike); each figure is the median over rounds. Every request carries the
same valid admission cookie, so the protected server takes the fast path: the offline check, no
call to Anteroom (a fresh admission per round, so none is due for renewal). ``verify_us`` is one
offline ``verify_admission`` in this process; ``middleware_us`` what the middleware adds to a
request whose admission it verified before; ``*_cpu_us`` the server worker's CPU per request.

Run: ``python bench/edge.py [--rounds 6] [--seconds 3]``. Writes ``bench/results/edge.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run as a script, this folder comes first on sys.path, and bench/http.py would then shadow the
# standard library's http (which http.client, Flask and gunicorn import).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]  # the tests' server harness

import argparse  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from typing import Any  # noqa: E402

from anteroom.sdk import tokens  # noqa: E402
from anteroom.verify import verify_admission  # noqa: E402
from helpers import free_port  # noqa: E402
from live_server import ServerProcess  # noqa: E402

ROOM = "bench-drop"
PATH = "/checkout/item"
TARGET = 0.95


def bench_app(protected: bool) -> Any:
    """The site: one small endpoint; behind the edge when ``protected``."""
    from flask import Flask

    from anteroom.edge import AnteroomEdge

    app = Flask("bench-shop")

    @app.get(PATH)
    def item() -> str:
        return "one item"

    if protected:
        # Nothing listens at base_url: the fast path must never need Anteroom.
        AnteroomEdge(app, keys=os.environ["BENCH_KEYS"], base_url="http://127.0.0.1:9",
                     public_key="pk_bench", routes={"/checkout": ROOM})  # fmt: skip
    return app


def serve(protected: bool, bind: str) -> None:
    """Run ``bench_app`` under gunicorn (called in a child process)."""
    from gunicorn.app.base import BaseApplication

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            self.cfg.set("bind", bind)
            self.cfg.set("workers", 1)
            self.cfg.set("worker_class", "gthread")
            self.cfg.set("threads", 4)
            self.cfg.set("keepalive", 5)
            self.cfg.set("loglevel", "warning")

        def load(self) -> Any:
            return bench_app(protected)

    Server().run()


def start(protected: bool, keys: str, logs: Path) -> ServerProcess:
    """``bench_app`` under gunicorn in a child process (this script, ``--serve``), ready."""
    port = free_port()
    kind = "protected" if protected else "plain"
    command = [sys.executable, __file__, "--serve", kind, "--bind", f"127.0.0.1:{port}"]
    env = os.environ | {"BENCH_KEYS": keys}
    return ServerProcess(command, port, logs / f"{kind}.log", env=env, name=kind).start()


def cpu_seconds(master: int) -> float:
    """CPU time used so far by the gunicorn worker(s) of ``master`` (Linux /proc)."""
    total = 0.0
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    for pid in children:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total


def load(port: int, cookie: str, seconds: float, threads: int) -> tuple[int, float]:
    """(requests answered, seconds taken) by ``threads`` keep-alive clients over ``seconds``."""
    counts = [0] * threads
    stop_at = time.monotonic() + seconds
    headers = {"Cookie": cookie, "Accept": "text/html"}

    def client(i: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        done = 0
        while time.monotonic() < stop_at:
            connection.request("GET", PATH, headers=headers)
            response = connection.getresponse()
            body = response.read()
            if response.status != 200 or body != b"one item":
                raise RuntimeError(f"unexpected answer {response.status}: {body[:200]!r}")
            done += 1
        connection.close()
        counts[i] = done

    began = time.monotonic()
    workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts), time.monotonic() - began


def status_without_admission(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", PATH, headers={"Accept": "application/json"})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def admission(keyring: tokens.Keyring) -> str:
    now = int(time.time())
    claims = {"q": ROOM, "qr": "qbench", "qj": "s1", "vid": "v1", "env": "bench", "jti": "j1"}
    return tokens.sign(keyring, tokens.ADMISSION, claims | {"iat": now, "exp": now + 3600})


def verify_cost(keyring: tokens.Keyring) -> float:
    """Microseconds for one offline verify (best of 5 batches, as timeit advises)."""
    token, n = admission(keyring), 20_000
    best = min(
        timeit.repeat(lambda: verify_admission(token, keyring, room=ROOM), number=n, repeat=5)
    )
    return best / n * 1e6


def middleware_cost(keyring: tokens.Keyring) -> float:
    """Microseconds the middleware adds to a request with an admission it has seen before
    (its fast path, in this process, around an app that does nothing)."""
    from anteroom.edge import AnteroomMiddleware

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        return []

    middleware = AnteroomMiddleware(app, keys=keyring, base_url="http://127.0.0.1:9",
                                    public_key="pk_bench", routes={"/checkout": ROOM})  # fmt: skip
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": PATH, "RAW_URI": PATH, "QUERY_STRING": "",
               "HTTP_COOKIE": f"_abq={admission(keyring)}", "REMOTE_ADDR": "127.0.0.1"}  # fmt: skip
    n = 50_000
    wrapped = min(timeit.repeat(lambda: middleware(dict(environ), None), number=n, repeat=5))
    bare = min(timeit.repeat(lambda: app(dict(environ), None), number=n, repeat=5))
    return (wrapped - bare) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=6)
    parser.add_argument("--serve", choices=["protected", "plain"])
    parser.add_argument("--bind")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve == "protected", args.bind)
        return

    keyring = tokens.Keyring.generate("kb")
    names = ("protected", "plain")
    logs = Path(tempfile.mkdtemp(prefix="anteroom-bench-edge-"))
    servers = {name: start(name == "protected", keyring.serialize(), logs) for name in names}
    rps: dict[str, list[float]] = {name: [] for name in names}
    cpu_us: dict[str, list[float]] = {name: [] for name in names}
    try:
        cookie = f"_abq={admission(keyring)}"
        for name, server in servers.items():
            # The protected one really enforces: without the cookie it refuses.
            expected = 429 if name == "protected" else 200
            if status_without_admission(server.port) != expected:
                raise RuntimeError(f"the {name} server does not answer {expected} without one")
            load(server.port, cookie, 1.0, args.threads)  # warm up (imports, first connections)
        for r in range(args.rounds):
            cookie = f"_abq={admission(keyring)}"  # fresh: never due for renewal in a round
            for name in names if r % 2 == 0 else names[::-1]:
                server = servers[name]
                assert server.process is not None
                cpu_before = cpu_seconds(server.process.pid)
                answered, took = load(server.port, cookie, args.seconds, args.threads)
                rps[name].append(answered / took)
                cpu_us[name].append((cpu_seconds(server.process.pid) - cpu_before) / answered * 1e6)
            print(f"round {r + 1}: protected {rps['protected'][-1]:6.0f} rps "
                  f"({cpu_us['protected'][-1]:4.0f} us cpu/request)   "
                  f"plain {rps['plain'][-1]:6.0f} rps ({cpu_us['plain'][-1]:4.0f} us)")  # fmt: skip
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(logs, ignore_errors=True)
    protected, plain = statistics.median(rps["protected"]), statistics.median(rps["plain"])
    results = {
        "protected_rps": round(protected),
        "plain_rps": round(plain),
        "ratio": round(protected / plain, 3),
        "verify_us": round(verify_cost(keyring), 2),
        # A visitor's later requests: the verified admission is remembered, only expiry rechecked.
        "middleware_us": round(middleware_cost(keyring), 2),
        # The server's own CPU per request: steadier than throughput on a shared machine.
        "protected_cpu_us": round(statistics.median(cpu_us["protected"]), 1),
        "plain_cpu_us": round(statistics.median(cpu_us["plain"]), 1),
        "rounds": args.rounds,
        "seconds_per_round": args.seconds,
        "client_threads": args.threads,
        "server": "gunicorn gthread, 1 worker x 4 threads, keep-alive; Flask endpoint",
        "cpus": os.cpu_count(),
    }
    print(json.dumps(results, indent=2))
    verdict = "meets" if results["ratio"] >= TARGET else "misses"
    print(f"ratio {results['ratio']} {verdict} the target {TARGET}")
    out = ROOT / "bench" / "results" / "edge.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
