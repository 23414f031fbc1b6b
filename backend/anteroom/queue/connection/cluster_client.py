"""The Redis Cluster client: redis-py's ``RedisCluster`` fitted to Anteroom's scripts, and built
lazily so a worker starts while the cluster is unreachable."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import redis.exceptions as rex
from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.connection import Encoder

from anteroom.queue.connection.storage_errors import ClusterUnreachable


class ClusterClient(RedisCluster):
    """redis-py's ``RedisCluster`` with the two things Anteroom's read-only poll needs.

    - ``EVALSHA_RO`` / ``EVAL_RO`` find their slot from their declared keys, as redis-py does for
      ``EVALSHA``: otherwise each call first asks a node ``COMMAND GETKEYS`` (they have
      "movable keys"), one extra round trip per poll.
    - ``SCRIPT LOAD`` / ``SCRIPT EXISTS`` go to every node, replicas included: scripts are not
      replicated, and a replica that runs ``EVALSHA_RO`` must know the script.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for command in ("SCRIPT LOAD", "SCRIPT EXISTS"):
            self.command_flags[command] = self.ALL_NODES

    def determine_slot(self, *args: Any) -> int | None:
        """The slot a command goes to; read-only scripts by their declared keys."""
        if args and str(args[0]).upper() in ("EVAL_RO", "EVALSHA_RO"):
            return super().determine_slot("EVALSHA", *args[1:])  # type: ignore[no-any-return]
        return super().determine_slot(*args)  # type: ignore[no-any-return]


class LazyCluster:
    """A :class:`ClusterClient` built at its first command, not at start-up.

    redis-py's ``RedisCluster`` asks a seed for the slot map as it is built, so an eager one
    would stop a worker from starting while the cluster is unreachable; a worker must start
    anyway and answer from what it knows (docs/deploying.md, "When Redis fails"). Until a build
    succeeds, each command tries again and fails as a connection error, which the breaker counts
    like any other.
    """

    def __init__(self, build: Callable[[], ClusterClient]) -> None:
        self._build = build
        self._client: ClusterClient | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> ClusterClient | None:
        """The cluster client if it was built, without building it."""
        return self._client

    def client(self) -> ClusterClient:
        """The cluster client, built now if it was not yet."""
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    try:
                        self._client = self._build()
                    except rex.RedisClusterException as exc:
                        raise ClusterUnreachable(f"Redis Cluster unreachable: {exc}") from exc
                client = self._client
        return client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client(), name)

    def get_encoder(self) -> Encoder:
        """The encoder scripts hash their source with (no connection needed)."""
        return Encoder("utf-8", "strict", decode_responses=True)

    def register_script(self, script: str) -> Script:
        """A script object that runs on this cluster once it is reached."""
        return Script(self, script)  # type: ignore[arg-type]

    def close(self) -> None:
        """Close the client if it was built."""
        if self._client is not None:
            self._client.close()


def is_cluster(client: Any) -> bool:
    """True for a cluster client (multi-key commands must stay within one hash slot)."""
    return isinstance(client, RedisCluster | LazyCluster)
