"""The headless JavaScript client (frontend/headless/) under Node, against a live Anteroom.

Node scripts (headless/*.mjs) run the client as an app would: a visitor queued and admitted,
an app killed in the line and restarted (it polls its kept spot), and ``queueThrough`` against
the real edge middleware in front of a real Flask app. The room's clock is pinned: the line
moves only when the test moves it, on seeing the script report its place, so nothing waits on
timing.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from flask import Flask, jsonify, request
from flask.typing import ResponseReturnValue
from werkzeug.serving import make_server

from anteroom.edge import AnteroomEdge, admission
from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import TEST_KEYS, make_room
from live_server import LiveServer, LiveServers

pytestmark = [pytest.mark.redis, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).with_name("headless")  # the node scripts: an app, a visitor
DRIVER = ROOT / "frontend" / "headless" / "conformance-driver.mjs"
NODE = shutil.which("node") or "node"
ANTEROOM_ENV = {
    "ANTEROOM_POW_DIFFICULTY": "4",
    "ANTEROOM_WORKERS": "2",
    # Every visitor here comes from 127.0.0.1: the per-address limits are not under test.
    "ANTEROOM_LIMIT_CHALLENGE": "1000/minute",
    "ANTEROOM_LIMIT_IDENTIFY": "1000/minute",
    "ANTEROOM_LIMIT_ENTER": "1000/minute",
}
WAIT = 30.0  # seconds a script may take to say its next line (a slow shared machine)


class Script:
    """A node process whose stdout lines (JSON) are read as they come."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command,
            env=os.environ | env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def until(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first line from here on that ``wanted`` accepts; fails if the script ends first."""
        while True:
            try:
                line = self.lines.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no such line in {WAIT} s; saw {self.seen}") from None
            if line is None:
                rc = self.process.wait()
                raise AssertionError(
                    f"ended (rc {rc}) without it; saw {self.seen}: {self.stderr()}"
                )
            self.seen.append(line)
            if wanted(line):
                return line

    def finish(self) -> int:
        rc = self.process.wait(timeout=WAIT)
        while (line := self.lines.get(timeout=WAIT)) is not None:
            self.seen.append(line)
        return rc

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def close(self) -> None:
        """Ends the process if it still runs, and closes its pipes."""
        if self.process.poll() is None:
            self.kill()
        self.reader.join(timeout=WAIT)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe:
                pipe.close()

    def stderr(self) -> str:
        return self.process.stderr.read() if self.process.stderr else ""


class World:
    """The live Anteroom, a fresh environment and key, rooms on a pinned clock, a shop."""

    def __init__(self, anteroom: LiveServer, redis_client: redis.Redis, tmp: Path) -> None:
        self.anteroom = anteroom
        self.engine = Engine(redis_client)
        self.env = "app-" + secrets.token_hex(4)
        self.api_key = KeyStore(redis_client, self.engine.keys).create(self.env)[0].public_key
        self.tmp = tmp
        self.rooms: list[str] = []
        self.closing: list[Callable[[], None]] = []

    def room(self) -> str:
        """An open room (60 a minute) on a pinned clock, its bank empty: nobody is admitted
        until the test moves the clock."""
        slug = "drop-" + secrets.token_hex(4)
        room_id = make_room(self.engine, env=self.env, slug=slug, ratePerMinute=60)
        self.engine.set_clock(room_id, self.engine.stats(room_id).now_ms)
        self.engine.open(room_id)
        self.rooms.append(room_id)
        return slug

    def move_line(self, seconds: float = 1) -> None:
        for room_id in self.rooms:
            self.engine.shift_clock(room_id, int(seconds * 1000))

    def script(self, name: str, **env: str) -> Script:
        """Runs ``headless/<name>.mjs`` against the live server with this world's key."""
        server = {"ANTEROOM_URL": self.anteroom.url, "API_KEY": self.api_key}
        run = Script([NODE, str(SCRIPTS / f"{name}.mjs")], server | env)
        self.closing.append(run.close)
        return run

    def shop(self, slug: str) -> str:
        """A Flask app whose cart API is behind the real edge middleware; returns its URL."""
        app = Flask("shop")

        @app.route("/api/cart", methods=["GET", "POST"])
        def cart() -> ResponseReturnValue:
            claims = admission(request.environ) or {}
            return jsonify(visitor=claims.get("vid"), items=request.get_json(silent=True) or [])

        AnteroomEdge(app, keys=TEST_KEYS, base_url=self.anteroom.url, public_key=self.api_key,
                     routes={"/api/cart": slug}, secure_cookie=False)  # fmt: skip
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        self.closing.append(lambda: (server.shutdown(), server.server_close(), thread.join()))
        return f"http://127.0.0.1:{server.server_port}"


@pytest.fixture(scope="module")
def anteroom(module_live_server: LiveServers) -> LiveServer:
    return module_live_server(**ANTEROOM_ENV)


@pytest.fixture
def world(anteroom: LiveServer, redis_client: redis.Redis, tmp_path: Path) -> Iterator[World]:
    made = World(anteroom, redis_client, tmp_path)
    yield made
    for close in reversed(made.closing):
        close()


def calls(lines: list[dict[str, Any]]) -> list[str]:
    return [line["call"] for line in lines if "call" in line]


def test_a_visitor_is_queued_then_admitted(world: World) -> None:
    slug = world.room()
    visitor = world.script("visitor", ROOM=slug, STATE_FILE=str(world.tmp / "state.json"))
    waiting = visitor.until(lambda line: line.get("update") == "waiting")
    assert waiting["position"] == 1
    world.move_line(1)  # one second of the rate: one admission
    done = visitor.until(lambda line: "done" in line)
    assert visitor.finish() == 0
    assert done["done"] == "admitted" and done["token"].startswith("ab1.")
    journey = calls(visitor.seen)
    assert journey[:2] == ["/api/v1/arrive", "/api/v1/queue/join"]
    assert set(journey[2:]) == {"/api/v1/queue/poll"}
    # The admission is kept in the app's storage, for its API calls after a restart.
    kept = json.loads(next(iter(json.loads((world.tmp / "state.json").read_text()).values())))
    assert kept["admitted"]["token"] == done["token"] and kept["queueToken"] is None


def test_an_app_killed_in_line_resumes_the_same_spot(world: World) -> None:
    slug = world.room()
    state = str(world.tmp / "state.json")
    first = world.script("visitor", ROOM=slug, STATE_FILE=state)
    spot = first.until(lambda line: line.get("update") == "waiting")
    first.kill()  # as the OS kills a backgrounded app
    assert calls(first.seen)[:2] == ["/api/v1/arrive", "/api/v1/queue/join"]

    again = world.script("visitor", ROOM=slug, STATE_FILE=state)
    resumed = again.until(lambda line: line.get("update") == "waiting")
    assert (resumed["ticket"], resumed["position"]) == (spot["ticket"], 1)
    world.move_line(1)
    done = again.until(lambda line: "done" in line)
    assert again.finish() == 0 and done["done"] == "admitted"
    # Polled its kept ticket: it never arrived nor joined again.
    assert set(calls(again.seen)) == {"/api/v1/queue/poll"}


def test_queue_through_the_real_edge_repeats_a_get_once_and_never_a_post(world: World) -> None:
    slug = world.room()
    cart = world.shop(slug) + "/api/cart"
    app = world.script("app", CART=cart)
    refused = app.until(lambda line: line.get("result") == "post")
    assert refused["status"] == 429 and refused["body"]["error"] == "QueueRequired"
    assert refused["body"]["room"] == slug
    assert calls(app.seen) == [], "a refused POST does not queue"
    app.until(lambda line: line.get("update") == "waiting")
    world.move_line(1)
    got = app.until(lambda line: line.get("result") == "get")
    assert got["status"] == 200 and got["body"]["visitor"]
    again = app.until(lambda line: line.get("result") == "post-again")
    assert app.finish() == 0
    assert again["status"] == 200
    assert again["body"] == {"visitor": got["body"]["visitor"], "items": ["sku-1"]}
    shop_calls = [(ln["shop"], ln["admission"], ln["status"]) for ln in app.seen if "shop" in ln]
    assert shop_calls == [
        ("POST", False, 429),  # refused, handed back as it came
        ("GET", False, 429),  # refused: the client queues
        ("GET", True, 200),  # repeated once, with the admission
        ("POST", True, 200),  # the kept admission rides from the start
    ]


def test_the_conformance_driver_does_the_plain_journey(world: World) -> None:
    slug = world.room()
    resource = world.shop(slug) + "/api/cart"
    driver = Script(
        [NODE, str(DRIVER)],
        {
            "ANTEROOM_URL": world.anteroom.url,
            "ANTEROOM_ROOM": world.api_key,
            "ANTEROOM_RESOURCE": resource,
            "ANTEROOM_CASE": "plain",
            "ANTEROOM_DEADLINE_MS": "60000",
        },
    )
    world.closing.append(driver.close)
    assert driver.until(lambda line: True) == {"state": "waiting", "position": 1}
    world.move_line(1)
    assert driver.until(lambda line: line["state"] != "waiting") == {"state": "admitted"}
    assert driver.finish() == 0
    assert driver.seen[-1] == {"state": "admitted"}


def test_the_conformance_driver_exits_2_when_the_room_is_not_open(world: World) -> None:
    slug = "shut-" + secrets.token_hex(4)
    make_room(world.engine, env=world.env, slug=slug, ratePerMinute=60)  # never opened: idle
    resource = world.shop(slug) + "/api/cart"
    env = {"ANTEROOM_URL": world.anteroom.url, "ANTEROOM_ROOM": world.api_key,
           "ANTEROOM_RESOURCE": resource, "ANTEROOM_DEADLINE_MS": "60000"}  # fmt: skip
    driver = Script([NODE, str(DRIVER)], env)
    world.closing.append(driver.close)
    assert driver.finish() == 2
    assert driver.seen == [{"state": "closed"}]
