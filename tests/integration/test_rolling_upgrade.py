"""A rolling upgrade and back: the previous release's ``anteroom serve`` and this tree's side by
side on one Redis, with a crowd in line and every visitor polling whichever instances are up.

The previous release (releases.toml; tests/previous_release.py installs it) sets the deployment
up alone: the key, the room, the crowd. Then the instances change as an operator rolls them:
old only, old and new, new only, then back to old and new. Each round moves the room's clock a
second (ten admissions earned, capacity the bound) and polls everyone still waiting, spread over
the instances up; those let in leave. Through every phase: no answer is a 5xx, nobody waiting is
told their spot is gone (410), nobody's position grows, the line lets visitors in strictly by
ticket, and the room never holds more than its capacity.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.sdk import verification as verify
from helpers import TEST_KEYS
from live_server import SERVE, LiveServer
from previous_release import Release, install, previous_release, this_version
from visitor_client import Answer, HttpAnswer, Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

INSTANCE_ENV = {
    "ANTEROOM_WORKERS": "2",
    "ANTEROOM_TRUSTED_PROXIES": "1",  # each visitor's address comes in X-Forwarded-For
    "ANTEROOM_POW_DIFFICULTY": "4",
    "ANTEROOM_LIMIT_CHALLENGE": "100000/minute",  # counted per address: out of the way
    "ANTEROOM_LIMIT_IDENTIFY": "100000/minute",
    "ANTEROOM_LIMIT_ENTER": "100000/minute",
}
CROWD = 200  # in line before the upgrade starts
LATE = 8  # more arriving in each phase, through the instances of that phase
CAPACITY = 8
ROUNDS = 2  # a phase's rounds
MANAGEMENT = "/api/management/v1"
ADDRESSES = (f"198.18.{i // 250}.{i % 250 + 1}" for i in itertools.count())


class Instances:
    """The instances up, as a load balancer sees them: each request goes to the next one."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.answers: list[tuple[str, str, int, str]] = []  # url, path, status, body of 5xx

    def record(self, url: str, path: str, status: int, text: str) -> None:
        self.answers.append((url, path, status, text if status >= 500 else ""))

    def failures(self) -> list[tuple[str, str, int, str]]:
        return [a for a in self.answers if a[2] >= 500]


class Balanced:
    """One visitor's transport: each request to the next instance up (no affinity)."""

    def __init__(self, instances: Instances, start: int) -> None:
        self.instances = instances
        self.turn = itertools.count(start)
        self.session = requests.Session()

    def post(self, path: str, body: Any, headers: Mapping[str, str], address: str | None) -> Answer:
        urls = self.instances.urls
        url = urls[next(self.turn) % len(urls)]
        sent = dict(headers) | ({"X-Forwarded-For": address} if address else {})
        # A connection per request: a kept-alive one the server is closing as the next request
        # goes out is reset, a client-side race (a browser retries it) that is not under test.
        sent["Connection"] = "close"
        answer = HttpAnswer(self.session.post(url + path, json=body, headers=sent, timeout=30))
        self.instances.record(url, path, answer.status_code, answer.text)
        return answer

    def close(self) -> None:
        self.session.close()


@dataclass
class Waiting:
    """A visitor in the line and what the instances told them."""

    visitor: Visitor
    ticket: int = 0
    positions: list[tuple[str, int]] = field(default_factory=list)  # (phase, position)
    admitted_in: str | None = None
    left: bool = False


@dataclass
class Deployment:
    engine: Engine
    room: str
    api_key: str
    secret: str
    instances: Instances
    crowd: list[Waiting] = field(default_factory=list)

    def arrive(self, count: int) -> None:
        """``count`` visitors identify and enter, through the instances up."""
        start = len(self.crowd)
        arrivals = [
            Waiting(Visitor(Balanced(self.instances, start + i), self.api_key, next(ADDRESSES)))
            for i in range(count)
        ]

        def enter(w: Waiting) -> None:
            answer = w.visitor.enter("drop")
            assert answer.status_code == 200, answer.text
            w.ticket = answer.json["ticket"]

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(enter, arrivals))
        self.crowd.extend(arrivals)

    def management(self, url: str, path: str) -> requests.Response:
        auth = {"Authorization": f"Bearer {self.secret}"}
        answer = requests.get(url + MANAGEMENT + path, headers=auth, timeout=30)
        self.instances.record(url, path, answer.status_code, answer.text)
        return answer


@pytest.fixture(scope="module")
def old_release() -> tuple[Release, Path]:
    """The previous release and its ``anteroom`` command (built once, kept under var/)."""
    release = previous_release()
    return release, install(release)


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    with ThreadPoolExecutor(len(started) or 1) as pool:  # each waits for its workers to end
        list(pool.map(LiveServer.stop, started))


def start(
    servers: list[LiveServer],
    redis_server: EmbeddedRedis,
    tmp_path: Path,
    name: str,
    command: Path | None = None,
) -> LiveServer:
    serve = SERVE if command is None else [str(command), "serve"]
    server = LiveServer(redis_server.url, tmp_path / name, command=serve, **INSTANCE_ENV)
    servers.append(server)
    return server.start(timeout=60)


def serves_version(url: str, version: str) -> bool:
    document = requests.get(url + "/api/openapi.json", timeout=30).json()
    return bool(document["info"]["version"] == version)


def test_an_upgrade_and_back_keeps_every_place_order_and_capacity(
    old_release: tuple[Release, Path],
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    servers: list[LiveServer],
    tmp_path: Path,
) -> None:
    release, old = old_release
    assert release.version != this_version()
    first_old = start(servers, redis_server, tmp_path, "old-1", old)
    assert serves_version(first_old.url, release.version)

    # The deployment as the previous release set it up: its key, its room, its crowd.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    made = subprocess.run(
        [str(old), "keys", "create", "--environment", "shop", "--json"],
        env=env | {"ANTEROOM_REDIS_URL": redis_server.url, "ANTEROOM_KEYS": TEST_KEYS},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    key = json.loads(made.stdout)
    auth = {"Authorization": f"Bearer {key['secretKey']}"}
    created = requests.post(
        first_old.url + MANAGEMENT + "/queues",
        json={"slug": "drop", "name": "Drop", "ratePerMinute": 600, "capacity": CAPACITY,
              "redirectUrl": "https://shop.example/checkout"},
        headers=auth, timeout=30,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    room = created.json()["id"]
    opened = requests.patch(
        first_old.url + MANAGEMENT + f"/queues/{room}", json={"action": "open"},
        headers=auth, timeout=30,
    )  # fmt: skip
    assert opened.status_code == 200, opened.text

    instances = Instances()
    instances.urls[:] = [first_old.url]
    shop = Deployment(Engine(redis_client), room, key["publicKey"], key["secretKey"], instances)
    shop.arrive(CROWD)
    by_ticket = sorted(shop.crowd, key=lambda w: w.ticket)
    assert [w.ticket for w in by_ticket] == list(range(1, CROWD + 1))  # one spot each

    def run_phase(phase: str, urls: list[str]) -> None:
        instances.urls[:] = urls
        shop.arrive(LATE)  # arrivals during the phase, through its instances
        for _ in range(ROUNDS):
            poll_round(shop, phase)

    run_phase("old", [first_old.url])
    new = start(servers, redis_server, tmp_path, "new")
    assert serves_version(new.url, this_version())
    run_phase("old+new", [first_old.url, new.url])
    first_old.stop()
    run_phase("new", [new.url])
    second_old = start(servers, redis_server, tmp_path, "old-2", old)  # and back
    run_phase("new+old", [new.url, second_old.url])

    assert not instances.failures(), instances.failures()[:5]
    # Every phase let visitors in, and every instance up in it answered polls.
    phases = {w.admitted_in for w in shop.crowd}
    assert {"old", "old+new", "new", "new+old"} <= phases, phases
    answered = {url for url, path, status, _ in instances.answers if path.endswith("/poll")}
    assert {first_old.url, new.url, second_old.url} <= answered
    # Nobody's place was lost: each one still waiting is still in the line, in ticket order.
    still = sorted((w for w in shop.crowd if w.admitted_in is None), key=lambda w: w.ticket)
    assert still, "the crowd was meant to outlast the upgrade"
    last = [w.positions[-1][1] for w in still]
    assert last == sorted(last) and len(set(last)) == len(last)
    # Both releases read the samples both wrote alike: the same window, the same series.
    now = shop.management(new.url, f"/queues/{room}/series").json()["now"]
    window = f"/queues/{room}/series?from={now - 600_000}&to={now}"
    read = [shop.management(url, window).json() for url in (new.url, second_old.url)]
    assert any(v is not None for v in read[0]["waiting"]), read[0]
    for answer in read:
        answer.pop("now")  # each one's moment of asking
    # The new release may add columns (never drop one); those both have read the same.
    assert set(read[0]) >= set(read[1])
    assert {name: read[0][name] for name in read[1]} == read[1]


def poll_round(shop: Deployment, phase: str) -> None:
    """A second of the room's clock; everyone waiting polls; the order, capacity and places
    checked; those let in leave."""
    shop.engine.shift_clock(shop.room, 1_000)
    waiting = [w for w in shop.crowd if w.admitted_in is None]
    print(f"{time.strftime('%H:%M:%S')} {phase}: {len(waiting)} waiting, {shop.instances.urls}")

    def poll(w: Waiting) -> None:
        answer = w.visitor.poll()
        # 410 would be a spot lost: nobody polled here has left or been let in and gone.
        assert answer.status_code == 200, (phase, w.ticket, answer.status_code, answer.text)
        status = answer.json["status"]
        if status == "admitted":
            claims = verify.verify_admission(answer.json["token"], TEST_KEYS, room="drop")
            assert claims.valid, (phase, claims)
            w.admitted_in = phase
            return
        assert status == "waiting", (phase, answer.json)
        position = answer.json["position"]
        if w.positions:
            before = w.positions[-1]
            assert position <= before[1], f"ticket {w.ticket}: {before} then {phase} {position}"
        w.positions.append((phase, position))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(poll, waiting))

    # The line admits by ticket: everyone before the last one let in has been let in too
    # (a poll in this round may have come just before their admission: asked again now).
    admitted = [w for w in shop.crowd if w.admitted_in is not None and not w.left]
    if admitted:
        furthest = max(w.ticket for w in admitted)
        for w in shop.crowd:
            if w.ticket < furthest and w.admitted_in is None:
                answer = w.visitor.poll()
                assert answer.status_code == 200, answer.text
                assert answer.json["status"] == "admitted", (
                    f"{phase}: ticket {furthest} was let in before ticket {w.ticket}"
                )
                w.admitted_in = phase
    admitted = [w for w in shop.crowd if w.admitted_in is not None and not w.left]
    assert len(admitted) <= CAPACITY, (phase, len(admitted))
    # What each instance up reports of the room: within capacity; its series readable.
    for url in shop.instances.urls:
        detail = shop.management(url, f"/queues/{shop.room}")
        assert detail.status_code == 200, detail.text
        assert detail.json()["stats"]["active"] <= CAPACITY, (phase, url, detail.json()["stats"])
        series = shop.management(url, f"/queues/{shop.room}/series")
        assert series.status_code == 200, (phase, url, series.text)
    assert shop.engine.stats(shop.room).active <= CAPACITY
    for w in admitted:
        left = w.visitor.leave()
        assert left.status_code == 204, left.text
        w.left = True
