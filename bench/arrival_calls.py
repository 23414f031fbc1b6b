"""The app's and Redis's work per arrival, the four-call journey against the two-call one.

Both journeys go from nothing to a ticket as the browser agent makes them, through the same
Flask app (the WSGI call gunicorn makes, a pre-built request each) on one embedded Redis:

* ``four_calls``: ``challenge {measure}``, ``challenge {measurement}``, ``identify``, ``enter``
  (the agent before issue 31);
* ``two_calls``: ``arrive``, ``queue/join`` (the agent now): the join one round trip to Redis
  (lua/join.lua: the identify limit, the network's count, the proof spent, the entry);
* ``two_calls_apart``: the same calls, the join's halves in calls apart (the identify limit, the
  network's count, the proof's spend, the entry: four round trips), as a Redis Cluster makes
  them and as every join did before lua/join.lua: the before of the one round trip;
* ``two_calls_flask``: the same calls through the Flask views alone (the hot path's fallback,
  as every arrival went before web/visitor/hot_path.py took them): the before of the fast entrance.

The client's proof of work is done before timing (the same pinned work for both: 2^8 hashes).
Figures per arrival: the app's CPU (``time.process_time`` of this process around the app's
calls only: the HTTP server's own cost per request, which the two-call journey halves as well,
is not in them; ``bench/arrivals.py`` measures the whole) and Redis's (``INFO cpu``, sampled
around each batch). Batches alternate between the journeys (the order rotates), each figure is
the median of the batches' means; ``ratio`` = four-call / two-call, measured side by side.

``--http``: the four-call and the two-call journeys also through real gunicorn (``anteroom
serve``, 2 workers, its own embedded Redis), every call on a new connection as a drop's crowd
makes them; per arrival the web processes' CPU (``/proc``: master and workers, the HTTP
server's own work included) and Redis's, batches alternating (``http`` in the JSON).

Run: ``python bench/arrival_calls.py [--batches 9] [--per 100] [--http]``.
Writes ``bench/results/arrival_calls.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# bench/http.py is named like the standard library's ``http``: drop this script's folder from
# the path before anything imports ``http``.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]  # the tests' live server

import os  # noqa: E402

import redis  # noqa: E402
import requests  # noqa: E402
from werkzeug.test import EnvironBuilder  # noqa: E402

from anteroom.config import Settings  # noqa: E402
from anteroom.engine import Engine  # noqa: E402
from anteroom.identity import proof_of_work as pow  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.rooms.key_layout import KeySpace  # noqa: E402
from anteroom.sdk.tokens import Keyring  # noqa: E402
from anteroom.store.keystore import KeyStore  # noqa: E402
from anteroom.web.app_factory import close_app, create_app  # noqa: E402
from anteroom.web.visitor import visit_door  # noqa: E402

HEADERS = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0", "Accept-Language": "en"}
SIGNALS = {"webdriver": False, "languages": 2}
NO_LIMIT = "1000000/second"
SLUG = "drop"


class App:
    """Calls the app as gunicorn's worker does; counts the CPU of those calls only."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.status = ""
        self.cpu = 0.0
        self.calls = 0
        self.address = 0

    def _start(self, status: str, headers: Any, exc_info: Any = None) -> None:
        self.status = status

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        builder = EnvironBuilder(
            path="/api/v1/" + path, method="POST", json=body, headers=HEADERS,
            environ_base={"REMOTE_ADDR": f"10.{self.address // 65536 % 256}."
                          f"{self.address // 256 % 256}.{self.address % 256}"},
        )  # fmt: skip
        environ = builder.get_environ()
        builder.close()
        t0 = time.process_time()
        result = self.app(environ, self._start)
        try:
            raw = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        self.cpu += time.process_time() - t0
        self.calls += 1
        assert self.status.startswith("200"), (path, self.status, raw[:300])
        return dict(json.loads(raw))


class HttpApp(App):
    """The same calls through a real server, each on a new connection; counts calls only."""

    def __init__(self, base_url: str) -> None:
        super().__init__(None)
        self.base_url = base_url

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = HEADERS | {"Connection": "close"}
        answer = requests.post(f"{self.base_url}/api/v1/{path}", json=body, headers=headers,
                               timeout=10)  # fmt: skip
        self.calls += 1
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
        return dict(answer.json())


def process_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) used so far by ``pids`` (Linux /proc)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def http_figures(batches: int, per: int) -> dict[str, Any]:
    """Server CPU per arrival (web and Redis) through ``anteroom serve``, the journeys side by
    side (see the module's docstring)."""
    from live_server import LiveServer, children_of

    tmp = Path(tempfile.mkdtemp(prefix="anteroom-bench-arrival-http-"))
    embedded = EmbeddedRedis(tmp / "redis", port=0).start()
    client = redis.Redis.from_url(embedded.url, decode_responses=True)
    key = KeyStore(client, KeySpace()).create("bench")[0].public_key
    engine = Engine(client)
    config = {"slug": SLUG, "name": "Drop", "ratePerMinute": 1, "maxWaiting": 1_000_000}
    engine.open(
        engine.create_room("bench", config | {"redirectUrl": "https://shop.example/"})["id"]
    )
    limits = {f"ANTEROOM_LIMIT_{name}": NO_LIMIT for name in ("CHALLENGE", "IDENTIFY", "ENTER")}
    server = LiveServer(embedded.url, tmp / "web", ANTEROOM_WORKERS="2",
                        ANTEROOM_POW_DIFFICULTY="8", **limits).start()  # fmt: skip
    per_batch: dict[str, dict[str, list[float]]] = {}
    try:
        assert server.process is not None
        pids = [server.process.pid, *children_of(server.process.pid)]
        app = HttpApp(server.url)
        journeys = {"four_calls": four_calls, "two_calls": two_calls}
        for journey in journeys.values():  # warm
            for _ in range(10):
                journey(app, key)
        per_batch = {name: {"web_ms": [], "redis_ms": []} for name in journeys}
        order = list(journeys)
        for batch in range(batches):
            for name in order[batch % 2 :] + order[: batch % 2]:
                web, red = process_cpu(pids), redis_cpu(client)
                for _ in range(per):
                    journeys[name](app, key)
                per_batch[name]["web_ms"].append((process_cpu(pids) - web) / per * 1000)
                per_batch[name]["redis_ms"].append((redis_cpu(client) - red) / per * 1000)
    finally:
        server.stop()
        client.close()
        embedded.stop()
    out: dict[str, Any] = {}
    for name, figures in per_batch.items():
        web = statistics.median(figures["web_ms"])
        red = statistics.median(figures["redis_ms"])
        out[name] = {
            "web_cpu_ms_per_arrival": round(web, 3),
            "redis_cpu_ms_per_arrival": round(red, 3),
            "server_cpu_ms_per_arrival": round(web + red, 3),
        }
    four, two = out["four_calls"], out["two_calls"]
    out["ratio_server_cpu"] = round(
        four["server_cpu_ms_per_arrival"] / two["server_cpu_ms_per_arrival"], 2
    )
    out["setup"] = {"workers": 2, "new_connection_per_call": True, "batches": batches, "per": per}
    return out


def solved(puzzles: list[dict[str, Any]]) -> list[str]:
    return [pow.solve(p["prefix"], p["difficulty"]) for p in puzzles]


def four_calls(app: App, key: str) -> None:
    """The agent before: measure, the fitted challenge, identify, enter."""
    ask = {"apiKey": key, "room": SLUG, "maxPuzzles": 16, "signals": SIGNALS}
    probe = app.post("challenge", ask | {"measure": True})
    measurement = {"challenge": probe["challenge"], "solutions": solved(probe["puzzles"]),
                   "hashesPerSecond": 2_000_000.0}  # fmt: skip
    issued = app.post("challenge", ask | {"measurement": measurement})
    body = {"apiKey": key, "challenge": issued["challenge"], "signals": SIGNALS}
    session = app.post("identify", body | {"solutions": solved(issued["puzzles"])})
    entry = {"apiKey": key, "room": SLUG, "sessionToken": session["sessionToken"]}
    assert app.post("queue/enter", entry)["queueToken"]


def two_calls(app: App, key: str) -> None:
    """The agent now: arrive, then join."""
    issued = app.post("arrive", {"apiKey": key, "room": SLUG, "signals": SIGNALS})
    body = {"apiKey": key, "room": SLUG, "challenge": issued["challenge"], "signals": SIGNALS}
    joined = app.post("queue/join", body | {"solutions": solved(issued["puzzles"])})
    assert joined["queue"]["queueToken"]


def two_calls_flask(app: App, key: str) -> None:
    """The two calls through Flask's request cycle (see the module's docstring)."""
    hot, app.app = app.app, app.app.inner
    try:
        two_calls(app, key)
    finally:
        app.app = hot


def two_calls_apart(app: App, key: str) -> None:
    """The two calls, the join's Redis work in calls apart (see the module's docstring)."""
    two_calls(app, key)


ONE_TRIP = visit_door.WebDoor.identify_counters


def _apart(door: visit_door.WebDoor) -> None:
    return None  # as on a Redis Cluster: the caller identifies and enters in calls apart


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def _journey(name: str) -> None:
    """The join's halves apart for ``two_calls_apart``, in one round trip for the others."""
    apart = name == "two_calls_apart"
    visit_door.WebDoor.identify_counters = _apart if apart else ONE_TRIP  # type: ignore[assignment,method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=9, help="batches of each journey")
    parser.add_argument("--per", type=int, default=100, help="arrivals per batch")
    parser.add_argument("--http", action="store_true", help="also through real gunicorn")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="anteroom-bench-arrival-calls-"))
    embedded = EmbeddedRedis(tmp / "redis", port=0).start()
    settings = Settings(
        redis_url=embedded.url, keys=Keyring.generate().serialize(), pow_difficulty=8,
        data_dir=str(tmp / "data"), limit_challenge=NO_LIMIT, limit_identify=NO_LIMIT,
        limit_enter=NO_LIMIT,
    )  # fmt: skip
    flask_app = create_app(settings)
    try:
        services = flask_app.extensions["anteroom"]
        key = services.keystore.create("bench")[0].public_key
        engine: Engine = services.engine
        config = {"slug": SLUG, "name": "Drop", "ratePerMinute": 1}
        room = engine.create_room("bench", config | {"redirectUrl": "https://shop.example/"})["id"]
        engine.open(room)
        client = redis.Redis.from_url(embedded.url)
        app = App(flask_app.wsgi_app)
        journeys: dict[str, Callable[[App, str], None]] = {
            "four_calls": four_calls,
            "two_calls": two_calls,
            "two_calls_apart": two_calls_apart,
            "two_calls_flask": two_calls_flask,
        }
        for name, journey in journeys.items():  # warm: scripts loaded, caches filled
            _journey(name)
            for _ in range(10):
                app.address += 1
                journey(app, key)
        per_batch: dict[str, dict[str, list[float]]] = {
            name: {"app_ms": [], "redis_ms": [], "calls": []} for name in journeys
        }
        order = list(journeys)
        for batch in range(args.batches):
            for name in order[batch % 4 :] + order[: batch % 4]:
                _journey(name)
                app.cpu, app.calls = 0.0, 0
                before = redis_cpu(client)
                for _ in range(args.per):
                    app.address += 1
                    journeys[name](app, key)
                spent = redis_cpu(client) - before
                per_batch[name]["app_ms"].append(app.cpu / args.per * 1000)
                per_batch[name]["redis_ms"].append(spent / args.per * 1000)
                per_batch[name]["calls"].append(app.calls / args.per)
        client.close()
    finally:
        close_app(flask_app)
        embedded.stop()
    results: dict[str, Any] = {}
    for name, figures in per_batch.items():
        results[name] = {
            "app_cpu_ms_per_arrival": round(statistics.median(figures["app_ms"]), 3),
            "redis_cpu_ms_per_arrival": round(statistics.median(figures["redis_ms"]), 3),
            "calls_per_arrival": statistics.median(figures["calls"]),
            "batches_app_cpu_ms": [round(x, 3) for x in figures["app_ms"]],
        }
    four, two = results["four_calls"], results["two_calls"]
    apart = results["two_calls_apart"]
    results["ratio"] = {
        "app_cpu": round(four["app_cpu_ms_per_arrival"] / two["app_cpu_ms_per_arrival"], 2),
        "redis_cpu": round(
            four["redis_cpu_ms_per_arrival"] / max(1e-9, two["redis_cpu_ms_per_arrival"]), 2
        ),
        "apart_over_one_trip_app_cpu": round(
            apart["app_cpu_ms_per_arrival"] / two["app_cpu_ms_per_arrival"], 2
        ),
        "apart_over_one_trip_redis_cpu": round(
            apart["redis_cpu_ms_per_arrival"] / max(1e-9, two["redis_cpu_ms_per_arrival"]), 2
        ),
        "flask_over_hot_path_app_cpu": round(
            results["two_calls_flask"]["app_cpu_ms_per_arrival"] / two["app_cpu_ms_per_arrival"],
            2,
        ),
    }
    results["setup"] = {"batches": args.batches, "per": args.per, "pow_bits": 8}
    if args.http:
        results["http"] = http_figures(args.batches, args.per)
    out = ROOT / "bench" / "results" / "arrival_calls.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    for name in journeys:
        r = results[name]
        print(f"{name:>16}: {r['calls_per_arrival']:.0f} calls, app {r['app_cpu_ms_per_arrival']}"
              f" ms, Redis {r['redis_cpu_ms_per_arrival']} ms per arrival")  # fmt: skip
    ratio = results["ratio"]
    print(f"ratio four/two: app {ratio['app_cpu']}x, Redis {ratio['redis_cpu']}x")
    print(f"ratio apart/one trip: app {ratio['apart_over_one_trip_app_cpu']}x,"
          f" Redis {ratio['apart_over_one_trip_redis_cpu']}x")  # fmt: skip
    print(f"ratio Flask views/hot path: app {ratio['flask_over_hot_path_app_cpu']}x")
    if args.http:
        for name in ("four_calls", "two_calls"):
            r = results["http"][name]
            print(f"HTTP {name:>10}: web {r['web_cpu_ms_per_arrival']} ms, Redis"
                  f" {r['redis_cpu_ms_per_arrival']} ms per arrival")  # fmt: skip
        print(f"HTTP ratio four/two: server CPU {results['http']['ratio_server_cpu']}x")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
