"""Faults that are not outages (issue 21), through a fault-injecting proxy in front of Redis.

A reset connection is retried, not an outage; the breaker opens on repeated failures only, and
a background thread's failures never pause a visitor; /readyz answers within its budget.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.exceptions as rex
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.identity import sessions as identity
from anteroom.ops.demo_crowd import DemoCrowd, run_crowd
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.connection.storage_errors import StorageUnavailable
from anteroom.queue.line.room_engine import Engine
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.web.app_factory import close_app, create_app
from anteroom.web.serving.health_probes import BUDGET_SEC
from fault_proxy import FaultProxy
from helpers import TEST_KEYS, free_port, make_room
from visitor_client import Visitor

pytestmark = [pytest.mark.redis]


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path / "redis", port=free_port()).start()
    yield server
    server.stop()


@pytest.fixture
def proxy(own_redis: EmbeddedRedis) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", own_redis.port) as proxy:
        yield proxy


class Stack:
    """One app whose Redis is behind ``proxy``; its rooms made on Redis directly."""

    def __init__(self, proxy: FaultProxy, data_dir: Path) -> None:
        settings = Settings(
            redis_url=proxy.url, keys=TEST_KEYS, pow_difficulty=4, data_dir=str(data_dir)
        )
        self.app = create_app(settings)
        self.services: Services = self.app.extensions["anteroom"]
        self.client: FlaskClient = self.app.test_client()
        self.api_key = self.services.keystore.create("shop")[0].public_key

    def room(self, slug: str, **config: object) -> str:
        base = {"failMode": "closed", "ratePerMinute": 1}
        room_id = make_room(self.services.engine, env="shop", slug=slug, **(base | config))
        self.services.engine.open(room_id)
        return room_id

    def visitor(self, address: str = "198.51.100.30") -> Visitor:
        return Visitor(self.client, self.api_key, address=address)


@pytest.fixture
def stack(proxy: FaultProxy, tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(proxy, tmp_path / "data")
    yield stack
    close_app(stack.app)


def test_a_reset_is_retried_not_an_outage(stack: Stack, proxy: FaultProxy) -> None:
    stack.room("closed")
    stack.room("open", failMode="open")
    waiting, polling_open = stack.visitor(), stack.visitor("198.51.100.31")
    assert waiting.enter("closed").json["status"] == "waiting"
    assert polling_open.enter("open").json["status"] == "waiting"
    for _ in range(3):
        assert proxy.reset() >= 1  # every pooled connection aborted, as by a load balancer
        answer = waiting.poll()
        assert answer.status_code == 200 and answer.json["ticket"] == 1, answer.text
        answer = polling_open.poll()
        assert answer.status_code == 200 and answer.json["status"] == "waiting", answer.text
        assert "failOpen" not in answer.json
    assert not stack.services.breaker.is_open


def test_the_breaker_opens_on_repeated_failures_within_its_window() -> None:
    now = [100.0]
    breaker = Breaker(pause=3.0, clock=lambda: now[0], threshold=3, window=5.0)

    def refused() -> None:
        raise rex.ConnectionError("Connection refused")

    for _ in range(2):
        with pytest.raises(StorageUnavailable):
            breaker.call(refused)
        now[0] += 3.0  # two failures 3 s apart, then a third 6 s after the first
    assert not breaker.is_open
    with pytest.raises(StorageUnavailable):
        breaker.call(refused)
    assert not breaker.is_open  # only two within the window
    with pytest.raises(StorageUnavailable):
        breaker.call(refused)
    assert breaker.is_open  # three within 5 s: an outage
    with pytest.raises(StorageUnavailable, match="circuit breaker open"):
        breaker.call(lambda: "never run")
    now[0] += 3.0
    assert breaker.call(lambda: "again") == "again"


def test_a_background_failure_never_pauses_a_request(stack: Stack, proxy: FaultProxy) -> None:
    room_id = stack.room("closed")
    visitor = stack.visitor()
    assert visitor.enter("closed").status_code == 200
    s = stack.services
    assert s.ticker.breaker is not s.breaker and s.directory.breaker is not s.breaker
    proxy.refuse = True
    proxy.reset()
    for _ in range(5):  # the ticker sees Redis down, again and again: its own breaker opens
        with pytest.raises(StorageUnavailable):
            s.ticker.breaker.call(lambda: s.engine.tick(room_id, 900))
    assert s.ticker.breaker.is_open and not s.breaker.is_open
    proxy.refuse = False
    answer = visitor.poll()
    assert answer.status_code == 200 and answer.json["ticket"] == 1, answer.text


def test_readyz_answers_within_its_budget_when_redis_stalls(
    stack: Stack, proxy: FaultProxy
) -> None:
    readiness = stack.app.extensions["anteroom.readiness"]
    assert stack.client.get("/readyz").status_code == 200
    proxy.stall()  # half-open: every connection silent, nothing refused
    answers = []
    for _ in range(5):
        readiness._checked_at = None  # this probe checks (its cached answer is a second's)
        start = time.monotonic()
        answers.append((stack.client.get("/readyz").status_code, time.monotonic() - start))
    proxy.resume()
    assert all(status == 503 for status, _ in answers), answers
    # Each probe within about its budget (socket timeout, plus a loaded machine's margin).
    assert max(took for _, took in answers) < BUDGET_SEC + 0.6, answers
    # Three failed checks opened the breaker: the last probes answered without asking Redis.
    assert stack.services.breaker.is_open
    assert answers[-1][1] < 0.1


def test_an_identify_whose_first_write_landed_late_gets_its_session(stack: Stack) -> None:
    visitor = stack.visitor()
    body = visitor.solved()
    s = stack.services
    challenge = identity.solved_challenge(s.identity, "shop", body["challenge"], body["solution"])
    # The first attempt's spend reached Redis after its client gave up (a stall, a 503): the
    # challenge is spent with the session that attempt earned.
    now = int(time.time())
    earned = tokens.SessionClaims(session_id="j" * 22, visitor_id="v" * 22, environment="shop",
                                  score=0, issued_at=now, expires_at=now + 3600)  # fmt: skip
    assert identity.spend_challenge(s.identity, challenge, body["solution"], earned) == earned
    retried = visitor.post("identify", body)
    assert retried.status_code == 200, retried.text
    assert retried.json == identity.session_answer(s.identity, earned)


def test_the_demo_crowd_logs_no_traceback_when_redis_fails(
    proxy: FaultProxy, caplog: pytest.LogCaptureFixture
) -> None:
    engine = Engine(connect(proxy.url))
    room_id = make_room(engine, env="demo", slug="demo-room")
    engine.open(room_id)
    proxy.stall()  # timeouts first (redis-py's TimeoutError is no OSError), then refusals
    stop = threading.Event()
    crowd = threading.Thread(target=run_crowd, args=(DemoCrowd(engine, room_id), stop, 0.01))
    with caplog.at_level(logging.DEBUG, logger="anteroom"):
        crowd.start()
        time.sleep(2.5)  # the crowd's steps meet the stall: its call times out after 2 s
        proxy.refuse = True
        proxy.resume()
        proxy.reset()
        time.sleep(0.3)
        stop.set()
        crowd.join()
    failures = [r for r in caplog.records if r.name == "anteroom" and "demo crowd" in r.message]
    assert failures and all(r.levelno == logging.DEBUG and not r.exc_info for r in failures)
    engine.redis.close()
