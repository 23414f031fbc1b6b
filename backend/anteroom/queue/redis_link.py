"""Redis connections and the package's own storage exceptions."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import redis
import redis.exceptions as rex

T = TypeVar("T")


class StorageError(Exception):
    """Redis failed in a way the caller should report."""


class StorageUnavailable(StorageError):
    """Redis could not be reached (connection refused, timeout, …)."""


class StorageBusy(StorageError):
    """Redis refused a write because it is out of memory."""


@contextmanager
def storage_errors() -> Iterator[None]:
    """Translate redis-py errors into :class:`StorageError` subclasses."""
    try:
        yield
    except (rex.ConnectionError, rex.TimeoutError) as exc:
        raise StorageUnavailable(str(exc)) from exc
    except rex.OutOfMemoryError as exc:
        raise StorageBusy(str(exc)) from exc
    except rex.ResponseError as exc:
        # Also raised from inside a script: its first write fails, so nothing was half-written.
        if str(exc).startswith("OOM") or "-OOM " in str(exc):
            raise StorageBusy(str(exc)) from exc
        raise StorageError(str(exc)) from exc
    except rex.RedisError as exc:
        raise StorageError(str(exc)) from exc


def call(fn: Callable[[], T]) -> T:
    """Run ``fn`` with redis-py errors translated."""
    with storage_errors():
        return fn()


class Breaker:
    """Circuit breaker: after a transport failure, skip Redis for ``pause`` seconds.

    An outage then costs each request nothing instead of a connect timeout; the first call
    after the pause tries Redis again.
    """

    def __init__(self, pause: float = 3.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.pause = pause
        self.clock = clock
        self.open_until = 0.0
        self.lock = threading.Lock()

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` unless the breaker is open; translate errors; open on a transport error."""
        if self.clock() < self.open_until:
            raise StorageUnavailable("Redis skipped: circuit breaker open after a failure")
        try:
            with storage_errors():
                return fn()
        except StorageUnavailable:
            with self.lock:
                self.open_until = self.clock() + self.pause
            raise

    @property
    def is_open(self) -> bool:
        """True while calls are being skipped."""
        return self.clock() < self.open_until


class CountingConnection(redis.Connection):
    """A connection that counts its connect attempts (the breaker's tests read the count)."""

    attempts = 0

    def connect(self) -> None:  # type: ignore[override]
        if self._sock is None:
            CountingConnection.attempts += 1
        super().connect()


class CountingUnixConnection(redis.UnixDomainSocketConnection):
    """Unix-socket twin of :class:`CountingConnection`."""

    def connect(self) -> None:  # type: ignore[override]
        if self._sock is None:
            CountingConnection.attempts += 1
        super().connect()


def connect(url: str, timeout: float = 2.0) -> redis.Redis:
    """A client for ``url`` (``redis://``, ``rediss://`` or ``unix://``), decoding to str."""
    client = redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        health_check_interval=30,
    )
    pool = client.connection_pool
    if pool.connection_class is redis.Connection:
        pool.connection_class = CountingConnection
    elif pool.connection_class is redis.UnixDomainSocketConnection:
        pool.connection_class = CountingUnixConnection
    return client
