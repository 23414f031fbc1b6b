"""Where an arrival's app CPU goes: the two calls (``arrive``, ``queue/join``) as
``bench/arrivals.py`` makes them (a browser's headers, its own address behind one trusted proxy,
proof of work pinned at its lowest, as many puzzles solved as the agent would), through the
whole WSGI app gunicorn's worker calls (the request guard of ops/gevent_worker.py included),
on a real embedded Redis, no HTTP server.

Per arrival: the app's CPU (``time.process_time`` around the app's calls, no profiler), Redis's
(``INFO cpu``) and the Redis commands it ran (``INFO commandstats``: calls per arrival, and the
microseconds Redis spent in each). Then, with ``--profile``, the same calls under cProfile:
the functions with the largest own and cumulative time, grouped into the parts named in
:data:`PARTS` (signing, proof check, request models, signal rules, limits, JSON, logging, the
Redis client, the scripts' round trip).

Run: ``python bench/arrival_profile.py [--arrivals 2000] [--profile]``. Writes
``bench/results/arrival_profile.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import orjson  # noqa: E402
import redis  # noqa: E402

from anteroom.config import Settings  # noqa: E402
from anteroom.ops.connection_limits import Limits, RequestGuard  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.sdk.tokens import Keyring  # noqa: E402
from anteroom.web.app_factory import close_app, create_app  # noqa: E402
from pow_solver import Solver  # noqa: E402

SLUG = "drop"
MAX_PUZZLES = 16
SIGNALS = {"webdriver": False, "languages": 2, "hardwareConcurrency": 8,
           "timezone": "Europe/London", "plugins": 5}  # fmt: skip
HEADERS = {
    "HTTP_USER_AGENT": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0 "
    "Safari/537.36",
    "HTTP_ACCEPT": "application/json",
    "HTTP_ACCEPT_LANGUAGE": "en-GB,en;q=0.9",
    "CONTENT_TYPE": "application/json",
    "HTTP_HOST": "127.0.0.1:8000",
    "HTTP_ORIGIN": "http://127.0.0.1:8000",
}
# (part, substrings of "file:function" that belong to it), first match wins.
PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("the harness's own calls (not the app)", ("arrival_profile.py", "pow_solver")),
    ("redis client", ("redis/", "limits/")),
    (
        "request models (pydantic)",
        ("pydantic", "api_models", "visitor_models", "json_body", "model_json"),
    ),
    ("proof check", ("proof_of_work",)),
    (
        "signing (hmac)",
        (
            "tokens.py:sign",
            "tokens.py:decode",
            "tokens.py:_signature",
            "tokens.py:network_tag",
            "hmac",
        ),
    ),
    ("signal rules", ("signal_rules", "ports.py")),
    ("logging", ("logging/", "request_log")),
    ("metrics", ("metrics", "prometheus")),
    ("json", ("json/", "orjson")),
    ("limits", ("address_limits", "local_windows")),
    ("request guard, proxy headers", ("connection_limits", "proxy_fix", "werkzeug")),
    (
        "engine call, its reply",
        ("room_engine", "script_call", "script_replies", "breaker", "poll_limit", "poll_cadence"),
    ),
    (
        "use cases, hot path, answers",
        (
            "hot_path",
            "visit/",
            "visit_door",
            "queue_answers",
            "room_lookup",
            "room_directory",
            "sessions.py",
            "work_inputs",
            "work_rule",
            "tokens.py",
            "base64",
            "ipaddress",
            "room_events",
        ),
    ),
    ("builtins (dict, str, isinstance...)", ("~:",)),
]


class Wsgi:
    """Calls the app as gunicorn's gevent worker does, one request at a time."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.status = ""
        self.cpu = 0.0

    def _start(self, status: str, headers: Any, exc_info: Any = None) -> None:
        self.status = status

    def post(self, path: str, body: dict[str, Any], address: str) -> dict[str, Any]:
        data = orjson.dumps(body)
        environ = {
            "REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "40000", "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(data), "wsgi.errors": sys.stderr, "wsgi.version": (1, 0),
            "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
            "CONTENT_LENGTH": str(len(data)), "HTTP_X_FORWARDED_FOR": address, **HEADERS,
        }  # fmt: skip
        t0 = time.process_time()
        result = self.app(environ, self._start)
        try:
            raw = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        self.cpu += time.process_time() - t0
        assert self.status.startswith("200"), (path, self.status, raw[:300])
        return dict(orjson.loads(raw))


class Arrivals:
    """The agent's two calls, one address each (198.18.0.0/15, as bench/arrivals.py)."""

    def __init__(self, wsgi: Wsgi, key: str, solver: Solver) -> None:
        self.wsgi, self.key, self.solver, self.n = wsgi, key, solver, 0

    def one(self) -> None:
        self.n += 1
        address = f"198.{18 + self.n // 65536 % 2}.{self.n // 256 % 256}.{self.n % 256}"
        ask = {"apiKey": self.key, "room": SLUG, "maxPuzzles": MAX_PUZZLES, "signals": SIGNALS}
        issued = self.wsgi.post("/api/v1/arrive", ask, address)
        solutions, _ = self.solver.solve(issued["puzzles"])  # all of them: the most to check
        join = {"apiKey": self.key, "room": SLUG, "challenge": issued["challenge"],
                "solutions": solutions, "signals": SIGNALS}  # fmt: skip
        answer = self.wsgi.post("/api/v1/queue/join", join, address)
        assert answer["queue"]["queueToken"]


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def commandstats(client: redis.Redis) -> dict[str, tuple[int, float]]:
    """Per command: calls and microseconds so far."""
    return {
        name.removeprefix("cmdstat_"): (int(v["calls"]), float(v["usec"]))
        for name, v in client.info("commandstats").items()
    }


def parts_of(stats: pstats.Stats, total: float) -> dict[str, float]:
    """Own time per part (share of the profiled total)."""
    out: dict[str, float] = {}
    for (file, _line, func), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        name = f"{file}:{func}"
        part = next((p for p, keys in PARTS if any(k in name for k in keys)), "other")
        out[part] = out.get(part, 0.0) + tt
    return {k: round(v / total, 3) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--arrivals", type=int, default=2000, help="arrivals measured")
    parser.add_argument("--batches", type=int, default=5, help="batches (median of their means)")
    parser.add_argument("--profile", action="store_true", help="then the same under cProfile")
    parser.add_argument("--top", type=int, default=40, help="functions printed")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/arrival_profile.json")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="anteroom-bench-arrival-profile-"))
    embedded = EmbeddedRedis(tmp / "redis", port=0).start()
    settings = Settings(
        redis_url=embedded.url, keys=Keyring.generate().serialize(), pow_difficulty=1,
        data_dir=str(tmp / "data"), trusted_proxies=1,
    )  # fmt: skip
    flask_app = create_app(settings)
    result: dict[str, Any] = {}
    try:
        services = flask_app.extensions["anteroom"]
        key = services.keystore.create("bench")[0].public_key
        config = {"slug": SLUG, "name": "Drop", "ratePerMinute": 60, "maxWaiting": 10_000_000}
        room = services.engine.create_room("bench", config | {"redirectUrl": "https://x.example/"})
        services.engine.open(room["id"])
        # As ops/gevent_worker.py wraps it (outermost), minus the greenlet's deadline.
        limits = Limits.from_settings(settings)
        guard = RequestGuard(flask_app, flask_app.wsgi_app, limits, lambda: time.monotonic() + 30,
                             lambda: None)  # fmt: skip
        wsgi = Wsgi(guard)
        solver = Solver()
        crowd = Arrivals(wsgi, key, solver)
        client = redis.Redis.from_url(embedded.url)
        for _ in range(200):  # warm: scripts loaded, caches filled
            crowd.one()
        per = max(1, args.arrivals // args.batches)
        app_ms, redis_ms = [], []
        before_cmds = commandstats(client)
        for _ in range(args.batches):
            wsgi.cpu = 0.0
            red = redis_cpu(client)
            for _ in range(per):
                crowd.one()
            app_ms.append(wsgi.cpu / per * 1000)
            redis_ms.append((redis_cpu(client) - red) / per * 1000)
        after_cmds = commandstats(client)
        measured = per * args.batches
        commands = {}
        for name, (calls, usec) in after_cmds.items():
            c0, u0 = before_cmds.get(name, (0, 0.0))
            if calls - c0 > 0 and name not in ("info",):
                commands[name] = {"calls_per_arrival": round((calls - c0) / measured, 2),
                                  "usec_per_arrival": round((usec - u0) / measured, 2)}  # fmt: skip
        result = {
            "app_cpu_ms_per_arrival": round(statistics.median(app_ms), 3),
            "app_cpu_ms_batches": [round(x, 3) for x in app_ms],
            "redis_cpu_ms_per_arrival": round(statistics.median(redis_ms), 3),
            "redis_commands": dict(
                sorted(commands.items(), key=lambda kv: -kv[1]["usec_per_arrival"])
            ),
            "load_average": round(os.getloadavg()[0], 2),
            "setup": {
                "arrivals": measured,
                "batches": args.batches,
                "pow": "pinned at 2^1",
                "puzzles_solved": "all",
                "solver": solver.kind,
            },
        }
        print(f"app {result['app_cpu_ms_per_arrival']} ms, Redis "
              f"{result['redis_cpu_ms_per_arrival']} ms per arrival "
              f"(batches {result['app_cpu_ms_batches']})")  # fmt: skip
        print("Redis commands per arrival:")
        for name, c in result["redis_commands"].items():
            print(
                f"  {name:>24}: {c['calls_per_arrival']:6.2f} calls {c['usec_per_arrival']:8.2f} µs"
            )
        if args.profile:
            profiler = cProfile.Profile(time.process_time)  # CPU, not wall: Redis runs beside
            wsgi.cpu = 0.0
            profiler.enable()
            for _ in range(per):
                crowd.one()
            profiler.disable()
            stats = pstats.Stats(profiler)
            total = stats.total_tt  # type: ignore[attr-defined]
            result["profile_parts"] = parts_of(stats, total)
            print("own time by part (share):", result["profile_parts"])
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)
        client.close()
    finally:
        close_app(flask_app)
        embedded.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
