"""The Android client (clients/android) against a live ``anteroom serve``.

The library is built with the JDK and its JUnit 5 suite run once for the module; the live
scenarios are Java processes (LiveVisit, ConformanceDriver) whose JSON lines this test reads
while it moves the room's Redis-side clock, so who is admitted when is decided here, never by
timing. The shop in front of the edge runs in this process, on the rooms' clock.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import threading
import time
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
from anteroom.verify import verify_admission
from helpers import TEST_KEYS, make_room
from live_server import LiveServer, LiveServers

pytestmark = [pytest.mark.redis, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ANDROID = ROOT / "clients" / "android"
BUILD = ANDROID / "build"
JSON_JAR = "/usr/share/java/com.android.json.jar"
ANTEROOM_ENV = {
    "ANTEROOM_POW_DIFFICULTY": "6",
    "ANTEROOM_WORKERS": "2",
    # Every visitor here comes from 127.0.0.1: the per-address limits are not under test.
    "ANTEROOM_LIMIT_CHALLENGE": "1000/minute",
    "ANTEROOM_LIMIT_IDENTIFY": "1000/minute",
    "ANTEROOM_LIMIT_ENTER": "1000/minute",
}
LINE_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def junit() -> subprocess.CompletedProcess[str]:
    """Builds the library and the tests, and runs the JUnit suite (once for the module)."""
    return subprocess.run(
        [str(ANDROID / "build.sh"), "test"], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def anteroom(module_live_server: LiveServers) -> LiveServer:
    return module_live_server(**ANTEROOM_ENV)


class Java:
    """A Java process of the client, its stdout read line by line as JSON."""

    def __init__(self, main: str, args: list[str], env: dict[str, str]) -> None:
        classpath = f"{BUILD / 'classes'}:{BUILD / 'test-classes'}:{JSON_JAR}"
        self.process = subprocess.Popen(
            ["java", "-cp", classpath, main, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ | env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def until(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first line from now on that ``wanted`` accepts (all lines are kept in ``seen``)."""
        deadline = time.monotonic() + LINE_TIMEOUT
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                raise AssertionError(f"the process ended first; saw {self.seen}: {self.stderr()}")
            self.seen.append(json.loads(line))
            if wanted(self.seen[-1]):
                return self.seen[-1]

    def wait(self) -> int:
        return self.process.wait(timeout=LINE_TIMEOUT)

    def stderr(self) -> str:
        if self.process.poll() is None:
            return ""
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


class World:
    """One test's room in a fresh environment, on a pinned clock the shop's edge shares."""

    def __init__(self, anteroom: LiveServer, redis_client: redis.Redis, tmp: Path) -> None:
        self.anteroom = anteroom
        self.engine = Engine(redis_client)
        self.env = "android-" + secrets.token_hex(4)
        self.api_key = KeyStore(redis_client, self.engine.keys).create(self.env)[0].public_key
        self.slug = "drop"
        self.room_id = make_room(self.engine, env=self.env, slug=self.slug, ratePerMinute=60)
        self.now = float(int(time.time()))
        self.engine.set_clock(self.room_id, int(self.now * 1000))
        self.engine.open(self.room_id)  # its bank empty: nobody is let in until the clock moves
        self.storage = tmp / "anteroom-state.json"
        self.closing: list[Callable[[], None]] = []

    def advance(self, seconds: float) -> None:
        self.engine.shift_clock(self.room_id, int(seconds * 1000))
        self.now += seconds

    def tickets(self) -> int:
        return self.engine.stats(self.room_id).tickets

    def java(self, main: str, *args: str, **env: str) -> Java:
        base = {
            "ANTEROOM_URL": self.anteroom.url,
            "ANTEROOM_KEY": self.api_key,
            "ANTEROOM_SLUG": self.slug,
            "ANTEROOM_STORAGE": str(self.storage),
        }
        process = Java(main, list(args), base | env)
        self.closing.append(process.close)
        return process

    def shop(self) -> str:
        """A shop whose cart API is behind the edge for this room, served over real HTTP."""
        app = Flask("android-shop")

        @app.route("/api/cart", methods=["GET", "POST"])
        def cart() -> ResponseReturnValue:
            claims = admission(request.environ) or {}
            return jsonify(visitor=claims.get("vid"), method=request.method)

        AnteroomEdge(app, keys=TEST_KEYS, base_url=self.anteroom.url, public_key=self.api_key,
                     routes={"/api/cart": self.slug}, secure_cookie=False,
                     clock=lambda: self.now)  # fmt: skip
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()

        def close() -> None:
            server.shutdown()
            server.server_close()
            thread.join()

        self.closing.append(close)
        return f"http://127.0.0.1:{server.server_port}/api/cart"


@pytest.fixture
def world(
    anteroom: LiveServer,
    redis_client: redis.Redis,
    tmp_path: Path,
    junit: subprocess.CompletedProcess[str],
) -> Iterator[World]:
    assert junit.returncode == 0, junit.stdout + junit.stderr  # the build, before any scenario
    made = World(anteroom, redis_client, tmp_path)
    yield made
    for close in reversed(made.closing):
        close()


def is_state(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda line: line.get("state") == name


def test_the_junit_suite_passes(junit: subprocess.CompletedProcess[str]) -> None:
    assert junit.returncode == 0, junit.stdout + junit.stderr
    assert " 0 tests failed" in junit.stdout
    assert "tests successful" in junit.stdout


def test_the_java_proof_of_work_vectors_are_the_servers_own() -> None:
    """The Java tests' vectors are what the server's proof-of-work code makes now."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pow_vectors", ANDROID / "pow_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ANDROID / "src/test/resources/pow_vectors.json").read_text() == module.render()


def test_a_visitor_solves_the_proof_queues_and_is_admitted(world: World) -> None:
    visit = world.java("dev.anteroom.android.LiveVisit", "until-admitted")
    waiting = visit.until(is_state("waiting"))
    assert waiting["position"] == 1
    assert world.tickets() == 1  # the join took the spot: the server accepted the Java proof
    world.advance(2)  # the room deals one admission a second
    outcome = visit.until(lambda line: "outcome" in line)
    assert visit.wait() == 0
    assert outcome["outcome"] == "admitted"
    checked = verify_admission(outcome["admission"], TEST_KEYS, room=world.slug)
    assert checked.valid, checked
    assert visit.seen[0] == {"state": "entering"}


def test_a_restarted_app_polls_its_kept_place_instead_of_queueing_again(world: World) -> None:
    first = world.java("dev.anteroom.android.LiveVisit", "until-waiting")
    before = first.until(is_state("waiting"))
    assert first.wait() == 0  # halted at once, as a killed app
    kept = json.loads(world.storage.read_text())
    assert any(json.loads(record).get("queueToken") for record in kept.values())
    assert world.tickets() == 1

    again = world.java("dev.anteroom.android.LiveVisit", "until-admitted")  # a new JVM
    resumed = again.until(is_state("waiting"))
    assert resumed["ticket"] == before["ticket"]
    assert world.tickets() == 1
    assert [line for line in again.seen if line.get("state") == "entering"] == []
    world.advance(2)
    outcome = again.until(lambda line: "outcome" in line)
    assert again.wait() == 0
    assert outcome["outcome"] == "admitted"
    assert world.tickets() == 1


def test_a_kept_ticket_the_server_no_longer_accepts_is_replaced(world: World) -> None:
    """A 401 TokenInvalid on poll (the ticket kept from before a key rotation, say) is read
    from the real server's answer, and the client enters afresh instead of failing."""
    key = f"anteroom:{world.anteroom.url}:{world.api_key}:{world.slug}"
    stale = json.dumps({"queueToken": "qt1.gone.e30.c2ln"})
    world.storage.write_text(json.dumps({key: stale}))
    visit = world.java("dev.anteroom.android.LiveVisit", "until-admitted")
    waiting = visit.until(is_state("waiting"))
    assert waiting["position"] == 1
    assert world.tickets() == 1
    world.advance(2)
    assert visit.until(lambda line: "outcome" in line)["outcome"] == "admitted"
    assert visit.wait() == 0
    assert visit.seen[0] == {"state": "entering"}


def test_the_conformance_driver_queues_an_app_call_through_the_real_edge(world: World) -> None:
    resource = world.shop()
    driver = world.java(
        "dev.anteroom.android.ConformanceDriver",
        ANTEROOM_ROOM=world.api_key,
        ANTEROOM_RESOURCE=resource,
        ANTEROOM_CASE="admission",
        ANTEROOM_DEADLINE_MS="60000",
    )
    waiting = driver.until(is_state("waiting"))
    assert waiting["position"] == 1
    world.advance(2)
    driver.until(is_state("admitted"))
    assert driver.wait() == 0  # the resource answered 200 to the call retried with the admission
    assert world.tickets() == 1


def test_the_interceptor_never_queues_for_a_post(world: World) -> None:
    resource = world.shop()
    post = world.java("dev.anteroom.android.LiveVisit", "post", resource)
    answer = post.until(lambda line: "status" in line)
    assert post.wait() == 0
    assert answer == {"status": 429}  # the app's POST is answered as the edge answered it
    assert post.seen == [answer]  # no visit: no state shown
    assert world.tickets() == 0
