"""HTTP servers benchmark (issue 31, item 3): what the server itself costs a request.

A trivial app (a 2-byte ``ok``), two workers each, side by side in one run under Debian's
``wrk``, with keep-alive and with a new connection per request (``-H 'Connection: close'``):

* ``gunicorn-gevent``: gunicorn with its gevent worker, which ``anteroom serve``'s worker class
  (``anteroom.ops.gevent_worker.Worker``) extends, the same ``worker_connections``, a WSGI app;
* ``gunicorn-uvicorn``: gunicorn with uvicorn's worker (``uvicorn.workers.UvicornWorker``) and
  the same app as ASGI;
* ``granian-wsgi``: granian (the ``bench`` extra: ``pip install -e '.[bench]'``), WSGI;
* ``anteroom-healthz``: the real app's ``GET /healthz`` under today's server (``anteroom serve``,
  2 workers, its access log on, an embedded Redis).

No access log on the trivial servers (gunicorn's and granian's default). Rounds are interleaved
(every server and mode once per round) so all see the same load on a shared machine; each figure
is the median over rounds (min-max beside requests a second). CPU per request: the server's
processes (master and workers, ``/proc``) over the requests wrk counted; wrk's own CPU apart.

``--before <commit>`` adds that commit's ``/healthz`` under ``anteroom serve`` beside this tree's
(``anteroom-healthz-<commit>``): what a change to the serving path costs or saves a request.

Run: ``python bench/servers.py`` (3 rounds of 10 s: about 5 minutes); quick: ``--rounds 1
--seconds 3``. Writes ``bench/results/servers.json`` (``--out``) and prints a table.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py is named like the standard library's ``http`` package: drop this folder.
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]  # the tests' server harness

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from anteroom.ops.cli import WORKER_CONNECTIONS  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from helpers import free_port  # noqa: E402
from live_server import LiveServer, ServerProcess  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "servers.json"
WORKERS = 2
TICK = os.sysconf("SC_CLK_TCK")
WRK = shutil.which("wrk") or "/usr/bin/wrk"
APPS = '''
"""The trivial apps: a 2-byte answer, as WSGI and as ASGI."""

BODY = b"ok"
HEADERS = [("Content-Type", "text/plain"), ("Content-Length", "2")]


def wsgi(environ, start_response):
    start_response("200 OK", HEADERS)
    return [BODY]


async def asgi(scope, receive, send):
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    headers = [(k.lower().encode(), v.encode()) for k, v in HEADERS]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})
'''
MODES = {"keep-alive": [], "new-connection": ["-H", "Connection: close"]}


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU so far of ``pids`` (/proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / TICK


def descendants(root: int) -> list[int]:
    """``root`` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += parents.get(pid, [])
    return found


def trivial_servers(folder: Path) -> dict[str, tuple[ServerProcess, str]]:
    """The trivial servers (not started) and the path each is asked for."""
    (folder / "trivial_apps.py").write_text(APPS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env["PYTHONPATH"] = str(folder)
    python = sys.executable
    servers = {}
    commands = {
        # gunicorn's own gevent worker: ours (ops/gevent_worker.py) wraps a Flask app's
        # wsgi_app in its request guard, which a bare WSGI function does not have.
        "gunicorn-gevent": [python, "-m", "gunicorn", "-w", str(WORKERS), "-k", "gevent",
                            "--worker-connections", str(WORKER_CONNECTIONS),
                            "trivial_apps:wsgi"],
        "gunicorn-uvicorn": [python, "-m", "gunicorn", "-w", str(WORKERS), "-k",
                             "uvicorn.workers.UvicornWorker", "trivial_apps:asgi"],
        "granian-wsgi": [python, "-m", "granian", "--interface", "wsgi", "--workers",
                         str(WORKERS), "trivial_apps:wsgi"],
    }  # fmt: skip
    for name, command in commands.items():
        port = free_port()
        bind = (
            ["--host", "127.0.0.1", "--port", str(port)]
            if "granian" in command
            else ["-b", f"127.0.0.1:{port}"]
        )
        server = ServerProcess(command + bind, port, folder / f"{name}.log", env=env,
                               ready_path="/", cwd=folder, name=name)  # fmt: skip
        servers[name] = (server, "/")
    return servers


def wrk(url: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One wrk run: its figures and its own CPU seconds."""
    command = [WRK, f"-t{args.threads}", f"-c{args.connections}", f"-d{args.seconds}s",
               "--latency", *MODES[mode], url]  # fmt: skip
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _, status, usage = os.wait4(run.pid, 0)
    text = run.stdout.read() if run.stdout else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"wrk failed:\n{text}")
    found = re.search(r"(\d+) requests in ([\d.]+)(m?s)", text)
    if not found:
        raise RuntimeError(f"wrk said:\n{text}")
    requests = int(found.group(1))

    def latency(p: str) -> float | None:
        hit = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if not hit:
            return None
        return round(float(hit.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[hit.group(2)], 3)

    errors = re.search(r"connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {
        "requests": requests,
        "per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),  # type: ignore[union-attr]
        "latency_ms": {"p50": latency("50"), "p99": latency("99")},
        "socket_errors": sum(int(g) for g in errors.groups()) if errors else 0,
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
        "wrk_cpu_seconds": usage.ru_utime + usage.ru_stime,
    }


def measure(server: ServerProcess, path: str, mode: str, args: argparse.Namespace) -> dict:
    assert server.process is not None
    pids = descendants(server.process.pid)
    before = cpu_seconds(pids)
    load = os.getloadavg()[0]
    seen = wrk(server.url + path, mode, args)
    cpu = cpu_seconds(pids) - before
    seen["server_cpu_us_per_request"] = round(cpu * 1e6 / max(1, seen["requests"]), 1)
    seen["wrk_cpu_us_per_request"] = round(
        seen.pop("wrk_cpu_seconds") * 1e6 / max(1, seen["requests"]), 1
    )
    seen["load_average_before"] = round(load, 2)
    return seen


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over rounds, requests a second with their range."""
    rates = [r["per_second"] for r in runs]

    def median(key: str, sub: str | None = None) -> float | None:
        values = [r[key][sub] if sub else r[key] for r in runs]
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 3) if values else None

    return {
        "requests_per_second": round(statistics.median(rates)),
        "requests_per_second_range": [round(min(rates)), round(max(rates))],
        "server_cpu_us_per_request": median("server_cpu_us_per_request"),
        "wrk_cpu_us_per_request": median("wrk_cpu_us_per_request"),
        "latency_ms_p50": median("latency_ms", "p50"),
        "latency_ms_p99": median("latency_ms", "p99"),
        "socket_errors": sum(r["socket_errors"] for r in runs),
        "non_2xx": sum(r["non_2xx"] for r in runs),
        "rounds": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10, help="each wrk run's length")
    parser.add_argument("--threads", type=int, default=1, help="wrk's threads")
    parser.add_argument("--connections", type=int, default=32, help="wrk's connections")
    parser.add_argument(
        "--before",
        default="",
        help="also the real /healthz of this commit (git archive), side by side: "
        "'anteroom-healthz-<commit>'",
    )
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if not Path(WRK).exists():
        raise SystemExit("wrk is missing: apt-get install wrk (make bench installs it)")
    folder = Path(tempfile.mkdtemp(prefix="anteroom-servers-"))
    servers = trivial_servers(folder)
    store = EmbeddedRedis(folder / "redis", port=free_port()).start()
    real = LiveServer(store.url, folder / "anteroom", ANTEROOM_WORKERS=str(WORKERS))
    servers["anteroom-healthz"] = (real, "/healthz")
    if args.before:
        tree = folder / "before"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, capture_output=True,
                                 check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        older = LiveServer(store.url, folder / "anteroom-before", ANTEROOM_WORKERS=str(WORKERS),
                           PYTHONPATH=str(tree / "backend"))  # fmt: skip
        servers[f"anteroom-healthz-{args.before}"] = (older, "/healthz")
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        for server, _ in servers.values():
            server.start(timeout=90)
        for round_ in range(args.rounds):
            order = list(servers.items())
            if round_ % 2:
                order.reverse()
            for name, (server, path) in order:
                for mode in MODES:
                    seen = measure(server, path, mode, args)
                    runs.setdefault((name, mode), []).append(seen)
                    print(f"round {round_ + 1} {name:>17} {mode:>14}: {seen['per_second']:>8.0f}"
                          f" req/s, {seen['server_cpu_us_per_request']} µs CPU a request "
                          f"(load {seen['load_average_before']})", flush=True)  # fmt: skip
    finally:
        for server, _ in servers.values():
            server.stop()
        store.stop()
        shutil.rmtree(folder, ignore_errors=True)
    results: dict[str, Any] = {
        "setup": {"workers": WORKERS, "rounds": args.rounds, "seconds": args.seconds,
                  "wrk": f"-t{args.threads} -c{args.connections}", "cpus": os.cpu_count(),
                  "app": "a 2-byte 'ok' (WSGI; ASGI under uvicorn); anteroom: GET /healthz"},
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "before": args.before or None,
        "servers": {},
    }  # fmt: skip
    for (name, mode), seen in runs.items():
        results["servers"].setdefault(name, {})[mode] = summarise(seen)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n{'server':>17} {'mode':>14} {'req/s':>8} {'(range)':>15} {'CPU µs/req':>10} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'errors':>6}")  # fmt: skip
    for name, modes in results["servers"].items():
        for mode, s in modes.items():
            low, high = s["requests_per_second_range"]
            print(f"{name:>17} {mode:>14} {s['requests_per_second']:>8} "
                  f"{f'({low}-{high})':>15} {s['server_cpu_us_per_request']!s:>10} "
                  f"{s['latency_ms_p50']!s:>7} {s['latency_ms_p99']!s:>7} "
                  f"{s['socket_errors'] + s['non_2xx']:>6}")  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
