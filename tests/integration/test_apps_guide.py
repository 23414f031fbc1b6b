"""The apps guide's examples (docs/apps.md), run as the guide shows them against a live server.

Each example is a file under docs/examples/apps/ that the page shows whole (the docs build
fails when the copy differs: docs_hooks.check_examples); what the page says an example prints
(a ``<!-- prints: … -->`` block) is checked against what it printed here, line by line, any
number standing for any number, ``…`` for any text, and a line the example repeats (another
poll) matched again.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
import redis

from anteroom.edge import AnteroomMiddleware
from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.store.keystore import KeyStore
from anteroom.web.api.openapi_document import document
from helpers import TEST_KEYS, make_room
from live_server import LiveServer, LiveServers
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "apps.md"
EXAMPLES = ROOT / "docs" / "examples" / "apps"
PRINTS = re.compile(r"^<!-- prints: (\S+?)(?: \((\w+)\))? -->\n```text\n(.*?)^```$", re.M | re.S)
APP_PATH = "/api/orders"  # the app's own API, behind the edge


def shown_examples(markdown: str) -> dict[str, str]:
    """docs_hooks.shown_examples (the hooks module lives beside mkdocs.yml, not in a package)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs_hooks.py")
    assert spec and spec.loader
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks.shown_examples(markdown)  # type: ignore[no-any-return]


def printed(example: str, story: str | None = None) -> list[str]:
    """The lines the guide says ``example`` prints (in its named ``story``, if several)."""
    for match in PRINTS.finditer(GUIDE.read_text()):
        if match.group(1) == example and match.group(2) == story:
            return match.group(3).splitlines()
    raise AssertionError(f"the guide shows no output of {example} ({story})")


def line_pattern(line: str) -> re.Pattern[str]:
    escaped = re.escape(line).replace("…", ".*")
    return re.compile(re.sub(r"\d+", r"\\d+", escaped))


def assert_prints(output: list[str], expected: list[str]) -> None:
    """``output`` follows ``expected`` in order, each of its lines matched at least once."""
    patterns = [line_pattern(line) for line in expected]
    at = -1
    for line in output:
        if at >= 0 and patterns[at].fullmatch(line):
            continue  # the same step again (another poll)
        assert at + 1 < len(patterns), f"{line!r} printed after all of {expected}"
        assert patterns[at + 1].fullmatch(line), f"{line!r} is not {expected[at + 1]!r}"
        at += 1
    assert at == len(patterns) - 1, f"stopped at {expected[at]!r}:\n" + "\n".join(output)


class Served:
    """One live server for the module's tests, its Redis and a public key of its environment."""

    def __init__(self, server: LiveServer, redis_url: str) -> None:
        self.server = server
        self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        self.engine = Engine(self.redis)
        self.key = KeyStore(self.redis, self.engine.keys).create("test")[0].public_key


class Line:
    """A room of its own whose one slot is taken: newcomers wait at the front until the test
    lets ``ahead`` leave."""

    def __init__(self, served: Served) -> None:
        self.server, self.engine, self.key = served.server, served.engine, served.key
        self.slug = "app-" + secrets.token_hex(4)
        self.room = make_room(
            self.engine, slug=self.slug, ratePerMinute=60, capacity=1, admissionTtlSec=3_600,
            redirectUrl=f"{self.server.url}/healthz",
        )  # fmt: skip
        self.engine.open(self.room)
        self.engine.shift_clock(self.room, 1_000)  # one admission earned
        self.ahead = Visitor(self.server.url, self.key, "198.51.100.1")
        self.ahead.admitted(self.slug)

    def env(self, **more: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        # the shell example's python3: this one (any Python 3.10 or later would do)
        base["PATH"] = str(Path(sys.executable).parent) + os.pathsep + base.get("PATH", "")
        return base | {
            "ANTEROOM_URL": self.server.url, "ANTEROOM_KEY": self.key,
            "ANTEROOM_ROOM": self.slug, "PYTHONUNBUFFERED": "1",
        } | more  # fmt: skip

    def free_the_slot(self) -> None:
        assert self.ahead.leave().status_code == 204


@pytest.fixture(scope="module")
def served(module_live_server: LiveServers, redis_server: EmbeddedRedis) -> Iterator[Served]:
    """Shared by the module (a server takes seconds to start); each test has its own room.
    Its Redis is not flushed between these tests, which the server keeps using."""
    redis_server_url = redis_server.url
    redis.Redis.from_url(redis_server_url).flushall()
    served = Served(module_live_server(), redis_server_url)
    yield served
    served.redis.close()


@pytest.fixture
def line(served: Served) -> Line:
    return Line(served)


@pytest.fixture
def app_api(line: Line) -> Iterator[str]:
    """The app's own API behind the edge middleware, in this process: 200 with an admission."""

    def orders(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b'{"orders": []}']

    guarded = AnteroomMiddleware(
        orders, keys=TEST_KEYS, base_url=line.server.url, public_key=line.key,
        routes={APP_PATH: line.slug}, secure_cookie=False,
    )  # fmt: skip

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    httpd: WSGIServer = make_server("127.0.0.1", 0, guarded, handler_class=Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}{APP_PATH}"
    httpd.shutdown()
    httpd.server_close()


class Client:
    """docs/examples/apps/client.py in a child process, read line by line."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "client.py")], env=env, cwd=EXAMPLES,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []

    def until(self, start: str) -> str:
        """The lines up to the first that starts with ``start`` (it waits as the client does)."""
        out: IO[str] = self.process.stdout  # type: ignore[assignment]
        for raw in out:
            self.lines.append(raw.rstrip("\n"))
            if raw.startswith(start):
                return self.lines[-1]
        raise AssertionError(f"ended before {start!r}:\n" + "\n".join(self.lines))

    def finish(self) -> list[str]:
        out, _ = self.process.communicate(timeout=60)
        self.lines += out.splitlines()
        assert self.process.returncode == 0, "\n".join(self.lines)
        return self.lines

    def kill(self) -> None:
        self.process.kill()  # as a phone's system ends an app: no word to anyone
        self.process.communicate()


def test_the_guide_shows_every_example_file_whole() -> None:
    shown = shown_examples(GUIDE.read_text())
    files = {f"docs/examples/apps/{p.name}" for p in EXAMPLES.iterdir() if p.is_file()}
    assert set(shown) == files
    for path, text in shown.items():
        assert (ROOT / path).read_text() == text, path


def test_the_curl_journey_prints_what_the_guide_says(line: Line) -> None:
    run = subprocess.run(
        ["sh", str(EXAMPLES / "journey.sh")], env=line.env(), cwd=ROOT,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert_prints(run.stdout.splitlines(), printed("docs/examples/apps/journey.sh"))
    assert line.engine.stats(line.room).waiting == 0  # it left: nobody is left waiting


def test_the_solver_solves_a_live_arrival_and_its_join_is_taken(line: Line) -> None:
    visitor = Visitor(line.server.url, line.key)
    arrival = visitor.arrive(line.slug).json
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "solve.py")], input=json.dumps(arrival),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    solutions = json.loads(run.stdout)
    assert arrival["minPuzzles"] <= len(solutions) <= len(arrival["puzzles"])
    body = {"apiKey": line.key, "room": line.slug, "challenge": arrival["challenge"]}
    joined = visitor.join(body | {"solutions": solutions})
    assert joined.status_code == 200, joined.json
    assert joined.json["queue"]["status"] == "waiting"


def test_the_client_waits_is_admitted_calls_the_app_and_leaves(
    line: Line, app_api: str, tmp_path: Path
) -> None:
    client = Client(line.env(STATE=str(tmp_path / "state.json"), APP_API=app_api))
    client.until("waiting:")
    client.until("waiting:")  # it polls again, as told
    line.free_the_slot()
    lines = client.finish()
    assert_prints(lines, printed("docs/examples/apps/client.py", "first"))
    assert "the app's API answered 200" in lines
    assert not (tmp_path / "state.json").exists()  # nothing kept once it left
    assert line.engine.stats(line.room).active == 0  # its slot went back to the room


def test_the_client_resumes_its_ticket_after_a_restart_and_enters_again_after_410(
    line: Line, tmp_path: Path
) -> None:
    env = line.env(STATE=str(tmp_path / "state.json"))
    first = Client(env)
    first.until("waiting:")
    first.kill()
    kept = json.loads((tmp_path / "state.json").read_text())
    assert kept["queueToken"].startswith("qt1.") and kept["sessionToken"].startswith("st1.")

    again = Client(env)  # restarted: it polls the ticket it kept, no new arrival
    assert again.until("resuming") == "resuming the ticket kept in " + str(tmp_path / "state.json")
    assert again.until("waiting:") == "waiting: position 1, poll again in 1000 ms"
    again.kill()
    assert line.engine.stats(line.room).waiting == 1  # the same spot, not a second one

    # asleep past what the room keeps a quiet spot (abandonAfterSec 300 s + the booking)
    line.engine.shift_clock(line.room, 300_000 + 150_000 + 61_000)
    dropped, done = line.engine.sweep(line.room)
    while not done:
        more, done = line.engine.sweep(line.room)
        dropped += more
    assert dropped == 1

    woken = Client(env)
    woken.until("waiting:")
    line.free_the_slot()
    lines = woken.finish()
    assert_prints(lines, printed("docs/examples/apps/client.py", "woken"))


def test_the_guide_says_what_to_do_for_every_error_an_app_can_get() -> None:
    """Every error code the visitor calls an app makes may answer (the OpenAPI document's own
    list) has its row in the guide's table of answers, under its status."""
    doc = document()
    calls = ("arrive", "queue/join", "queue/poll", "queue/enter", "queue/leave")
    calls += ("admission/refresh",)
    expected: set[tuple[str, str]] = set()
    for call in calls:
        for status, ref in doc["paths"][f"/api/v1/{call}"]["post"]["responses"].items():
            reply = doc["components"]["responses"][ref["$ref"].rsplit("/", 1)[-1]]
            schema = reply.get("content", {}).get("application/json", {}).get("schema", {})
            for code in schema.get("properties", {}).get("error", {}).get("enum", []):
                expected.add((status, code))
    rows = re.findall(r"^\| (\d{3}) \| ([^|]+) \|", GUIDE.read_text(), re.M)
    told = {(status, code) for status, codes in rows for code in re.findall(r"`(\w+)`", codes)}
    assert expected, "the document lists no error codes"
    assert expected - told == set()
