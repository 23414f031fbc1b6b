"""Redis connections and the package's own storage exceptions."""

from __future__ import annotations

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
        if str(exc).startswith("OOM"):
            raise StorageBusy(str(exc)) from exc
        raise StorageError(str(exc)) from exc
    except rex.RedisError as exc:
        raise StorageError(str(exc)) from exc


def call(fn: Callable[[], T]) -> T:
    """Run ``fn`` with redis-py errors translated."""
    with storage_errors():
        return fn()


def connect(url: str, timeout: float = 2.0) -> redis.Redis:
    """A client for ``url`` (``redis://``, ``rediss://`` or ``unix://``), decoding to str."""
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        health_check_interval=30,
    )
