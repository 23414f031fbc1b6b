"""Shared fixtures: one real redis-server per test session, flushed before each test; the app
over the Flask test client; live servers (``live_server``), whose logs show when a test fails."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.service_container import Services
from anteroom.web.app_factory import create_app
from helpers import TEST_KEYS, free_port
from live_server import LOG_LINES, LiveServer, LiveServers, servers_since


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), port=free_port()).start()
    yield server
    server.stop()


@pytest.fixture
def redis_client(redis_server: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def engine(redis_client: redis.Redis) -> Engine:
    return Engine(redis_client)


@pytest.fixture
def settings(redis_server: EmbeddedRedis, tmp_path: Path) -> Settings:
    # Each app's rooms snapshot goes to the test's own folder, not ./var of the checkout.
    return Settings(
        redis_url=redis_server.url, keys=TEST_KEYS, pow_difficulty=4, data_dir=str(tmp_path)
    )


@pytest.fixture
def app(settings: Settings, redis_client: redis.Redis) -> Iterator[Flask]:
    app = create_app(settings, {"TESTING": True})
    yield app
    app.extensions["anteroom"].directory.stop()  # its refresher, if a request started one


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def services(app: Flask) -> Services:
    return app.extensions["anteroom"]  # type: ignore[no-any-return]


def _live_servers(
    redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServers]:
    started: list[LiveServer] = []

    def start(redis_url: str | None = None, data_dir: Path | None = None, **env: str) -> LiveServer:
        server = LiveServer(
            redis_url or redis_server.url, data_dir or tmp_path_factory.mktemp("live"), **env
        )
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def live_server(
    redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServers]:
    """``live_server(**env)`` starts ``anteroom serve``, ready; all stop after the test."""
    yield from _live_servers(redis_server, tmp_path_factory)


@pytest.fixture(scope="module")
def module_live_server(
    redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServers]:
    """``live_server`` for servers a whole module shares; all stop after its last test."""
    yield from _live_servers(redis_server, tmp_path_factory)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing test shows the logs of the servers (live or other) that ran during it."""
    report = yield
    if report.failed:
        for server in servers_since(call.start):
            report.sections.append(
                (f"log of {server.name} on {server.url}", server.output(LOG_LINES))
            )
    return report
