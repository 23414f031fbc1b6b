"""The circuit breaker every Redis call of the request path and the background threads goes
through (a single server's, or each cluster shard's)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from anteroom.queue.connection.storage_errors import (
    ClusterUnreachable,
    StorageUnavailable,
    storage_errors,
)

T = TypeVar("T")


class Breaker:
    """Circuit breaker: after repeated transport failures, skip Redis for ``pause`` seconds.

    An outage then costs each request nothing instead of a connect timeout; the first call
    after the pause tries Redis again. It opens on ``threshold`` failures within ``window``
    seconds, not on one: a single reset connection (a load balancer, a Redis restart of one
    client) is not an outage, and the clients already retry it once on a fresh connection
    (``redis_link.connect``). On a cluster (``shard_of``), failures pause only the shard that failed
    (the node redis-py names in its error, else the call's key's): rooms on the other shards
    carry on while one shard's replica is being promoted; only a cluster that cannot be reached
    at all pauses everything. A call that names no key is skipped only then.

    Each user keeps its own: the request path has one, and each background thread another, so
    a failure only a background thread saw never pauses a visitor's request.
    """

    def __init__(
        self,
        pause: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
        shard_of: Callable[[str], str | None] | None = None,
        threshold: int = 3,
        window: float = 5.0,
    ) -> None:
        self.pause = pause
        self.clock = clock
        self.shard_of = shard_of
        self.threshold = threshold
        self.window = window
        self.open_until = 0.0  # every call skipped until then
        self.shards_open_until: dict[str, float] = {}  # shard -> its calls skipped until then
        self.failures: dict[str, list[float]] = {}  # "" (everything) or shard -> recent failures
        self.lock = threading.Lock()

    def call(self, fn: Callable[[], T], key: str | None = None) -> T:
        """Run ``fn`` unless the breaker is open (for ``key``'s shard); translate errors; count a
        transport error, opening after ``threshold`` of them within ``window``."""
        shard = self.shard_of(key) if self.shard_of is not None and key is not None else None
        now = self.clock()
        if now < self.open_until or (shard and now < self.shards_open_until.get(shard, 0.0)):
            raise StorageUnavailable("Redis skipped: circuit breaker open after failures")
        try:
            with storage_errors():
                return fn()
        except StorageUnavailable as exc:
            everything = self.shard_of is None or isinstance(exc.__cause__, ClusterUnreachable)
            # The node the error names first: a replica that failed a read pauses no primary.
            failed = None if everything else self._failed_node(exc) or shard
            if everything:
                self._count("")
            elif failed:
                self._count(failed)
            # Else a call over several shards (a pipeline) failed on one that redis-py does
            # not name: the keyed calls to that shard will pause it; the others go on.
            raise

    def _count(self, scope: str) -> None:
        """One failure in ``scope`` ("" for everything); open it once there are enough."""
        with self.lock:
            now = self.clock()
            recent = [t for t in self.failures.get(scope, ()) if now - t < self.window]
            recent.append(now)
            if len(recent) < self.threshold:
                self.failures[scope] = recent
                return
            self.failures.pop(scope, None)
            if scope:
                self.shards_open_until[scope] = now + self.pause
            else:
                self.open_until = now + self.pause

    def _failed_node(self, exc: StorageUnavailable) -> str | None:
        """On a cluster, the node a failed call could not reach ("host:port"), as redis-py
        names it in its slot map; None when it cannot be told (then everything pauses)."""
        if self.shard_of is None:
            return None
        where = getattr(exc.__cause__, "connection", None)
        name = getattr(where, "name", None)  # a ClusterNode
        if name is None and getattr(where, "host", None) and getattr(where, "port", None):
            name = f"{where.host}:{where.port}"  # type: ignore[union-attr]
        return str(name) if name else None

    @property
    def is_open(self) -> bool:
        """True while every call is being skipped."""
        return self.clock() < self.open_until

    def twin(self, pause: float | None = None) -> Breaker:
        """A breaker like this one (``pause`` apart) with its own failure count, for a
        background thread."""
        pause = self.pause if pause is None else pause
        return Breaker(pause, self.clock, self.shard_of, self.threshold, self.window)
