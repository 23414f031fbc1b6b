"""Crowd benchmark (issue 19, item 5): hold a crowd of waiting visitors for real and say what it
costs.

One ``anteroom serve`` (gunicorn) runs against its own embedded Redis (or ``--redis-url``). A room
dealing ``--rate`` a minute is filled with ``--visitors`` spots through the engine (their tickets
signed here with the server's keys, the same ``queueToken`` an HTTP enter hands out); then the
whole crowd polls ``POST /api/v1/queue/poll`` over HTTP for ``--seconds``, each visitor exactly as
told: its next poll ``pollAfterMs`` after an answer (with the newest ticket), ``Retry-After``
after a 429, gone after a 410, done once admitted. Each visitor's first poll falls at random
within its first interval, as in a crowd that has been waiting a while. Meanwhile the room deals
at its rate (the server's room ticker and the polls).

The load generator is asyncio on raw keep-alive HTTP/1.1 connections (pre-encoded requests, no
HTTP library), in ``--procs`` processes each holding a share of the crowd; its CPU is reported
(``loadgen_cpu_cores``), and so is how late polls went out against when they were due
(``poll_lag_ms``): a lag that grows means the server (or the generator) could not keep up with
what the cadence asks, and the polls/s figure is then what was served, not what was asked.

Reported: polls/s; web CPU (gunicorn master and workers, /proc) and Redis CPU (``INFO cpu``) in
cores, and per poll (the whole run's CPU over its polls: the room ticker, sweeps and any
bookings are in the numerator, so these are upper bounds; ``redis_us_per_far_poll`` is that
figure, since nearly every poll of a long line is a far one); poll latency p50/p99 as the
generator saw it; admissions and their order (``order_inversions`` at one-second resolution, as
``anteroom rehearse`` counts them); the position shown against the true rank (``ZRANK`` of the
spot in the room's line read right after a sampled answer: the line may move between the two,
by at most the room's rate in that instant); and the model: cores (web + Redis) for 100,000,
1,000,000 and 10,000,000 waiting = polls a second the cadence asks of that many x the measured
CPU per poll. The cadence comes from ``--cadence module:function`` (a function of the number
waiting giving polls a second), else from today's fixed intervals (1 s for the first 10, 2.5 s
to 100, 5 s to 1,000, 15 s beyond) capped at ``--budget`` polls a second.

A last phase measures the far poll where a long line lives (``--far-at``, default 1,000,000):
a second room filled with that many spots, and only its spots beyond the first 3,000 polling at
their own cadence, which for that length asks more polls a second than this machine serves. The
far poll's cost depends on the rate it is served at (a poll that wakes an idle worker by itself
costs about twice one in a busy stream), so the model prices each length's far polls at the
phase whose rate is nearest to what that length asks; ``model.low_rate_cores`` keeps every
length at the held crowd's rate, as before, for comparison.

Run: ``python bench/crowd.py [--visitors 100000 --seconds 180]``; try ``--visitors 2000
--seconds 20 --far-at 0`` first. Writes ``bench/results/crowd.json`` (``--out`` to change).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py is named like the standard library's ``http`` package, and a script's folder
# comes first on sys.path: drop it before anything imports ``http.client``.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]  # the tests' live-server harness

import argparse  # noqa: E402
import asyncio  # noqa: E402
import base64  # noqa: E402
import contextlib  # noqa: E402
import heapq  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402

from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.ops.rehearsal_report import order_inversions  # noqa: E402
from anteroom.queue.connection.script_replies import queue_answer  # noqa: E402
from anteroom.sdk.tokens import Keyring  # noqa: E402
from anteroom.store.keystore import KeyStore  # noqa: E402
from anteroom.visit.answers import queue_token  # noqa: E402
from live_server import LiveServer  # noqa: E402

PREFIX = "benchcrowd:"
ENV = "crowd"
SIZES = (100_000, 1_000_000, 10_000_000)
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
UNSEEN_RETRY_SEC = 5.0  # after a network error or an unexpected answer


# -- the crowd, in the load generator's processes ---------------------------------------------


class Share:
    """One generator process's visitors and what it saw of them."""

    def __init__(self, port: int, api_key: str, tickets: list[tuple[str, str, int]]) -> None:
        self.port = port
        self.api_key = api_key
        self.vids = [vid for vid, _, _ in tickets]
        self.tickets = [ticket for _, ticket, _ in tickets]
        self.first_after = [after for _, _, after in tickets]
        self.polls = 0
        self.statuses: Counter[str] = Counter()
        self.latency_ms: list[float] = []
        self.lag_ms: list[float] = []
        self.admitted: list[tuple[tuple[int, int], int]] = []  # ((generation, ticket), iat s)
        self.positions: list[tuple[int, int]] = []  # (shown, true rank)
        self.far_polls = 0

    def request(self, i: int) -> bytes:
        body = json.dumps({"apiKey": self.api_key, "ticket": self.tickets[i]}).encode()
        head = (
            f"POST /api/v1/queue/poll HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body


def claims_of(token: str) -> dict[str, Any]:
    """A token's claims, read without checking it (the generator only looks)."""
    payload = token.split(".")[2]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))  # type: ignore[no-any-return]


async def crowd(share: Share, seconds: float, connections: int, line_key: str, redis_url: str,
                sample_every: int, seed: int) -> None:  # fmt: skip
    """Every visitor of ``share`` polls as told until ``seconds`` have passed."""
    rng = random.Random(seed)
    loop = asyncio.get_running_loop()
    start = loop.time()
    end = start + seconds
    due: list[tuple[float, int]] = [
        (start + rng.uniform(0, after / 1000), i) for i, after in enumerate(share.first_after)
    ]
    heapq.heapify(due)
    ready: asyncio.Queue[tuple[float, int]] = asyncio.Queue()
    rank_client = redis.Redis.from_url(redis_url, decode_responses=True)
    answered = 0

    async def dispatch() -> None:
        while True:
            now = loop.time()
            if now >= end:
                return
            while due and due[0][0] <= now:
                ready.put_nowait(heapq.heappop(due))
            wait = (due[0][0] - now) if due else 0.05
            await asyncio.sleep(min(max(wait, 0.001), 0.05, end - now))

    async def visit(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered
        while True:
            at, i = await ready.get()
            if loop.time() >= end:
                return
            sent = loop.time()
            share.lag_ms.append((sent - at) * 1000)
            writer.write(share.request(i))
            try:
                status, headers, body = await read_answer(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                share.statuses["network"] += 1
                heapq.heappush(due, (loop.time() + UNSEEN_RETRY_SEC, i))
                return
            share.latency_ms.append((loop.time() - sent) * 1000)
            share.polls += 1
            if status == 200:
                answer = json.loads(body)
                share.statuses[answer["status"]] += 1
                if answer["status"] == "admitted":
                    claims = claims_of(answer["token"])
                    ticket = claims_of(share.tickets[i])
                    share.admitted.append(
                        ((int(ticket["g"]), int(ticket["t"])), int(claims["iat"]))
                    )
                    continue  # in: this visitor is done
                share.tickets[i] = answer["queueToken"] or share.tickets[i]
                position = answer.get("position")
                if isinstance(position, int) and position > 1000:
                    share.far_polls += 1
                answered += 1
                if isinstance(position, int) and answered % sample_every == 0:
                    rank = rank_client.zrank(line_key, share.vids[i])
                    if rank is not None:
                        share.positions.append((position, rank + 1))
                after = (answer.get("pollAfterMs") or 5000) / 1000
            elif status == 410:
                share.statuses["gone"] += 1
                continue
            else:
                share.statuses[str(status)] += 1
                after = float(headers.get("retry-after", UNSEEN_RETRY_SEC))
            heapq.heappush(due, (loop.time() + after, i))

    async def connection() -> None:
        while loop.time() < end:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", share.port)
            except OSError:
                share.statuses["connect-failed"] += 1
                await asyncio.sleep(0.2)
                continue
            try:
                await visit(reader, writer)
            finally:
                writer.close()

    workers = [asyncio.create_task(connection()) for _ in range(connections)]
    await dispatch()
    for _ in workers:
        ready.put_nowait((end, 0))  # wakes each connection to see the end
    await asyncio.wait(workers, timeout=10)
    for task in workers:
        task.cancel()
    rank_client.close()


def run_pool(procs: int, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every share of the crowd in its own generator process, at once."""
    with multiprocessing.get_context("fork").Pool(procs) as pool:
        return pool.map(run_share, jobs)


def run_share(job: dict[str, Any]) -> dict[str, Any]:
    """A generator process: its share of the crowd, and its own CPU time."""
    share = Share(job["port"], job["api_key"], job["tickets"])
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    asyncio.run(
        crowd(share, job["seconds"], job["connections"], job["line_key"], job["redis_url"],
              job["sample_every"], job["seed"])
    )  # fmt: skip
    used = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "polls": share.polls,
        "far_polls": share.far_polls,
        "statuses": dict(share.statuses),
        "latency_ms": share.latency_ms,
        "lag_ms": share.lag_ms,
        "admitted": share.admitted,
        "positions": share.positions,
        "cpu_seconds": used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime,
    }


# -- the server side --------------------------------------------------------------------------


def fill(engine: Engine, keyring: Keyring, room_id: str, count: int, batch: int = 500,
         prefix: str = "c") -> list[tuple[str, str, int]]:  # fmt: skip
    """``count`` spots entered through the engine's own ``enter`` script, pipelined ``batch`` at
    a time: (vid, signed ticket, first pollAfterMs)."""
    room = engine.get_room(room_id)
    # all queue_token reads of the services: the keyring, and the region a ticket names (none)
    no_region = type("Settings", (), {"region": ""})()
    signer = type("Signer", (), {"keyring": keyring, "settings": no_region})()
    enter = engine._scripts["enter"]  # the engine's own script, as metrics.py reads its stats
    keys = engine.script_keys("enter", room_id)
    out = []
    for first in range(0, count, batch):
        vids = [f"{prefix}{i}" for i in range(first, min(count, first + batch))]
        pipe = engine.redis.pipeline(transaction=False)
        for vid in vids:
            enter(keys=keys, args=[vid, "j" + vid, 10, "", ""], client=pipe)
        for vid, raw in zip(vids, pipe.execute(), strict=True):
            answer, _ = queue_answer(raw)
            ticket = queue_token(room, signer, vid, answer)  # type: ignore[arg-type]
            out.append((vid, ticket, answer.poll_after_ms or 5000))
    return out


def cpu_seconds(pids: Sequence[int]) -> float:
    """utime + stime of ``pids`` (Linux /proc); a pid gone meanwhile counts nothing."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICK


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def percentiles(values: Sequence[float], digits: int = 2) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "max": None}
    ordered = sorted(values)
    pick = lambda p: ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]  # noqa: E731
    return {"p50": round(pick(50), digits), "p99": round(pick(99), digits),
            "max": round(ordered[-1], digits)}  # fmt: skip


# -- the model --------------------------------------------------------------------------------


def fixed_intervals(waiting: int) -> float:
    """Polls a second of ``waiting`` visitors at today's fixed intervals (lua/_cadence.lua)."""
    bands = ((10, 1.0), (100, 2.5), (1_000, 5.0))
    total, below = 0.0, 0
    for top, interval in bands:
        total += max(0, min(waiting, top) - below) / interval
        below = top
    return total + max(0, waiting - 1_000) / 15.0


def cadence(
    spec: str | None, budget: float, rate_per_minute: int
) -> tuple[Callable[[int], float], str]:
    """The polls-a-second function of the line's length, and how it was chosen: ``spec``, else
    the engine's own cadence (queue/line/poll_cadence.py) at the run's pace and budget."""
    if spec == "fixed":
        return (
            lambda n: min(fixed_intervals(n), budget),
            f"fixed intervals (1/2.5/5/15 s) capped at {budget:g} polls/s",
        )
    if spec:
        module, _, name = spec.partition(":")
        return getattr(importlib.import_module(module), name), spec
    from anteroom.queue.line.poll_cadence import polls_per_second

    pace = rate_per_minute / 60
    return (
        lambda n: polls_per_second(n, pace, int(budget)),
        f"the engine's cadence (poll_cadence.polls_per_second) at {pace:g}/s, budget {budget:g}",
    )


def near_polls_per_second(line: int, rate_per_minute: int, budget: float) -> float:
    """Polls a second of the spots a far poll never answers (within EXACT_WITHIN after allowing
    for unseen admissions, far_poll.py): they go to Redis whatever the line's length."""
    from anteroom.queue.line.far_poll import EXACT_WITHIN, MAX_ADMIT
    from anteroom.queue.line.poll_cadence import poll_after

    pace = rate_per_minute / 60
    near = min(line, EXACT_WITHIN + MAX_ADMIT + math.ceil(pace * 2))
    return sum(1000 / poll_after(p, pace, 0, line, int(budget)) for p in range(1, near + 1))


def far_at_length(args: argparse.Namespace, engine: Engine, keys: str, server: LiveServer,
                  job: dict[str, Any], web_pids: Sequence[int], client: redis.Redis
                  ) -> dict[str, Any] | None:  # fmt: skip
    """The far poll's cost in a room of ``--far-at`` spots, its far spots at their own cadence
    (more polls a second than this machine serves: what it costs in a busy stream)."""
    if args.far_at <= 0:
        return None
    room = engine.create_room(
        ENV,
        {"slug": "crowd-long", "name": "Crowd (long)", "redirectUrl": "https://x.example/",
         "ratePerMinute": args.rate, "maxWaiting": args.far_at + 1},
    )["id"]  # fmt: skip
    try:
        engine.open(room)
        t0 = time.monotonic()
        tickets = fill(engine, Keyring.parse(keys), room, args.far_at, prefix="L")
        print(f"filled {args.far_at:,} spots in {time.monotonic() - t0:.0f}s for the far phase")
        far = [t for t in tickets if int(t[0][1:]) >= 3_000]
        del tickets
        jobs = [
            job | {"tickets": far[p :: args.procs], "seconds": args.far_seconds,
                   "line_key": engine.keys.room_keys(room)["line"], "sample_every": 10**9,
                   "seed": 100 + p}
            for p in range(args.procs)
        ]  # fmt: skip
        results, web, redis_used, wall = phase_cpu(
            web_pids, client, lambda: run_pool(args.procs, jobs)
        )
        polls = sum(r["polls"] for r in results)
        lag = [v for r in results for v in r["lag_ms"]]
        out = {
            "waiting": args.far_at,
            "seconds": round(wall, 1),
            "polls": polls,
            "polls_asked_per_second": round(sum(1000 / t[2] for t in far), 1),
            "polls_per_second": round(polls / wall, 1),
            "web_cpu_cores": round(web / wall, 3),
            "redis_cpu_cores": round(redis_used / wall, 3),
            "loadgen_cpu_cores": round(sum(r["cpu_seconds"] for r in results) / wall, 3),
            "us_per_poll": round((web + redis_used) / max(1, polls) * 1e6, 1),
            "redis_us_per_poll": round(redis_used / max(1, polls) * 1e6, 2),
            "poll_lag_ms": percentiles(lag),
        }
        print(f"far phase at {args.far_at:,}: {out}")
        return out
    finally:
        with contextlib.suppress(Exception):
            engine.delete_room(room)


def phase_cpu(web_pids: Sequence[int], client: redis.Redis, run: Callable[[], Any]
              ) -> tuple[Any, float, float, float]:  # fmt: skip
    """``run()``'s result with the web CPU seconds, Redis CPU seconds and wall seconds it took."""
    web0, redis0, wall0 = cpu_seconds(web_pids), redis_cpu(client), time.monotonic()
    result = run()
    wall = time.monotonic() - wall0
    return result, cpu_seconds(web_pids) - web0, redis_cpu(client) - redis0, wall


# -- the run ----------------------------------------------------------------------------------


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--visitors", type=int, default=100_000, help="waiting spots held")
    parser.add_argument("--seconds", type=float, default=180.0, help="length of the crowd's run")
    parser.add_argument("--rate", type=int, default=600, help="the room's admissions a minute")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--procs", type=int, default=1, help="load generator processes")
    parser.add_argument("--connections", type=int, default=128, help="per generator process")
    parser.add_argument("--sample-every", type=int, default=200,
                        help="compare one answer in this many with the true rank")  # fmt: skip
    parser.add_argument(
        "--cadence",
        help="module:function giving polls/s for N waiting "
        "(default: the engine's cadence; 'fixed': the old 1/2.5/5/15 s)",
    )
    parser.add_argument("--budget", type=float, default=5000.0,
                        help="the room's pollBudgetPerSecond in the model")  # fmt: skip
    parser.add_argument("--idle-seconds", type=float, default=20.0,
                        help="first, the server with the room dealing and nobody polling: "
                        "its fixed cost")  # fmt: skip
    parser.add_argument("--far-seconds", type=float, default=40.0,
                        help="then only the spots beyond the first 3,000 poll: the far poll's "
                        "own cost")  # fmt: skip
    parser.add_argument("--far-at", type=int, default=1_000_000,
                        help="then a room this long, whose far spots poll at their own cadence: "
                        "the far poll's cost at the rate a long line asks (0: skip)")  # fmt: skip
    parser.add_argument("--redis-url")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "crowd.json"))
    args = parser.parse_args()
    polls_per_second_at, cadence_model = cadence(args.cadence, args.budget, args.rate)
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="anteroom-bench-crowd-"))
    embedded = None
    if not args.redis_url:
        embedded = EmbeddedRedis(tmp / "redis", port=0).start()
    redis_url = args.redis_url or embedded.url  # type: ignore[union-attr]
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    engine = Engine(client, prefix=PREFIX)
    keys = Keyring.generate().serialize()
    env = {
        "ANTEROOM_KEYS": keys,
        "ANTEROOM_WORKERS": str(args.workers),
        "ANTEROOM_KEY_PREFIX": PREFIX,
        # Abandoned spots aside, nothing here is limited by address: the crowd is one address.
        "ANTEROOM_CONNECTIONS_PER_ADDRESS": "0",
    }
    server = LiveServer(redis_url, tmp / "data", **env)
    room = None
    try:
        api_key = KeyStore(client, engine.keys).create(ENV)[0].public_key
        room = engine.create_room(
            ENV,
            {"slug": "crowd", "name": "Crowd", "redirectUrl": "https://x.example/",
             "ratePerMinute": args.rate, "maxWaiting": max(100_000, args.visitors + 1)},
        )["id"]  # fmt: skip
        engine.open(room)
        t0 = time.monotonic()
        tickets = fill(engine, Keyring.parse(keys), room, args.visitors)
        fill_seconds = time.monotonic() - t0
        print(f"filled {args.visitors:,} spots through the engine in {fill_seconds:.1f}s")
        server.start()
        assert server.process is not None
        web_pids = [server.process.pid, *server.workers()]
        line_key = engine.keys.room_keys(room)["line"]
        shares = [tickets[p :: args.procs] for p in range(args.procs)]
        jobs = [
            {"port": server.port, "api_key": api_key, "tickets": share, "seconds": args.seconds,
             "connections": args.connections, "line_key": line_key, "redis_url": redis_url,
             "sample_every": args.sample_every, "seed": p}
            for p, share in enumerate(shares)
        ]  # fmt: skip
        print(
            f"crowd: {args.visitors:,} visitors polling for {args.seconds:g}s over "
            f"{args.procs} generator process(es) x {args.connections} connections; "
            f"gunicorn {args.workers} workers; room deals {args.rate}/min"
        )
        # The fixed cost: the server holding the room (ticker, sweeps, sampler), nobody polling.
        _, idle_web, idle_redis, idle_wall = phase_cpu(
            web_pids, client, lambda: time.sleep(args.idle_seconds)
        )
        fixed_web, fixed_redis = idle_web / idle_wall, idle_redis / idle_wall
        far_from = min(3_000, args.visitors // 2)  # a tiny crowd (the tests') has no far spots
        # The far poll's own cost: only spots beyond the first 3,000 poll (each generator
        # process keeps its own copy of the tickets: the crowd below starts from the fill's).
        far_jobs = [
            job | {"tickets": [t for t in job["tickets"] if int(t[0][1:]) >= far_from],
                   "seconds": args.far_seconds, "sample_every": 10**9}
            for job in jobs
        ]  # fmt: skip
        far_results, far_web, far_redis, far_wall = phase_cpu(
            web_pids, client, lambda: run_pool(args.procs, far_jobs)
        )
        far_only_polls = sum(r["polls"] for r in far_results)
        fixed = fixed_web + fixed_redis
        print(f"fixed cost {fixed:.3f} cores; far-only phase {far_only_polls} polls")
        results, web_cpu, redis_used, wall = phase_cpu(
            web_pids, client, lambda: run_pool(args.procs, jobs)
        )
        big = far_at_length(args, engine, keys, server, jobs[0], web_pids, client)
        server.stop()

        polls = sum(r["polls"] for r in results)
        far_polls = sum(r["far_polls"] for r in results)
        statuses: Counter[str] = Counter()
        for r in results:
            statuses.update(r["statuses"])
        latency = [v for r in results for v in r["latency_ms"]]
        lag = [v for r in results for v in r["lag_ms"]]
        admitted = [tuple(a) for r in results for a in r["admitted"]]
        errors = [shown - true for r in results for shown, true in r["positions"]]
        loadgen_cpu = sum(r["cpu_seconds"] for r in results)
        seconds = args.seconds
        web_us = web_cpu / polls * 1e6 if polls else None
        redis_us = redis_used / polls * 1e6 if polls else None
        # The flat model (every poll at the run's average cost, fixed costs included): an upper
        # bound, since a long line's polls are nearly all far ones and fixed costs do not grow
        # with the polls.
        flat = {}
        if web_us is not None and redis_us is not None:
            for size in SIZES:
                rate = polls_per_second_at(size)
                flat[str(size)] = round(rate * (web_us + redis_us) / 1e6, 2)
        # The model: fixed cores + near polls x their cost + far polls x theirs. Marginal costs
        # are each phase's CPU less the fixed cores over its wall time; the near poll's is what
        # the crowd's polls cost beyond its far polls at the far-only phase's price. Redis's
        # fixed cost (the sweep walks every spot once a minute) is scaled with the line.
        far_total_us = (far_web + far_redis) / max(1, far_only_polls) * 1e6
        far_us = far_total_us - (fixed_web + fixed_redis) * far_wall / max(1, far_only_polls) * 1e6
        if far_us <= 0:  # the fixed cost's noise exceeded the polls' (a tiny run): all of it
            far_us = far_total_us
        crowd_marginal = web_cpu + redis_used - (fixed_web + fixed_redis) * wall
        near_polls = polls - far_polls
        near_us = 0.0
        if near_polls:
            near_us = (crowd_marginal - far_polls * far_us / 1e6) / near_polls * 1e6
        near_us = max(near_us, far_us)  # a near poll does all a far one does, and Redis's part
        # Each length's far polls at the price measured nearest to the rate it asks of them.
        priced = [(far_only_polls / far_wall, far_us)]
        if big:
            big_us = big["us_per_poll"] - (fixed_web + fixed_redis) / big["polls_per_second"] * 1e6
            priced.append((big["polls_per_second"], max(big_us, 1.0)))
        model, low_rate, parts = {}, {}, {}
        for size in SIZES:
            near_rate = near_polls_per_second(size, args.rate, args.budget)
            far_rate = max(0.0, polls_per_second_at(size) - near_rate)
            fixed = fixed_web + fixed_redis * max(1.0, size / args.visitors)
            rate_us = min(priced, key=lambda p: abs(math.log(max(far_rate, 1.0) / p[0])))[1]
            model[str(size)] = round(fixed + (near_rate * near_us + far_rate * rate_us) / 1e6, 2)
            low_rate[str(size)] = round(fixed + (near_rate * near_us + far_rate * far_us) / 1e6, 2)
            parts[str(size)] = {
                "fixed_cores": round(fixed, 3),
                "near_polls_per_second": round(near_rate, 1),
                "far_polls_per_second": round(far_rate, 1),
                "far_us_per_poll": round(rate_us, 1),
            }
        abs_errors = [abs(e) for e in errors]
        results_out: dict[str, Any] = {
            "waiting_held": args.visitors,
            "seconds": round(wall, 1),
            "polls": polls,
            "polls_per_second": round(polls / wall, 1),
            "polls_asked_per_second": round(polls_per_second_at(args.visitors), 1),
            "far_poll_share": round(far_polls / polls, 4) if polls else None,
            "web_cpu_cores": round(web_cpu / wall, 3),
            "redis_cpu_cores": round(redis_used / wall, 3),
            "loadgen_cpu_cores": round(loadgen_cpu / wall, 3),
            "web_us_per_poll": round(web_us, 1) if web_us else None,
            "redis_us_per_poll": round(redis_us, 2) if redis_us else None,
            "redis_us_per_far_poll": round(redis_us, 2) if redis_us else None,
            "poll_ms": percentiles(latency),
            "poll_lag_ms": percentiles(lag),
            "answers": dict(statuses),
            "admitted": len(admitted),
            "order_inversions": order_inversions(admitted),  # type: ignore[arg-type]
            "position_error": {
                **percentiles(abs_errors, 0),
                "samples": len(errors),
                "shown_better_than_true_max": max([-e for e in errors], default=0),
            },
            "model_cores": model,
            "model": {
                "cadence": cadence_model,
                "how": "fixed cores (idle phase; Redis's scaled with the line) + near polls/s x "
                "near us + far polls/s x far us (marginal CPU, web + Redis: the near poll's from "
                "the crowd, the far poll's from the far phase whose rate is nearest the length's)",
                "low_rate_cores": low_rate,
                "far_at_length_phase": big,
                "polls_per_second": {str(s): round(polls_per_second_at(s), 1) for s in SIZES},
                "parts": parts,
                "fixed_web_cores": round(fixed_web, 3),
                "fixed_redis_cores": round(fixed_redis, 3),
                "far_us_per_poll": round(far_us, 1),
                "near_us_per_poll": round(near_us, 1),
                "far_only_phase": {
                    "seconds": round(far_wall, 1),
                    "polls": far_only_polls,
                    "web_cpu_cores": round(far_web / far_wall, 3),
                    "redis_cpu_cores": round(far_redis / far_wall, 3),
                },
                "cpu_us_per_poll": round((web_us or 0) + (redis_us or 0), 1),
                "flat_model_cores": flat,
            },
            "setup": {
                "rate_per_minute": args.rate,
                "workers": args.workers,
                "loadgen_procs": args.procs,
                "connections_per_proc": args.connections,
                "fill_seconds": round(fill_seconds, 1),
                "cpus": os.cpu_count(),
                "requested_seconds": seconds,
            },
        }
        report(results_out)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results_out, indent=2) + "\n")
        print(f"wrote {out} in {time.monotonic() - started:.0f}s")
    finally:
        server.stop()
        if room is not None:
            with contextlib.suppress(Exception):  # best effort: the benchmark's own room
                engine.delete_room(room)
        client.close()
        if embedded:
            embedded.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def report(r: dict[str, Any]) -> None:
    def ms(d: dict[str, Any]) -> str:
        return f"p50 {d['p50']}  p99 {d['p99']}  max {d['max']}"

    rows = [
        ("waiting visitors held", f"{r['waiting_held']:,}"),
        ("seconds", r["seconds"]),
        (
            "polls served / s",
            f"{r['polls_per_second']} (the cadence asks {r['polls_asked_per_second']})",
        ),
        ("share of far polls (beyond 1,000)", r["far_poll_share"]),
        ("web CPU, cores", r["web_cpu_cores"]),
        ("Redis CPU, cores", r["redis_cpu_cores"]),
        ("load generator CPU, cores", r["loadgen_cpu_cores"]),
        ("web µs / poll (upper bound)", r["web_us_per_poll"]),
        ("Redis µs / poll (upper bound)", r["redis_us_per_poll"]),
        ("poll latency ms", ms(r["poll_ms"])),
        ("poll lag behind schedule ms", ms(r["poll_lag_ms"])),
        ("answers", r["answers"]),
        ("admitted / order inversions", f"{r['admitted']} / {r['order_inversions']}"),
        (
            "position error, places",
            f"{ms(r['position_error'])} ({r['position_error']['samples']} samples)",
        ),
        ("model: cores for N waiting", r["model_cores"]),
        ("model: cadence", r["model"]["cadence"]),
        (
            "model: fixed web / Redis cores",
            f"{r['model']['fixed_web_cores']} / {r['model']['fixed_redis_cores']}",
        ),
        (
            "model: µs per far / near poll",
            f"{r['model']['far_us_per_poll']} / {r['model']['near_us_per_poll']}",
        ),
        ("model at the held crowd's rate only", r["model"]["low_rate_cores"]),
        ("flat model (upper bound)", r["model"]["flat_model_cores"]),
    ]
    big = r["model"]["far_at_length_phase"]
    if big:
        rows.append((
            f"far phase at {big['waiting']:,}",
            f"{big['polls_per_second']} polls/s served (asked {big['polls_asked_per_second']}), "
            f"{big['us_per_poll']} µs/poll (Redis {big['redis_us_per_poll']}), "
            f"lag p50 {big['poll_lag_ms']['p50']} ms",
        ))  # fmt: skip
    print()
    for label, value in rows:
        print(f"{label:<36} {value}")
    print()


if __name__ == "__main__":
    main()
