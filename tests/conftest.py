"""Shared fixtures: one real redis-server per test session, flushed before each test."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import redis

from anteroom.embedded import EmbeddedRedis
from anteroom.engine import Engine


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
