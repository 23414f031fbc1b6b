"""HTTP benchmark through a real gunicorn: polls per second of waiting spots near the front and
far back vs a plain JSON endpoint of the same app, and the server-side cost of ``identify`` and of
verifying an admission.

One ``anteroom serve`` (gunicorn, the same workers for both figures) runs against its own embedded
Redis (or ``--redis-url``). The load generator is this process: keep-alive connections on raw
sockets, one thread each, sending pre-encoded requests, so it costs far less than the server.
``POST /api/v1/queue/poll`` of spots that stay ``waiting`` (each room deals one a minute behind
spots entered ahead) and ``GET /healthz`` are measured in interleaved rounds (the order rotates);
each figure is the median of the rounds' requests per second. Since the machine is shared, the CPU
(web workers + Redis, from /proc and ``INFO cpu``) each round used per request is measured too:
``*_cpu_ratio`` = plain's CPU per request / the poll's (1.0: a poll costs what the plain endpoint
costs), a figure the scheduling of other processes moves far less. Two kinds of poll: *near* (spots
within the first 100 of their rooms: the full poll) and *far* (spots beyond 3,000 of a
long line: the far poll); ``near_poll_ratio`` and ``far_poll_ratio`` = that poll's requests per
second / plain's. Every round opens its connections afresh and evenly over the workers (checked in
/proc: Linux only). Spots are entered through the engine and their tickets signed here with the
server's keys (the same tokens ``enter`` hands out), so setting up thousands takes a second; each
is polled once, and the ticket its answer gives is the one polled (see ``current_tickets``). Polls
go round-robin over many tickets, so the per-ticket limit (90 a minute) is never reached; the share
of 200 answers is checked.

``identify_us`` is the server-side time of one ``POST /api/v1/identify`` inside the same Flask
app (the WSGI call gunicorn makes, pre-built request, same Redis; the client's proof of work is
done before timing — the server checks it with one hash at any difficulty). ``verify_us`` is
``anteroom.verify.verify_admission`` on a real admission token from the server. Both are the
median of per-batch means.
Run: ``python bench/http.py [--redis-url URL]``. Writes ``bench/results/http.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the standard library's ``http`` package, and a script's folder comes
# first on sys.path: drop it before anything imports ``http.client``.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]  # the tests' live-server harness

import argparse  # noqa: E402
import contextlib  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402
from werkzeug.test import EnvironBuilder  # noqa: E402

from anteroom.config import Settings  # noqa: E402
from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.line.far_poll import EXACT_WITHIN  # noqa: E402
from anteroom.sdk import verification as verify  # noqa: E402
from anteroom.sdk.tokens import Keyring  # noqa: E402
from anteroom.store.keystore import KeyStore  # noqa: E402
from anteroom.visit.answers import queue_token  # noqa: E402
from anteroom.web.app_factory import create_app  # noqa: E402
from live_server import LiveServer  # noqa: E402
from visitor_client import HUMAN, SIGNALS, HttpTransport, Visitor, solve  # noqa: E402

PREFIX = "benchhttp:"
ENV = "bench"
DIFFICULTY = 8  # setup speed only: the server's check is one SHA-256 whatever the difficulty
NO_LIMIT = "1000000/minute"
AHEAD = 20  # spots entered ahead of the benchmark's, so the drain (1 a minute) never reaches ours
NEAR_ROOMS = 20  # rooms whose polled spots are all within the first 100 (near the front)
NEAR_AHEAD = 5
# Far spots lie beyond the places Redis answers exactly (far_poll.EXACT_WITHIN), even allowing
# for the spread of their own block of 1,000 tickets: the snapshot far poll's ground.
FAR_AHEAD = 3 * EXACT_WITHIN + AHEAD


# -- the load generator --------------------------------------------------------------------


def encode_get(path: str, port: int) -> bytes:
    head = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    head += [f"{k}: {v}" for k, v in HUMAN.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode()


def encode_post(path: str, body: dict[str, Any], port: int) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    head += [f"{k}: {v}" for k, v in HUMAN.items()]
    head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


class Conn:
    """One keep-alive HTTP/1.1 connection: send pre-encoded bytes, read one answer."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def request(self, raw: bytes) -> tuple[int, bytes]:
        self.sock.sendall(raw)
        buf = self.buf
        while (end := buf.find(b"\r\n\r\n")) < 0:
            buf += self._recv()
        head = buf[:end].lower()
        start = head.find(b"\r\ncontent-length:")
        if start < 0:
            raise RuntimeError("answer without Content-Length: " + head.decode(errors="replace"))
        stop = head.find(b"\r\n", start + 2)
        length = int(head[start + 17 : stop if stop > 0 else len(head)])
        total = end + 4 + length
        while len(buf) < total:
            buf += self._recv()
        self.buf = buf[total:]
        return int(head[9:12]), buf[end + 4 : total]

    def _recv(self) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


def load_round(
    conns: Sequence[Conn], requests: Sequence[bytes], seconds: float, ok: bytes
) -> tuple[float, Counter[str]]:
    """Requests per second over ``seconds``, every connection busy in a thread of its own.

    Requests are taken round-robin from ``requests``; an answer counts as ``ok`` when it is a
    200 whose body contains ``ok``.
    """
    connections = len(conns)
    ticker = itertools.count()  # next() on a count is atomic under the GIL
    barrier = threading.Barrier(connections + 1)
    tallies: list[Counter[str]] = [Counter() for _ in conns]
    ends = [0.0] * connections
    state = {"deadline": 0.0}
    n = len(requests)

    def work(i: int) -> None:
        conn, tally = conns[i], tallies[i]
        barrier.wait()
        deadline = state["deadline"]
        while time.perf_counter() < deadline:
            status, body = conn.request(requests[next(ticker) % n])
            tally["ok" if status == 200 and ok in body else str(status)] += 1
        ends[i] = time.perf_counter()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    start = time.perf_counter()
    state["deadline"] = start + seconds
    barrier.wait()
    for t in threads:
        t.join()
    tally = sum(tallies, Counter())
    return tally.total() / (max(ends) - start), tally


# -- the server and its visitors -------------------------------------------------------------


class Server(LiveServer):
    """The tests' ``LiveServer``, and which of its workers holds which connection."""

    def owner(self, conn: Conn, timeout: float = 2.0) -> int | None:
        """The worker that accepted ``conn`` (None if it cannot be told)."""
        return self.worker_holding(conn.sock, timeout)

    def connections(self, n: int) -> tuple[list[Conn], list[int]]:
        """``n`` keep-alive connections spread evenly over the workers (and the split).

        A gunicorn worker that wakes first accepts every pending connection, so connections
        opened back to back often all land on one worker — on two cores that halves the rate,
        whichever endpoint is measured. Connections are reopened until the split is even.
        """
        workers = self.workers()
        share = -(-n // len(workers))
        split = dict.fromkeys(workers, 0)
        conns: list[Conn] = []
        for _ in range(50 * n):
            if len(conns) == n:
                break
            conn = Conn(self.port)
            pid = self.owner(conn)
            if pid is None or split.get(pid, share) >= share:
                conn.close()
                continue
            split[pid] += 1
            conns.append(conn)
        while len(conns) < n:  # could not balance: take what comes, the split is reported
            conns.append(Conn(self.port))
            pid = self.owner(conns[-1])
            if pid in split:
                split[pid] += 1
        return conns, sorted(split.values())


def enter_all(url: str, api_key: str, room: str, count: int, threads: int) -> list[dict[str, Any]]:
    """``count`` visitors (a session each) enter ``room``, over one connection per thread."""

    def one_share(share: int) -> list[dict[str, Any]]:
        http = HttpTransport(url)
        try:
            answers = [Visitor(http, api_key).enter(room) for _ in range(share)]
        finally:
            http.close()
        for answer in answers:
            if answer.status_code != 200:
                raise RuntimeError(f"enter: {answer.status_code} {answer.text[:300]}")
        return [answer.json for answer in answers]

    shares = [count // threads + (i < count % threads) for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        return [a for answers in pool.map(one_share, shares) for a in answers]


def cpu_seconds(pids: Sequence[int]) -> float:
    """utime + stime of ``pids`` (Linux /proc); a pid gone meanwhile counts nothing."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def redis_cpu(client: redis.Redis) -> float:
    """Seconds of CPU the Redis server has used."""
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def mint_tickets(engine: Engine, keyring: Keyring, room_id: str, count: int, tag: str) -> list[str]:
    """``count`` spots entered in ``room_id`` through the engine, and their signed tickets (the
    ``queueToken`` an HTTP enter would have answered)."""
    room = engine.get_room(room_id)
    signer = type("Signer", (), {"keyring": keyring})()  # all queue_token reads of the services
    out = []
    for i in range(count):
        vid = f"{tag}{i}"
        answer = engine.enter(room_id, vid, f"j{tag}{i}", 10)
        assert answer.status == "waiting", answer
        out.append(queue_token(room, signer, vid, answer))  # type: ignore[arg-type]
    return out


def current_tickets(port: int, api_key: str, tickets: Sequence[str]) -> list[str]:
    """Each ticket polled once over HTTP, and the ``queueToken`` its answer carries.

    A visitor polls with the ticket its last answer gave it, whose ``qu`` (kept unpolled until)
    the far poll booked ahead; polled again and again with the ticket ``enter`` gave, every far
    poll would find its spot due for a booking and book it, which a visitor at its cadence does
    once in many polls (see far_poll.answer_far).
    """
    conn, out = Conn(port), []
    try:
        for ticket in tickets:
            raw = encode_post("/api/v1/queue/poll", {"apiKey": api_key, "ticket": ticket}, port)
            status, body = conn.request(raw)
            answer = json.loads(body)
            if status != 200 or answer.get("status") != "waiting":
                raise RuntimeError(f"poll: {status} {body[:300]!r}")
            out.append(answer["queueToken"])
    finally:
        conn.close()
    return out


# -- server-side costs, in process -------------------------------------------------------------


class WsgiCaller:
    """Calls the app exactly as gunicorn's worker does, with a pre-built environ."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.status = ""

    def _start(self, status: str, headers: Any, exc_info: Any = None) -> None:
        self.status = status

    @staticmethod
    def environ(method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        builder = EnvironBuilder(
            path=path,
            method=method,
            json=body,
            headers=HUMAN,
            environ_base={"REMOTE_ADDR": "127.0.0.1"},
        )
        try:
            return builder.get_environ()
        finally:
            builder.close()

    def timed(self, environ: dict[str, Any]) -> tuple[float, int, bytes]:
        """(seconds, status, body) of one call; only the app's work is timed."""
        t0 = time.perf_counter()
        result = self.app(environ, self._start)
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        elapsed = time.perf_counter() - t0
        return elapsed, int(self.status[:3]), body


def identify_costs(
    caller: WsgiCaller, api_key: str, batches: int, per: int
) -> tuple[list[float], list[float]]:
    """Per-batch mean µs of challenge and of identify through the app (solving not timed)."""
    challenge_us, identify_us = [], []
    for _ in range(batches):
        spent, challenges = 0.0, []
        for _ in range(per):
            env = caller.environ("POST", "/api/v1/challenge", {"apiKey": api_key})
            dt, status, body = caller.timed(env)
            assert status == 200, body
            spent += dt
            challenges.append(json.loads(body))
        challenge_us.append(spent / per * 1e6)
        environs = []
        for c in challenges:
            body = solve(api_key, c) | {"signals": SIGNALS}
            environs.append(caller.environ("POST", "/api/v1/identify", body))
        spent = 0.0
        for env in environs:
            dt, status, body = caller.timed(env)
            assert status == 200, body
            spent += dt
        identify_us.append(spent / per * 1e6)
    return challenge_us, identify_us


def app_costs(
    caller: WsgiCaller,
    make: Callable[[int], dict[str, Any]],
    ok: bytes,
    batches: int,
    per: int,
) -> list[float]:
    """Per-batch mean µs of the app's work for the requests ``make(0)``, ``make(1)``, …"""
    out, i = [], 0
    for _ in range(batches):
        spent = 0.0
        environs = [make(i + j) for j in range(per)]  # built before timing
        i += per
        for env in environs:
            dt, status, answer = caller.timed(env)
            assert status == 200 and ok in answer, (status, answer[:200])
            spent += dt
        out.append(spent / per * 1e6)
    return out


def profile_polls(caller: WsgiCaller, make: Callable[[int], dict[str, Any]]) -> None:
    """cProfile of 2,000 in-process polls: the functions that hold their time, by own time."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    app_costs(caller, make, b'"waiting"', 1, 2000)
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"\nprofile of 2,000 polls in process: {total / 2000 * 1e6:.0f} µs a poll under cProfile")
    stats.sort_stats("tottime").print_stats(18)


def verify_costs(token: str, keys: str, room: str, batches: int, per: int) -> list[float]:
    assert verify.verify_admission(token, keys, room=room), "the admission does not verify"
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per):
            verify.verify_admission(token, keys, room=room)
        out.append((time.perf_counter() - t0) / per * 1e6)
    return out


# -- the run ---------------------------------------------------------------------------------


def median(values: Sequence[float], digits: int = 1) -> float:
    return round(statistics.median(values), digits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-url")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
    parser.add_argument("--connections", type=int, default=8, help="client connections")
    parser.add_argument("--rounds", type=int, default=7, help="measured rounds of each")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one round")
    parser.add_argument("--tickets", type=int, default=1000, help="waiting spots polled")
    parser.add_argument(
        "--profile", action="store_true", help="also print where an in-process poll's time goes"
    )
    args = parser.parse_args()
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="anteroom-bench-http-"))
    embedded = None
    if not args.redis_url:
        embedded = EmbeddedRedis(tmp / "redis", port=0).start()
    redis_url = args.redis_url or embedded.url  # type: ignore[union-attr]
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    engine = Engine(client, prefix=PREFIX)
    keys = Keyring.generate().serialize()
    env = {
        "ANTEROOM_REDIS_URL": redis_url,
        "ANTEROOM_KEYS": keys,
        "ANTEROOM_DATA_DIR": str(tmp / "data"),
        "ANTEROOM_WORKERS": str(args.workers),
        "ANTEROOM_DEMO": "0",
        "ANTEROOM_KEY_PREFIX": PREFIX,
        "ANTEROOM_POW_DIFFICULTY": str(DIFFICULTY),
        "ANTEROOM_LIMIT_CHALLENGE": NO_LIMIT,
        "ANTEROOM_LIMIT_IDENTIFY": NO_LIMIT,
        "ANTEROOM_LIMIT_ENTER": NO_LIMIT,
    }
    server = Server(redis_url, tmp / "data", **env)
    rooms: list[str] = []
    kinds_order = ("plain", "near", "far")
    try:
        api_key = KeyStore(client, engine.keys).create(ENV)[0].public_key
        keyring = Keyring.parse(keys)

        def line_room(slug: str, ahead: int) -> str:
            room_id = engine.create_room(
                ENV,
                {"slug": slug, "name": "b", "redirectUrl": "https://x.example/",
                 "ratePerMinute": 1, "abandonAfterSec": 3600},
            )["id"]  # fmt: skip
            rooms.append(room_id)
            engine.open(room_id)
            for i in range(ahead):
                engine.enter(room_id, f"ahead{i}", "s", 10)
            return room_id

        t0 = time.monotonic()
        per_near = 100 - NEAR_AHEAD
        near_tickets: list[str] = []
        for n in range(NEAR_ROOMS):
            room_id = line_room(f"http-near-{n}", NEAR_AHEAD)
            near_tickets += mint_tickets(engine, keyring, room_id, per_near, f"n{n}-")
        far_room = line_room("http-far", FAR_AHEAD)
        far_tickets = mint_tickets(engine, keyring, far_room, args.tickets, "f")
        door = engine.create_room(
            ENV,
            {"slug": "http-door", "name": "b", "redirectUrl": "https://x.example/",
             "ratePerMinute": 100_000},
        )["id"]  # fmt: skip
        rooms.append(door)
        engine.open(door)
        setup = time.monotonic() - t0
        server.start()
        port = server.port
        admitted = enter_all(server.url, api_key, "http-door", 1, threads=1)[0]
        assert admitted["status"] == "admitted" and admitted["token"], admitted
        print(
            f"gunicorn: {args.workers} gevent workers, {args.connections} keep-alive "
            f"connections; {len(near_tickets)} near spots (positions {NEAR_AHEAD + 1}-100 of "
            f"{NEAR_ROOMS} rooms) and {len(far_tickets)} far spots (positions {FAR_AHEAD + 1}-"
            f"{FAR_AHEAD + args.tickets}) set up in {setup:.1f}s"
        )

        near_tickets = current_tickets(port, api_key, near_tickets)
        far_tickets = current_tickets(port, api_key, far_tickets)
        bodies = {
            "near": [{"apiKey": api_key, "ticket": t} for t in near_tickets],
            "far": [{"apiKey": api_key, "ticket": t} for t in far_tickets],
        }
        waiting = b'"status":"waiting"'
        kinds: dict[str, tuple[Sequence[bytes], bytes]] = {
            "plain": ([encode_get("/healthz", port)], b'"status":"ok"'),
            "near": ([encode_post("/api/v1/queue/poll", b, port) for b in bodies["near"]], waiting),
            "far": ([encode_post("/api/v1/queue/poll", b, port) for b in bodies["far"]], waiting),
        }
        rps: dict[str, list[float]] = {k: [] for k in kinds_order}
        tally: dict[str, Counter[str]] = {k: Counter() for k in kinds_order}
        splits: Counter[str] = Counter()

        assert server.process is not None
        web_pids = [server.process.pid, *server.workers()]
        cpu_us: dict[str, list[float]] = {k: [] for k in kinds_order}

        def measure(kind: str, seconds: float) -> tuple[float, Counter[str]]:
            conns, split = server.connections(args.connections)
            splits["/".join(map(str, split))] += 1
            cpu0 = cpu_seconds(web_pids) + redis_cpu(client)
            try:
                value, counts = load_round(conns, kinds[kind][0], seconds, kinds[kind][1])
            finally:
                for conn in conns:
                    conn.close()
            used = cpu_seconds(web_pids) + redis_cpu(client) - cpu0
            cpu_us[kind].append(used / max(1, counts.total()) * 1e6)
            return value, counts

        for kind in kinds_order:  # warm-up: workers' caches, connections, scripts
            measure(kind, 1.0)
        for r in range(args.rounds):
            shift = r % len(kinds_order)  # each kind takes each slot of a round in turn
            for kind in kinds_order[shift:] + kinds_order[:shift]:
                value, counts = measure(kind, args.seconds)
                rps[kind].append(value)
                tally[kind] += counts
            last = "  ".join(f"{k} {v[-1]:6.0f}" for k, v in rps.items())
            print(f"  round {r + 1}: {last} req/s")
        server.stop()

        # Server-side costs, in process (the HTTP server is stopped: nothing competes).
        settings = Settings.from_env(env)
        app = create_app(settings)
        caller = WsgiCaller(app)
        # The same polls through the Flask views alone (behind the hot path), side by side.
        views = WsgiCaller(getattr(app.wsgi_app, "inner", app.wsgi_app))

        def poll_env(kind: str) -> Callable[[int], dict[str, Any]]:
            def make(i: int) -> dict[str, Any]:
                body = bodies[kind][i % len(bodies[kind])]
                return WsgiCaller.environ("POST", "/api/v1/queue/poll", body)

            return make

        def plain_env(_: int) -> dict[str, Any]:
            return WsgiCaller.environ("GET", "/healthz")

        app_costs(caller, poll_env("far"), b'"waiting"', 1, 200)  # warm-up
        app_costs(caller, poll_env("near"), b'"waiting"', 1, 200)
        app_us: dict[str, list[float]] = {k: [] for k in (*kinds_order, "near_views", "far_views")}
        for _ in range(5):  # interleaved batches, like the HTTP rounds
            app_us["near"] += app_costs(caller, poll_env("near"), b'"waiting"', 1, 300)
            app_us["near_views"] += app_costs(views, poll_env("near"), b'"waiting"', 1, 300)
            app_us["far"] += app_costs(caller, poll_env("far"), b'"waiting"', 1, 300)
            app_us["far_views"] += app_costs(views, poll_env("far"), b'"waiting"', 1, 300)
            app_us["plain"] += app_costs(caller, plain_env, b'"ok"', 1, 300)
        if args.profile:
            profile_polls(caller, poll_env("far"))
        challenge_us, identify_us = identify_costs(caller, api_key, batches=5, per=200)
        verify_us = verify_costs(admitted["token"], keys, "http-door", batches=7, per=5000)

        median_rps = {k: statistics.median(v) for k, v in rps.items()}
        # CPU (web + Redis) per request: what a poll costs, whatever else runs on the machine.
        cpu = {k: statistics.median(v[1:] or v) for k, v in cpu_us.items()}  # warm-up left out
        ok_share = {k: round(t["ok"] / t.total(), 4) for k, t in tally.items()}
        results: dict[str, Any] = {
            "near_poll_rps": round(median_rps["near"]),
            "far_poll_rps": round(median_rps["far"]),
            "plain_rps": round(median_rps["plain"]),
            "near_poll_ratio": round(median_rps["near"] / median_rps["plain"], 3),
            "far_poll_ratio": round(median_rps["far"] / median_rps["plain"], 3),
            "cpu_us_per_request": {k: round(v, 1) for k, v in cpu.items()},
            "near_poll_cpu_ratio": round(cpu["plain"] / cpu["near"], 3),
            "far_poll_cpu_ratio": round(cpu["plain"] / cpu["far"], 3),
            "identify_us": median(identify_us),
            "verify_us": median(verify_us, 2),
            "challenge_us": median(challenge_us),
            "near_poll_app_us": median(app_us["near"]),
            "far_poll_app_us": median(app_us["far"]),
            "near_poll_views_app_us": median(app_us["near_views"]),
            "far_poll_views_app_us": median(app_us["far_views"]),
            "plain_app_us": median(app_us["plain"]),
            "ok_share": ok_share,
            "answers": {k: dict(t) for k, t in tally.items()},
            "setup": {
                "workers": args.workers,
                "worker_class": "anteroom.ops.gevent_worker.Worker",
                "connections": args.connections,
                "connections_per_worker": dict(splits),
                "rounds": args.rounds,
                "round_seconds": args.seconds,
                "near_tickets": len(near_tickets),
                "far_tickets": len(far_tickets),
                "far_positions_from": FAR_AHEAD + 1,
                "cpus": os.cpu_count(),
            },
        }
        table(results, rps)
        for kind, share in ok_share.items():
            assert share >= 0.99, f"only {share:.1%} of {kind} answers were 200 OK: {tally[kind]}"
        out = ROOT / "bench" / "results" / "http.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)} in {time.monotonic() - started:.0f}s")
    finally:
        server.stop()
        for room in rooms:
            with contextlib.suppress(Exception):  # best effort: the benchmark's own rooms
                engine.delete_room(room)
        if embedded:
            embedded.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def table(results: dict[str, Any], rps: dict[str, list[float]]) -> None:
    rows: list[tuple[str, str, Callable[[], str]]] = [
        ("near_poll_rps", "poll, near the front (full poll), req/s", lambda: spread("near")),
        ("far_poll_rps", "poll, far back (snapshot), req/s", lambda: spread("far")),
        ("plain_rps", "GET /healthz (plain JSON), req/s", lambda: spread("plain")),
        ("near_poll_ratio", "near poll / plain (target >= 0.8)", lambda: ""),
        ("far_poll_ratio", "far poll / plain (target >= 1.0)", lambda: ""),
        ("near_poll_cpu_ratio", "plain / near poll CPU (web + Redis) per request", lambda: ""),
        ("far_poll_cpu_ratio", "plain / far poll CPU (web + Redis) per request", lambda: ""),
        ("identify_us", "identify, server-side µs", lambda: ""),
        ("challenge_us", "challenge, server-side µs", lambda: ""),
        ("near_poll_app_us", "near poll, app-only µs (no HTTP)", lambda: ""),
        ("far_poll_app_us", "far poll, app-only µs (no HTTP)", lambda: ""),
        ("near_poll_views_app_us", "near poll, Flask views only µs (no hot path)", lambda: ""),
        ("far_poll_views_app_us", "far poll, Flask views only µs (no hot path)", lambda: ""),
        ("plain_app_us", "healthz, app-only µs (no HTTP)", lambda: ""),
        ("verify_us", "verify_admission µs", lambda: ""),
    ]

    def spread(kind: str) -> str:
        return f"(rounds {min(rps[kind]):.0f}-{max(rps[kind]):.0f})"

    print()
    for key, label, extra in rows:
        print(f"{label:<48} {results[key]:>10} {extra()}")
    shares = ", ".join(f"{k} {v:.2%}" for k, v in results["ok_share"].items())
    print(f"{'share of 200 answers':<48} {shares}")
    print()


if __name__ == "__main__":
    main()
