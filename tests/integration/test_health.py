"""Probes: /readyz is cheap under a probe storm and says nothing about Redis's errors."""

from __future__ import annotations

import hashlib
import logging

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection import lua_scripts as scripts
from anteroom.web.app_factory import create_app
from helpers import TEST_KEYS, free_port

pytestmark = pytest.mark.redis

PROBES = 50


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def script_calls(client: redis.Redis) -> int:
    """SCRIPT commands served so far (Redis 6 counts every subcommand under ``script``)."""
    stats = client.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k.split("|")[0] == "cmdstat_script")


def probed(app: Flask, clock: FakeClock) -> Flask:
    app.extensions["anteroom.readiness"].clock = clock
    return app


def test_healthz(client: FlaskClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json == {"status": "ok"}


def test_readyz_checks_redis_at_most_once_a_second(app: Flask, redis_client: redis.Redis) -> None:
    clock = FakeClock()
    client = probed(app, clock).test_client()
    redis_client.script_flush()  # a restarted Redis: the first probe has to load them
    before = script_calls(redis_client)
    answers = [client.get("/readyz") for _ in range(PROBES)]
    assert {(a.status_code, a.json["status"]) for a in answers} == {(200, "ready")}
    assert answers[0].json["scripts"] == len(scripts.OPERATIONS)
    # One SCRIPT EXISTS, then one SCRIPT LOAD per missing script: once, not once per probe.
    assert script_calls(redis_client) - before == 1 + len(scripts.OPERATIONS)
    shas = [hashlib.sha1(scripts.source(name).encode()).hexdigest() for name in scripts.OPERATIONS]
    assert all(redis_client.script_exists(*shas))

    clock.now += 1.5  # the cached answer is stale: the next probe checks again, with EXISTS only
    before = script_calls(redis_client)
    assert all(client.get("/readyz").status_code == 200 for _ in range(PROBES))
    assert script_calls(redis_client) - before == 1

    clock.now += 0.5  # still fresh: no Redis call at all
    before = script_calls(redis_client)
    assert client.get("/readyz").status_code == 200
    assert script_calls(redis_client) - before == 0


@pytest.fixture
def stopped_redis(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedRedis:
    return EmbeddedRedis(tmp_path_factory.mktemp("gone"), port=free_port())


@pytest.mark.parametrize("failure", ["unreachable", "refused by redis"])
def test_readyz_answers_503_without_redis_error_text(
    failure: str,
    redis_server: EmbeddedRedis,
    stopped_redis: EmbeddedRedis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # "refused by redis": it answers, with "ERR DB index is out of range" for database 99.
    url = stopped_redis.url if failure == "unreachable" else redis_server.url.rsplit("/", 1)[0]
    url += "" if failure == "unreachable" else "/99"
    app = create_app(Settings(redis_url=url, keys=TEST_KEYS, pow_difficulty=4))
    clock = FakeClock()
    client = probed(app, clock).test_client()
    with caplog.at_level(logging.WARNING, logger="anteroom"):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json == {"status": "unavailable"}
    logged = " ".join(r.getMessage() for r in caplog.records)
    detail = "Connection refused" if failure == "unreachable" else "out of range"
    assert detail in logged  # the operator reads why in the log, the caller never does
    assert detail not in response.get_data(as_text=True)
    caplog.clear()
    assert client.get("/readyz").status_code == 503  # cached: not logged again this second
    assert caplog.records == []
