"""The package's own storage exceptions, and the one translation of redis-py's errors into them.

Every Redis call goes through :func:`storage_errors` (or :func:`call`, or a breaker), so callers
tell an outage (:class:`StorageUnavailable`) from a full Redis (:class:`StorageBusy`) without
knowing redis-py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import redis.exceptions as rex

T = TypeVar("T")


class StorageError(Exception):
    """Redis failed in a way the caller should report."""


class StorageUnavailable(StorageError):
    """Redis could not be reached (connection refused, timeout, …)."""


class StorageBusy(StorageError):
    """Redis refused a write because it is out of memory."""


class ClusterUnreachable(rex.ConnectionError):
    """No seed of the cluster answered: nothing can be asked of any shard."""


@contextmanager
def storage_errors() -> Iterator[None]:
    """Translate redis-py errors into :class:`StorageError` subclasses."""
    try:
        yield
    except (rex.ConnectionError, rex.TimeoutError) as exc:
        raise StorageUnavailable(str(exc)) from exc
    except (rex.ClusterDownError, rex.TryAgainError, rex.SlotNotCoveredError) as exc:
        # A shard between its primary's death and its replica's promotion: an outage, briefly.
        raise StorageUnavailable(str(exc)) from exc
    except rex.OutOfMemoryError as exc:
        raise StorageBusy(str(exc)) from exc
    except rex.ResponseError as exc:
        # Also raised from inside a script: its first write fails, so nothing was half-written.
        if str(exc).startswith("OOM") or "-OOM " in str(exc):
            raise StorageBusy(str(exc)) from exc
        raise StorageError(str(exc)) from exc
    except rex.RedisClusterException as exc:
        if isinstance(exc.__cause__, rex.ConnectionError | rex.TimeoutError):
            # redis-py re-read the slot map after a failure and no node answered: the whole
            # cluster is out of reach (it says so in its own exception, not a ConnectionError).
            raise StorageUnavailable(str(exc)) from ClusterUnreachable(str(exc))
        raise StorageError(str(exc)) from exc
    except rex.RedisError as exc:
        raise StorageError(str(exc)) from exc


def call(fn: Callable[[], T]) -> T:
    """Run ``fn`` with redis-py errors translated."""
    with storage_errors():
        return fn()
