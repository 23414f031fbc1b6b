"""Arrivals benchmark (issue 31, item 4): what a drop's crowd costs at the door.

Open-loop arrivals at rising steps (``--steps``, default 100, 200, 400, 800 a second, ``--seconds``
30 each) into an open room whose rate is low (60 a minute: everyone waits), each arrival a new
connection doing what the browser agent does up to holding a ticket, with a browser's headers
and its own address (``X-Forwarded-For``, one proxy hop trusted, as ``anteroom rehearse
--spread-addresses``): today the measuring challenge, solving it, the real challenge, solving it,
identify, enter (frontend/enter-queue.js). Proof of work is pinned at its lowest
(``ANTEROOM_POW_DIFFICULTY=1``); the measurement's 8 puzzles of 2^10 are solved whatever the pin,
by bench/pow_solver.py (C over OpenSSL, ~1 ms an arrival). One connection per arrival, kept
alive across its calls, as a browser's fetches to one origin are; ``--connection per-call``
opens one per call instead. No CORS preflight: the hosted page calls its own origin (an agent
embedded on a storefront adds one ``OPTIONS`` per distinct path).

The journey is picked by what the server offers (its ``/api/openapi.json``): the shortest of
:data:`JOURNEYS` whose paths it lists. A new journey (say, one challenge call carrying the
measurement, and one call that checks the proof and enters) is one more ``async def`` and one
line in :data:`JOURNEYS`.

Two servers run side by side in one run, ``after`` (this tree) and ``before`` (``--before``, by
default 708458e, the commit before issue 31's first change, taken with ``git archive`` into a
temporary folder and served with ``PYTHONPATH`` pointing at it), each real gunicorn as
``anteroom serve`` runs it (2 workers), each on its own embedded Redis. Each step runs on both,
one after the other, the order alternating from step to step.

``--also-before <commit>`` serves more commits beside (``before-<commit>``, in the JSON's
``commits``): the branch's base, say, to see one change's share.

``--servers granian`` adds this tree's app served by another HTTP server (``granian``, WSGI, 2
workers, its access log on) as a side of its own (``after-granian``), so the HTTP server's share
of an arrival is measured side by side; only the app is served there (what ``anteroom serve``
adds around it, the worker class's connection limits and background threads, is not).

Per step and server: arrivals attempted and completed a second, answers by call and status,
journey p50/p95/p99 (from when the arrival was due, so a late generator counts against it; the
generator's own lateness is ``launch_lag_ms_p99``), and CPU from ``/proc``: the web processes
(gunicorn's master and workers), Redis, and the load generator, apart, per completed arrival.
After each step the server is left to go idle (the backlog of timed-out arrivals served: its
CPU counts in that step) before the next; a side that completed under half of a step runs no
higher one.
``max_sustained_arrivals_per_second``: the highest step rate with >= 99% completed and p99
journey <= 2 s. The headline per-arrival figures come from that step (else the lowest step);
``model_cores`` = arrivals a second for 1,000,000 over 600 s and over 60 s x server CPU per arrival.

Run: ``python bench/arrivals.py`` (about 5 minutes); quick: ``--steps 50,100 --seconds 5``;
``--before ''`` measures this tree alone. Writes ``bench/results/arrivals.json`` (``--out``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py is named like the standard library's ``http`` package: this folder goes after
# the standard library on the path, where the sibling pow_solver is still found.
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]  # the tests' server harness

import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import ipaddress  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Awaitable, Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402

from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from helpers import TEST_KEYS, free_port  # noqa: E402
from live_server import ServerProcess  # noqa: E402
from pow_solver import Solver  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "arrivals.json"
BEFORE = "708458e"  # the commit before issue 31's first change
ENV = "arrivals"
WORKERS = 2
ROOM_RATE = 60  # a minute: the line only grows while the crowd arrives
MAX_PUZZLES = 16  # what the agent asks for (frontend/enter-queue.js)
TICK = os.sysconf("SC_CLK_TCK")
ADDRESSES = ipaddress.ip_network("198.18.0.0/15")  # the benchmarking range: one per arrival
SUSTAINED_SHARE, SUSTAINED_P99_MS = 0.99, 2000.0
GAVE_UP = 0.5  # a side that completed less than this share of a step runs no higher step
MODEL = {"over_600_s": 1_000_000 / 600, "over_60_s": 1_000_000 / 60}
# What a browser sends besides the body (frontend/api.js; its user agent on every request).
BROWSER = (
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0 Safari/537.36\r\n"
    "Accept: application/json\r\nAccept-Language: en-GB,en;q=0.9\r\n"
    "Content-Type: application/json\r\n"
)
# frontend/signals.js of an ordinary desktop browser.
SIGNALS = {"webdriver": False, "languages": 2, "hardwareConcurrency": 8,
           "timezone": "Europe/London", "plugins": 5}  # fmt: skip


# -- one arrival's HTTP -----------------------------------------------------------------------


class CallFailed(Exception):
    """A visitor call answered with something else than a 200 (``status`` 0: no answer)."""

    def __init__(self, call: str, status: int, code: str = "") -> None:
        super().__init__(f"{call} {status} {code}")
        self.call, self.status, self.code = call, status, code


class Http:
    """One browser's HTTP/1.1 to the server: a connection kept alive across its calls (or one
    per call), raw asyncio streams (no HTTP library: the generator's CPU is the server's rival).
    Every answer is counted in ``answers`` as ``"<call> <status>"``."""

    def __init__(self, port: int, address: str, per_call: bool, answers: Counter[str]) -> None:
        self.port, self.address, self.per_call = port, address, per_call
        self.answers = answers
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.requests = self.connections = 0
        self.head = (
            f"Host: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n{BROWSER}"
            f"X-Forwarded-For: {address}\r\n"
        )

    async def call(self, name: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``path``; the JSON answer of a 200, else :class:`CallFailed`."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.connections += 1
        assert self.reader is not None
        data = json.dumps(body, separators=(",", ":")).encode()
        close = "Connection: close\r\n" if self.per_call else ""
        request = f"POST {path} HTTP/1.1\r\n{self.head}{close}Content-Length: {len(data)}\r\n\r\n"
        self.writer.write(request.encode() + data)
        self.requests += 1
        try:
            status, text, closing = await read_answer(self.reader)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError) as exc:
            self.answers[f"{name} no-answer"] += 1
            self.close()
            raise CallFailed(name, 0, type(exc).__name__) from exc
        if closing or self.per_call:
            self.close()
        self.answers[f"{name} {status}"] += 1
        try:
            answer = json.loads(text) if text else None
        except ValueError:
            answer = None
        if status != 200 or not isinstance(answer, dict):
            code = answer.get("error", "") if isinstance(answer, dict) else ""
            raise CallFailed(name, status, str(code))
        return answer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """(status, body, the server closes) of one HTTP/1.1 answer."""
    line = await reader.readline()
    if not line:
        raise ConnectionResetError("closed before answering")
    status = int(line.split(None, 2)[1])
    length, chunked, closing = 0, False, False
    while True:
        header = await reader.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.decode("latin-1").partition(":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding" and "chunked" in value:
            chunked = True
        elif name == "connection" and value == "close":
            closing = True
    if not chunked:
        return status, await reader.readexactly(length), closing
    body = b""
    while size := int((await reader.readline()).strip() or b"0", 16):
        body += await reader.readexactly(size)
        await reader.readline()
    await reader.readline()
    return status, body, closing


# -- the journeys ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Visit:
    """What every journey needs: the environment's public key, the room, the solver."""

    api_key: str
    room: str
    solver: Solver

    def solve_timed(self, puzzles: list[dict[str, Any]]) -> tuple[list[str], float]:
        """Solutions and the hash rate, as the agent's workers report it (hashes a second)."""
        started = time.perf_counter()
        solutions, hashes = self.solver.solve(puzzles)
        elapsed_ms = max(1.0, (time.perf_counter() - started) * 1000)
        return solutions, hashes * 1000 / elapsed_ms


async def agent_four_calls(http: Http, visit: Visit) -> dict[str, Any]:
    """frontend/enter-queue.js today: the measuring challenge (solved, timed), the real
    challenge with that measurement, identify with its solutions, enter. The enter's answer."""
    ask = {"apiKey": visit.api_key, "room": visit.room, "maxPuzzles": MAX_PUZZLES,
           "signals": SIGNALS}  # fmt: skip
    probe = await http.call("challenge", "/api/v1/challenge", ask | {"measure": True})
    issued = probe
    if probe.get("tier") == "measure" and isinstance(probe.get("puzzles"), list):
        solutions, rate = visit.solve_timed(probe["puzzles"])
        measurement = {"challenge": probe["challenge"], "solutions": solutions,
                       "hashesPerSecond": rate}  # fmt: skip
        fitted = ask | {"measurement": measurement}
        issued = await http.call("challenge", "/api/v1/challenge", fitted)
    body: dict[str, Any] = {"apiKey": visit.api_key, "challenge": issued["challenge"],
                            "signals": SIGNALS}  # fmt: skip
    if issued.get("puzzles"):
        body["solutions"] = visit.solve_timed(issued["puzzles"])[0]
    else:  # a server without puzzles: the one legacy puzzle, the token itself
        legacy = [{"prefix": issued["challenge"], "difficulty": issued["difficulty"]}]
        body["solution"] = visit.solve_timed(legacy)[0][0]
    session = await http.call("identify", "/api/v1/identify", body)
    enter = {"apiKey": visit.api_key, "room": visit.room, "sessionToken": session["sessionToken"]}
    return await http.call("enter", "/api/v1/queue/enter", enter)


async def agent_two_calls(http: Http, visit: Visit) -> dict[str, Any]:
    """frontend/enter-queue.js since the two-call arrival: ``arrive`` (one challenge whose first
    ``minPuzzles`` puzzles are the floor), the floor solved and timed, as many more solved as fit
    in ``fitMs`` (frontend/pow.js ``solveFitted``), then ``queue/join`` (the proof checked, the
    session opened and the spot taken). The join's queue answer."""
    ask = {"apiKey": visit.api_key, "room": visit.room, "maxPuzzles": MAX_PUZZLES,
           "signals": SIGNALS}  # fmt: skip
    issued = await http.call("arrive", "/api/v1/arrive", ask)
    puzzles = issued.get("puzzles") or []
    least = min(len(puzzles), max(1, int(issued.get("minPuzzles") or len(puzzles))))
    solutions, rate = visit.solve_timed(puzzles[:least])
    if least < len(puzzles):
        tail = 1 + 2 / math.sqrt(len(puzzles))
        fits = int(rate * float(issued.get("fitMs") or 600) / 1000 / tail
                   / 2 ** puzzles[0]["difficulty"])  # fmt: skip
        count = min(len(puzzles), max(least, fits))
        if count > least:
            solutions += visit.solve_timed(puzzles[least:count])[0]
    join = {"apiKey": visit.api_key, "room": visit.room, "challenge": issued["challenge"],
            "solutions": solutions, "signals": SIGNALS}  # fmt: skip
    answer = await http.call("join", "/api/v1/queue/join", join)
    return answer["queue"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Journey:
    """A way from a visitor's first call to holding a ticket, and the paths it needs."""

    name: str
    paths: tuple[str, ...]  # every one must be in the server's /api/openapi.json
    calls: int  # visitor calls when the server measures (the agent's path)
    run: Callable[[Http, Visit], Awaitable[dict[str, Any]]]


# The shortest the server offers is taken; a new journey is one more line.
JOURNEYS: list[Journey] = [
    Journey("arrive, join", ("/api/v1/arrive", "/api/v1/queue/join"), 2, agent_two_calls),
    Journey("measure, challenge, identify, enter",
            ("/api/v1/challenge", "/api/v1/identify", "/api/v1/queue/enter"), 4,
            agent_four_calls),
]  # fmt: skip


def pick_journey(base_url: str, forced: str = "") -> Journey:
    """The journey with the fewest calls among those whose paths the server lists."""
    with urllib.request.urlopen(base_url + "/api/openapi.json", timeout=30) as answer:
        offered = set(json.load(answer).get("paths", {}))
    fitting = [j for j in JOURNEYS if set(j.paths) <= offered and (not forced or j.name == forced)]
    if not fitting:
        wanted = f"journey {forced!r}" if forced else "journey"
        raise RuntimeError(f"no {wanted} fits the server's paths: {sorted(offered)}")
    return min(fitting, key=lambda j: j.calls)


# -- the load generator (child processes) -----------------------------------------------------


@dataclass(frozen=True)
class Share:
    """One generator process's part of a step: arrivals ``k``, ``k + procs``, … of ``total``."""

    port: int
    visit: Visit
    journey: Journey
    rate: float
    total: int
    k: int
    procs: int
    t0: float  # time.monotonic() of arrival 0 (the clock is the machine's, shared)
    first_address: int
    timeout: float
    per_call: bool


async def run_share(share: Share) -> dict[str, Any]:
    answers: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    journeys_ms: list[float] = []
    lags_ms: list[float] = []
    counts = {"requests": 0, "connections": 0, "completed_requests": 0}

    async def arrive(i: int, due: float) -> None:
        address = str(ADDRESSES[(share.first_address + i) % ADDRESSES.num_addresses])
        http = Http(share.port, address, share.per_call, answers)
        try:
            answer = await asyncio.wait_for(share.journey.run(http, share.visit), share.timeout)
            outcomes[f"ticket {answer.get('status')}"] += 1
            journeys_ms.append((time.monotonic() - due) * 1000)
            counts["completed_requests"] += http.requests
        except TimeoutError:
            outcomes["timeout"] += 1
        except CallFailed as failed:
            outcomes[f"{failed.call} {failed.status} {failed.code}".strip()] += 1
        except OSError as exc:
            outcomes[f"connect {type(exc).__name__}"] += 1
        finally:
            http.close()
            counts["requests"] += http.requests
            counts["connections"] += http.connections

    tasks = []
    for i in range(share.k, share.total, share.procs):
        due = share.t0 + i / share.rate
        wait = due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        lags_ms.append(max(0.0, time.monotonic() - due) * 1000)
        tasks.append(asyncio.create_task(arrive(i, due)))
    await asyncio.gather(*tasks)
    return {"attempted": len(tasks), "answers": answers, "outcomes": outcomes,
            "journeys_ms": journeys_ms, "lags_ms": lags_ms, **counts}  # fmt: skip


def generator(share: Share, out: Any) -> None:
    """A child process: its share of the step, then what it saw and its own CPU."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    started = resource.getrusage(resource.RUSAGE_SELF)
    seen = asyncio.run(run_share(share))
    ended = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ended.ru_utime - started.ru_utime) + (ended.ru_stime - started.ru_stime)
    out.send(seen | {"cpu_seconds": cpu})
    out.close()


# -- the servers and what they cost -----------------------------------------------------------


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU so far of ``pids`` (every thread of each: /proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / TICK


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (gunicorn's master and workers)."""
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


@dataclass
class Deployment:
    """One side of the comparison: its code, Redis, server, key and room."""

    label: str
    backend: Path | None  # None: this tree
    work: Path
    store: EmbeddedRedis | None = None
    server: ServerProcess | None = None
    redis_pid: int = 0
    api_key: str = ""
    room: str = ""
    journey: Journey | None = None
    forced_journey: str = ""  # a journey's name (--journey): else the shortest offered
    next_address: int = 0
    http_server: str = "gunicorn"  # or "granian": this tree's app under granian (--servers)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
        if self.backend is not None:
            env["PYTHONPATH"] = str(self.backend)
        return env

    def start(self, offset: int) -> None:
        self.next_address = offset
        self.store = EmbeddedRedis(self.work / "redis", port=free_port()).start()
        client = redis.Redis.from_url(self.store.url)
        self.redis_pid = int(client.info("server")["process_id"])
        client.close()
        port = free_port()
        settings = {
            "ANTEROOM_BIND": f"127.0.0.1:{port}",
            "ANTEROOM_REDIS_URL": self.store.url,
            "ANTEROOM_KEYS": TEST_KEYS,
            "ANTEROOM_DATA_DIR": str(self.work),
            "ANTEROOM_WORKERS": str(WORKERS),
            "ANTEROOM_DEMO": "0",
            "ANTEROOM_TRUSTED_PROXIES": "1",
            "ANTEROOM_POW_DIFFICULTY": "1",  # the lowest pin
        }
        command = [sys.executable, "-m", "anteroom.ops.cli", "serve"]
        if self.http_server == "granian":
            # The app factory as granian serves any WSGI app (2 workers, its access log on as
            # gunicorn's is): what anteroom serve adds around the app (the worker class's
            # connection limits and request deadline, the background threads) is not there.
            command = [sys.executable, "-m", "granian", "--interface", "wsgi", "--factory",
                       "--workers", str(WORKERS), "--host", "127.0.0.1", "--port", str(port),
                       "--access-log", "--no-ws",
                       "anteroom.web.app_factory:create_app"]  # fmt: skip
        self.server = ServerProcess(command, port, self.work / "server.log",
                                    env=self.env() | settings, ready_path="/readyz",
                                    name=f"{self.http_server} ({self.label})")  # fmt: skip
        self.server.start(timeout=90)
        self.api_key, secret = self.create_key()
        self.room = f"drop-{self.label}"
        create_room(self.server.url, secret, self.room)
        self.journey = pick_journey(self.server.url, self.forced_journey)

    def idle_cores(self, seconds: float = 5.0) -> dict[str, float]:
        """What the server burns with no visitor (the room ticker, the workers' background
        threads), in cores: part of every step's CPU, so of the per-arrival figures too."""
        web, store = self.web_pids(), [self.redis_pid]
        before = cpu_seconds(web), cpu_seconds(store)
        time.sleep(seconds)  # measuring an idle server's CPU rate over a fixed span
        return {"web": round((cpu_seconds(web) - before[0]) / seconds, 4),
                "redis": round((cpu_seconds(store) - before[1]) / seconds, 4)}  # fmt: skip

    def create_key(self) -> tuple[str, str]:
        assert self.store is not None
        env = self.env() | {"ANTEROOM_REDIS_URL": self.store.url,
                            "ANTEROOM_DATA_DIR": str(self.work)}  # fmt: skip
        made = subprocess.run(
            [sys.executable, "-m", "anteroom.ops.cli", "keys", "create", "--environment", ENV],
            env=env, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        public = re.search(r"public key\s+(pk_\S+)", made.stdout)
        secret = re.search(r"secret key\s+(sk_\S+)", made.stdout)
        if not public or not secret:
            raise RuntimeError("anteroom keys create said:\n" + made.stdout + made.stderr)
        return public.group(1), secret.group(1)

    def web_pids(self) -> list[int]:
        assert self.server is not None and self.server.process is not None
        return descendants(self.server.process.pid)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.store is not None:
            self.store.stop()


def create_room(url: str, secret: str, slug: str) -> None:
    """An open room dealing ``ROOM_RATE`` a minute, through the management API."""
    api = url + "/api/management/v1/queues"
    config = {"slug": slug, "name": "Arrivals", "redirectUrl": "https://shop.example/in",
              "ratePerMinute": ROOM_RATE, "capacity": 1000, "maxWaiting": 10_000_000}  # fmt: skip
    made = management(api, "POST", config, secret)
    management(f"{api}/{made['id']}", "PATCH", {"action": "open"}, secret)


def management(url: str, method: str, body: dict[str, Any], secret: str) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method=method,
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as answer:
        found: dict[str, Any] = json.load(answer)
        return found


def before_tree(commit: str, into: Path) -> Path:
    """The code of ``commit`` (git archive) in ``into``; its backend folder."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True,
                             check=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "backend"


# -- a step -----------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, -(-int(p * len(ordered)) // 100) - 1))], 1)


def run_step(deployment: Deployment, rate: float, args: argparse.Namespace,
             visit_solver: Solver) -> dict[str, Any]:  # fmt: skip
    """``rate`` arrivals a second for ``args.seconds`` at ``deployment``; what it saw and cost."""
    assert deployment.server is not None and deployment.journey is not None
    total = max(1, round(rate * args.seconds))
    visit = Visit(deployment.api_key, deployment.room, visit_solver)
    procs = max(1, min(args.procs, total))
    t0 = time.monotonic() + 0.5  # the children are forked and ready by then
    pipes, children = [], []
    context = multiprocessing.get_context("fork")
    for k in range(procs):
        share = Share(deployment.server.port, visit, deployment.journey, rate, total, k, procs,
                      t0, deployment.next_address, args.timeout,
                      args.connection == "per-call")  # fmt: skip
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=generator, args=(share, send), daemon=True)
        child.start()
        pipes.append(receive)
        children.append(child)
    deployment.next_address += total
    web = deployment.web_pids()
    web_before, redis_before = cpu_seconds(web), cpu_seconds([deployment.redis_pid])
    load_before = os.getloadavg()[0]
    seen = [pipe.recv() for pipe in pipes]
    wall = time.monotonic() - t0
    web_cpu = cpu_seconds(web) - web_before
    redis_cpu = cpu_seconds([deployment.redis_pid]) - redis_before
    for child in children:
        child.join(30)
    answers: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    journeys: list[float] = []
    lags: list[float] = []
    for part in seen:
        answers.update(part["answers"])
        outcomes.update(part["outcomes"])
        journeys += part["journeys_ms"]
        lags += part["lags_ms"]
    attempted = sum(p["attempted"] for p in seen)
    completed = len(journeys)
    loadgen_cpu = sum(p["cpu_seconds"] for p in seen)

    def per(cpu: float) -> float | None:
        return round(cpu * 1000 / completed, 3) if completed else None

    p99 = percentile(journeys, 99)
    return {
        "target_per_second": rate,
        "attempted_per_second": round(attempted / args.seconds, 1),
        "completed_per_second": round(completed / args.seconds, 1),
        "attempted": attempted,
        "completed": completed,
        "completed_share": round(completed / attempted, 4) if attempted else 0.0,
        "sustained": bool(
            attempted
            and completed >= SUSTAINED_SHARE * attempted
            and p99 is not None
            and p99 <= SUSTAINED_P99_MS
        ),
        "journey_ms": {
            "p50": percentile(journeys, 50),
            "p95": percentile(journeys, 95),
            "p99": p99,
            "max": round(max(journeys), 1) if journeys else None,
        },
        "launch_lag_ms_p99": percentile(lags, 99),
        "answers": dict(sorted(answers.items())),
        "outcomes": dict(sorted(outcomes.items())),
        # a completed journey's calls (a failed one stops short)
        "calls_per_arrival": (
            round(sum(p["completed_requests"] for p in seen) / completed, 2) if completed else None
        ),
        "calls_per_attempt": round(sum(p["requests"] for p in seen) / attempted, 2),
        "connections_per_arrival": round(sum(p["connections"] for p in seen) / attempted, 2),
        "wall_seconds": round(wall, 1),
        "cpu_seconds": {
            "web": round(web_cpu, 2),
            "redis": round(redis_cpu, 2),
            "loadgen": round(loadgen_cpu, 2),
        },
        "server_cpu_ms_per_arrival": per(web_cpu + redis_cpu),
        "web_cpu_ms_per_arrival": per(web_cpu),
        "redis_cpu_ms_per_arrival": per(redis_cpu),
        "loadgen_cpu_ms_per_arrival": per(loadgen_cpu),
        "load_average_before": round(load_before, 2),
    }


def settle(deployment: Deployment, idle_cores: float = 0.1, longest: float = 60.0) -> float:
    """Wait until the server's web and Redis processes are near idle (the last step's backlog
    served, a timed-out arrival's requests included); the seconds it took."""
    started = time.monotonic()
    pids = [*deployment.web_pids(), deployment.redis_pid]
    while time.monotonic() - started < longest:
        before = cpu_seconds(pids)
        time.sleep(0.5)  # sampling the server's CPU rate, not waiting out a race
        if (cpu_seconds(pids) - before) / 0.5 < idle_cores:
            break
    return round(time.monotonic() - started, 1)


def summary(
    deployment: Deployment, steps: list[dict[str, Any]], idle: dict[str, float]
) -> dict[str, Any]:
    """The headline figures of one side: from its highest sustained step, else its lowest."""
    sustained = [s for s in steps if s["sustained"]]
    chosen = max(sustained, key=lambda s: s["target_per_second"]) if sustained else steps[0]
    server = chosen["server_cpu_ms_per_arrival"]
    assert deployment.journey is not None
    return {
        "journey": deployment.journey.name,
        "max_sustained_arrivals_per_second": (
            max(s["attempted_per_second"] for s in sustained) if sustained else 0
        ),
        "figures_from_step": chosen["target_per_second"],
        "server_cpu_ms_per_arrival": server,
        "web_cpu_ms_per_arrival": chosen["web_cpu_ms_per_arrival"],
        "redis_cpu_ms_per_arrival": chosen["redis_cpu_ms_per_arrival"],
        "loadgen_cpu_ms_per_arrival": chosen["loadgen_cpu_ms_per_arrival"],
        "calls_per_arrival": chosen["calls_per_arrival"],
        "idle_server_cores": idle,
        "model_cores": (
            {k: round(per_second * server / 1000, 2) for k, per_second in MODEL.items()}
            if server is not None
            else None
        ),
        "steps": steps,
    }


def show(label: str, step: dict[str, Any]) -> None:
    j = step["journey_ms"]
    print(
        f"{label:>6} {step['target_per_second']:>5.0f}/s: attempted {step['attempted_per_second']}"
        f"/s, completed {step['completed_per_second']}/s ({step['completed_share']:.1%}); "
        f"journey p50 {j['p50']} p95 {j['p95']} p99 {j['p99']} ms; server "
        f"{step['server_cpu_ms_per_arrival']} ms (web {step['web_cpu_ms_per_arrival']}, redis "
        f"{step['redis_cpu_ms_per_arrival']}), loadgen {step['loadgen_cpu_ms_per_arrival']} ms "
        f"an arrival; load {step['load_average_before']}",
        flush=True,
    )
    failed = {k: v for k, v in step["outcomes"].items() if not k.startswith("ticket")}
    if failed:
        print(f"         not completed: {failed}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="100,200,400,800", help="arrivals a second, per step")
    parser.add_argument("--seconds", type=float, default=30.0, help="each step's length")
    parser.add_argument("--before", default=BEFORE, help="commit served as 'before' ('': none)")
    parser.add_argument("--procs", type=int, default=2, help="load generator processes")
    parser.add_argument("--timeout", type=float, default=10.0, help="an arrival's longest journey")
    parser.add_argument("--connection", choices=("per-arrival", "per-call"), default="per-arrival")
    parser.add_argument(
        "--journey",
        default="",
        help="a journey's name (default: the shortest offered), e.g. the older calls",
    )
    parser.add_argument(
        "--servers",
        default="",
        help="also this tree under other HTTP servers, side by side (e.g. granian: pip install "
        "-e '.[bench]'); each is a side of its own, 'after-<server>' in the JSON's 'servers'",
    )
    parser.add_argument(
        "--also-before",
        default="",
        help="more commits served beside, side by side (e.g. the branch's base, to see one "
        "change's share); each is 'before-<commit>' in the JSON's 'commits'",
    )
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    rates = [float(r) for r in args.steps.split(",") if r.strip()]
    # A SIGTERM (a background job's stop) ends the run as Ctrl-C does: the servers are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="anteroom-arrivals-"))
    solver = Solver()
    sides = [Deployment("after", None, work / "after", forced_journey=args.journey)]
    if args.before:
        tree = before_tree(args.before, work / "tree")
        sides.append(Deployment("before", tree, work / "before", forced_journey=args.journey))
    for commit in [c.strip() for c in args.also_before.split(",") if c.strip()]:
        tree = before_tree(commit, work / f"tree-{commit}")
        sides.append(Deployment(f"before-{commit}", tree, work / f"before-{commit}",
                                forced_journey=args.journey))  # fmt: skip
    for name in [s.strip() for s in args.servers.split(",") if s.strip()]:
        sides.append(Deployment(f"after-{name}", None, work / name, forced_journey=args.journey,
                                http_server=name))  # fmt: skip
    head = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=ROOT, capture_output=True,
                          text=True, check=False).stdout.strip()[:100]  # fmt: skip
    steps: dict[str, list[dict[str, Any]]] = {side.label: [] for side in sides}
    idle: dict[str, dict[str, float]] = {}
    load_at_start = os.getloadavg()
    try:
        for n, side in enumerate(sides):
            side.start(offset=n * ADDRESSES.num_addresses // len(sides))
            assert side.journey is not None
            print(f"{side.label}: {side.server.url if side.server else ''}, journey "
                  f"'{side.journey.name}'", flush=True)  # fmt: skip
        for side in sides:
            settle(side)
            idle[side.label] = side.idle_cores()
        for i, rate in enumerate(rates):
            order = sides if i % 2 == 0 else sides[::-1]
            for side in order:
                if steps[side.label] and steps[side.label][-1]["completed_share"] < GAVE_UP:
                    continue  # it served under half of the step below: a higher one says no more
                step = run_step(side, rate, args, solver)
                step["settled_after_seconds"] = settle(side)
                steps[side.label].append(step)
                show(side.label, step)
    finally:
        for side in sides:
            side.stop()
        solver.close()
        shutil.rmtree(work, ignore_errors=True)
    after = summary(sides[0], steps["after"], idle["after"])
    results: dict[str, Any] = {
        "setup": {
            "steps_per_second": rates, "seconds_per_step": args.seconds,
            "workers": WORKERS, "room_rate_per_minute": ROOM_RATE, "pow": "pinned at 2^1",
            "solver": solver.kind, "generator_processes": args.procs,
            "connection": args.connection, "timeout_seconds": args.timeout,
            "sustained_when": f">= {SUSTAINED_SHARE:.0%} completed, p99 journey <= "
                              f"{SUSTAINED_P99_MS / 1000:.0f} s",
            "cpus": os.cpu_count(),
            # the machine is shared: what else ran, as 1-minute load averages
            "load_average_at_start": round(load_at_start[0], 2),
            "load_average_at_end": round(os.getloadavg()[0], 2),
        },
        "code": head,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **after,
    }  # fmt: skip
    if args.before:
        before = summary(sides[1], steps["before"], idle["before"])
        results["before"] = {"commit": args.before, **before}
    others = [side for side in sides if side.http_server != "gunicorn"]
    if others:
        results["servers"] = {
            side.label: {"server": side.http_server, **summary(side, steps[side.label],
                                                               idle[side.label])}
            for side in others
        }  # fmt: skip
    commits = [side for side in sides if side.label.startswith("before-")]
    if commits:
        results["commits"] = {
            side.label: summary(side, steps[side.label], idle[side.label]) for side in commits
        }
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n{'':>6}  max sustained/s  server ms  web ms  redis ms  loadgen ms  calls")
    table = [("after", results)] + ([("before", results["before"])] if args.before else [])
    table += list(results.get("commits", {}).items()) + list(results.get("servers", {}).items())
    for label, side in table:
        figures = [side[f"{k}_cpu_ms_per_arrival"] for k in ("server", "web", "redis", "loadgen")]
        print(f"{label:>6}  {side['max_sustained_arrivals_per_second']:>15}  "
              + "  ".join(f"{f!s:>{w}}" for f, w in zip(figures, (9, 6, 8, 10), strict=True))
              + f"  {side['calls_per_arrival']}")  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
