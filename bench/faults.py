"""Faults that are not outages (issue 21): what a reset, an outage, a slow Redis and idle clients
cost the service, measured through a fault-injecting proxy (tests/fault_proxy.py) between a real
``anteroom serve`` (gunicorn, 4 workers) and Redis.

    python bench/faults.py [--only resets,ghosts,latency,idle] [--out bench/results/faults.json]

- resets: 16 visitors poll (8 in a failMode closed room, 8 in an open one) while every Redis
  connection is reset every 2 s; 503 and fail-open answers per reset.
- ghosts: 30 visitors wait in an open room; Redis is down 3 s (they get fail-open admissions);
  the room's active count 2 s after it is back; then 10 newcomers and the rate raised so the
  line drains: ghosts are admissions dealt that no visitor saw.
- latency: +600 ms on every Redis reply; p50 of enter, poll and refresh (8 visitors at once).
- idle: 1,000 idle TCP connections and 100 clients sending a request a byte a second; latency
  of /healthz and of polls from another client (p50, p99; 10 s counts as a timeout).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402
import requests  # noqa: E402

from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.line.room_engine import Engine  # noqa: E402
from anteroom.queue.rooms.room_directory import REFRESH_SEC  # noqa: E402
from anteroom.store.keystore import KeyStore  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from helpers import free_port, make_room  # noqa: E402
from live_server import LiveServer  # noqa: E402
from visitor_client import Visitor  # noqa: E402

ROUNDS_IDLE = 10  # a /healthz and a poll each; before the fix each could take its 10 s timeout
SERVER_ENV = {
    "ANTEROOM_POW_DIFFICULTY": "4",
    "ANTEROOM_TRUSTED_PROXIES": "1",
    "ANTEROOM_LIMIT_IDENTIFY": "100000/minute",
    "ANTEROOM_LIMIT_ENTER": "100000/minute",
    "ANTEROOM_LIMIT_CHALLENGE": "100000/minute",
}


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, in ms (nearest rank)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def crowd(url: str, api_key: str, slug: str, n: int, prefix: str) -> list[Visitor]:
    visitors = [Visitor(url, api_key, address=f"198.18.{prefix}.{i + 1}") for i in range(n)]
    for v in visitors:
        for _ in range(20):  # a breaker still open from the last scenario answers 503 a while
            try:
                answer = v.enter(slug)
            except AssertionError:
                time.sleep(0.5)
                continue
            if answer.status_code == 200:
                break
            time.sleep(0.5)
        assert answer.status_code == 200, answer.text
    return visitors


def keep_polling(
    visitors: list[Visitor], stop: threading.Event, seen: Callable[[Visitor, Any], bool]
) -> list[threading.Thread]:
    """Each visitor polls every 50 ms until ``stop`` or until ``seen`` says it is done."""

    def run(v: Visitor) -> None:
        while not stop.is_set():
            try:
                answer = v.poll()
            except requests.RequestException:
                continue
            if seen(v, answer):
                return
            stop.wait(0.05)

    threads = [threading.Thread(target=run, args=(v,), daemon=True) for v in visitors]
    for t in threads:
        t.start()
    return threads


def resets(url: str, engine: Engine, api_key: str, proxy: FaultProxy) -> dict[str, Any]:
    for slug, mode in (("r-closed", "closed"), ("r-open", "open")):
        room = make_room(engine, env="bench", slug=slug, failMode=mode, ratePerMinute=1)
        engine.open(room)
    closed = crowd(url, api_key, "r-closed", 8, "1")
    opened = crowd(url, api_key, "r-open", 8, "2")
    tally: Counter[str] = Counter()
    lock = threading.Lock()

    def seen(v: Visitor, answer: Any) -> bool:
        with lock:
            if answer.status_code == 503:
                tally["503"] += 1
            elif answer.status_code >= 500:
                tally["5xx"] += 1
            elif answer.json and answer.json.get("failOpen"):
                tally["failOpen"] += 1
            else:
                tally["ok"] += 1
        return False

    stop = threading.Event()
    threads = keep_polling(closed + opened, stop, seen)
    count, aborted = 5, 0
    time.sleep(1)  # a steady state before the first reset
    for _ in range(count):
        aborted += proxy.reset()
        time.sleep(2)
    stop.set()
    for t in threads:
        t.join()
    time.sleep(4)  # the breaker's pause after the last reset, before the next scenario
    return {
        "resets": count,
        "connections_reset": aborted,
        "answers": dict(tally),
        "503_per_reset": round(tally["503"] / count, 1),
        "fail_open_per_reset": round(tally["failOpen"] / count, 1),
    }


def ghosts(url: str, engine: Engine, api_key: str, proxy: FaultProxy) -> dict[str, Any]:
    room = make_room(
        engine, env="bench", slug="g-open", failMode="open", ratePerMinute=1, admissionTtlSec=300
    )
    engine.open(room)
    visitors = crowd(url, api_key, "g-open", 30, "3")
    held: dict[str, str] = {}  # the visitor's address -> "fo" or "seen"
    lock = threading.Lock()

    def seen(v: Visitor, answer: Any) -> bool:
        if answer.status_code == 200 and answer.json["status"] == "admitted":
            with lock:
                held[str(v.address)] = "fo" if answer.json.get("failOpen") else "seen"
            return True
        return False

    stop = threading.Event()
    threads = keep_polling(visitors, stop, seen)
    time.sleep(1)
    proxy.refuse = True
    proxy.reset()
    time.sleep(3)
    proxy.refuse = False
    stop.set()
    for t in threads:
        t.join()
    fail_open = sum(1 for h in held.values() if h == "fo")
    time.sleep(2)  # two ticks after Redis is back
    active_after_recovery = engine.stats(room).active
    # Newcomers after the outage, and the line drained quickly: admissions nobody will see
    # (dealt to spots whose visitors hold a fail-open one) are the ghosts.
    late = crowd(url, api_key, "g-open", 10, "6")
    engine.update_room(room, {"ratePerMinute": 6000})
    stop = threading.Event()
    threads = keep_polling(late, stop, seen)
    time.sleep(6)
    stop.set()
    for t in threads:
        t.join()
    stats = engine.stats(room)
    seen_count = sum(1 for h in held.values() if h == "seen")
    return {
        "visitors": len(visitors) + len(late),
        "fail_open_admissions": fail_open,
        "active_2s_after_recovery": active_after_recovery,
        "admissions_held_by_visitors": len(held),
        "room_active_at_end": stats.active,
        "dealt": stats.dealt_total,
        "seen_by_visitors": seen_count,
        "ghost_admissions": stats.dealt_total - seen_count,
    }


def latency(url: str, engine: Engine, api_key: str, proxy: FaultProxy) -> dict[str, Any]:
    room = make_room(engine, env="bench", slug="l-room", ratePerMinute=1)
    engine.open(room)
    admit = make_room(engine, env="bench", slug="l-admit", ratePerMinute=60000)
    engine.open(admit)
    # Warm processes: every worker's room directory has read the new rooms (one round each).
    time.sleep(REFRESH_SEC + 1)
    visitors = [Visitor(url, api_key, address=f"198.18.4.{i + 1}") for i in range(8)]
    for v in visitors:
        assert v.identify().status_code == 200
    proxy.latency = 0.6
    times: dict[str, list[float]] = {"enter": [], "poll": [], "refresh": []}
    lock = threading.Lock()

    def timed(name: str, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        answer = call()
        with lock:
            times[name].append(time.perf_counter() - start)
        return answer

    def run(v: Visitor) -> None:
        timed("enter", lambda: v.enter("l-room"))
        for _ in range(3):
            timed("poll", v.poll)
        body = {"apiKey": api_key, "room": "l-admit", "sessionToken": v.session}
        answer = v.post("queue/enter", body).json
        while not answer.get("token"):  # the room's bank starts empty: a moment at 1,000/s
            time.sleep(0.05)
            answer = v.post("queue/enter", body).json
        token = answer["token"]
        for _ in range(2):
            timed("refresh", lambda: v.post("admission/refresh", {"apiKey": api_key,
                                                                  "token": token}))  # fmt: skip

    threads = [threading.Thread(target=run, args=(v,)) for v in visitors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    proxy.latency = 0.0
    return {name: {"p50_ms": pct(values, 0.5), "n": len(values)} for name, values in times.items()}


def idle(url: str, port: int, engine: Engine, api_key: str) -> dict[str, Any]:
    room = make_room(engine, env="bench", slug="i-room", ratePerMinute=1)
    engine.open(room)
    poller = Visitor(url, api_key, address="198.18.5.1")
    poller.enter("i-room")
    sockets: list[socket.socket] = []
    for _ in range(1000):
        sockets.append(socket.create_connection(("127.0.0.1", port)))
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
    stop = threading.Event()

    def dribble() -> None:
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        i = 0
        while not stop.wait(1.0):
            for s in slow:
                with contextlib.suppress(OSError):
                    s.send(request[i % len(request) : i % len(request) + 1])
            i += 1

    threading.Thread(target=dribble, daemon=True).start()
    time.sleep(1)
    health: list[float] = []
    polls: list[float] = []
    for _ in range(ROUNDS_IDLE):
        for target, call in (
            (health, lambda: requests.get(url + "/healthz", timeout=10)),
            (polls, poller.poll),
        ):
            start = time.perf_counter()
            with contextlib.suppress(requests.RequestException):  # a timeout counts its 10 s
                call()
            target.append(time.perf_counter() - start)
    stop.set()
    for s in sockets + slow:
        s.close()
    return {
        "idle_connections": 1000,
        "slow_clients": 100,
        "healthz": {"p50_ms": pct(health, 0.5), "p99_ms": pct(health, 0.99)},
        "poll": {"p50_ms": pct(polls, 0.5), "p99_ms": pct(polls, 0.99)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="resets,ghosts,latency,idle")
    parser.add_argument("--out", default=str(HERE / "results" / "faults.json"))
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    wanted = args.only.split(",")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        redis_server = EmbeddedRedis(Path(tmp) / "redis", port=free_port()).start()
        proxy = FaultProxy("127.0.0.1", redis_server.port)
        engine = Engine(redis.Redis.from_url(redis_server.url, decode_responses=True))
        api_key = KeyStore(engine.redis, engine.keys).create("bench")[0].public_key
        server = LiveServer(proxy.url, Path(tmp) / "data", **SERVER_ENV).start()
        try:
            time.sleep(6)  # the room directory's first rounds
            if "resets" in wanted:
                results["resets"] = resets(server.url, engine, api_key, proxy)
                print("resets", results["resets"], flush=True)
            if "ghosts" in wanted:
                results["ghosts"] = ghosts(server.url, engine, api_key, proxy)
                print("ghosts", results["ghosts"], flush=True)
            if "latency" in wanted:
                results["latency_600ms"] = latency(server.url, engine, api_key, proxy)
                print("latency", results["latency_600ms"], flush=True)
            if "idle" in wanted:
                results["idle"] = idle(server.url, server.port, engine, api_key)
                print("idle", results["idle"], flush=True)
            tracebacks = server.output().count("Traceback")
            results["tracebacks_in_server_log"] = tracebacks
        finally:
            server.stop()
            proxy.close()
            redis_server.stop()
    out = Path(args.out)
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous[args.label] = results | {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(previous, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
