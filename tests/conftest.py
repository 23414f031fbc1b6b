"""Shared fixtures: one real redis-server per test session, flushed before each test."""

from __future__ import annotations

from collections.abc import Iterator
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
