"""Per-instance cache of room configuration and public keys.

Fresh enough for normal work (a few seconds), and kept when Redis is unreachable so the
service still knows a room's ``failMode`` during an outage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .storage import StorageUnavailable

T = TypeVar("T")


class StaleCache:
    """Values by key: refreshed after ``ttl`` seconds, served stale while storage is down."""

    def __init__(self, ttl: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._values: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any, load: Callable[[], T]) -> T:
        """The cached value of ``key``, loading it when missing or older than ``ttl``."""
        now = self.clock()
        hit = self._values.get(key)
        if hit and now - hit[0] < self.ttl:
            return hit[1]  # type: ignore[no-any-return]
        try:
            value = load()
        except StorageUnavailable:
            if hit:
                return hit[1]  # type: ignore[no-any-return]
            raise
        with self._lock:
            self._values[key] = (now, value)
            if len(self._values) > 10_000:  # bound memory against key-guessing
                self._values.clear()
        return value

    def put(self, key: Any, value: Any) -> None:
        """Store ``value`` under ``key`` as fresh."""
        with self._lock:
            self._values[key] = (self.clock(), value)

    def forget(self, key: Any) -> None:
        """Drop ``key`` (after a change made by this instance)."""
        self._values.pop(key, None)
