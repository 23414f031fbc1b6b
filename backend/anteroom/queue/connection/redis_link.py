"""Redis connections: the one place that builds the clients for what the settings name.

A single server, or a Redis Cluster through
:class:`~anteroom.queue.connection.cluster_client.LazyCluster`
(the URLs are read by :mod:`anteroom.queue.connection.redis_urls`). Every caller (engine, limits,
key store,
audit log, challenge spending, breaker) takes its client from here. :class:`Links` pairs the
client that writes (the primary, or the cluster's primaries) with the one the read-only poll
runs on (a replica when there are any).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, TypeAlias

import redis
import redis.exceptions as rex
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, LoadBalancingStrategy, RedisCluster
from redis.crc import key_slot
from redis.driver_info import DriverInfo
from redis.retry import Retry

from anteroom.queue.connection.cluster_client import ClusterClient, LazyCluster
from anteroom.queue.connection.counting_connections import (
    CountingConnection,
    CountingUnixConnection,
)
from anteroom.queue.connection.redis_urls import RedisTarget, parse_target

Client: TypeAlias = "redis.Redis | RedisCluster | LazyCluster"


@dataclass(frozen=True)
class Links:
    """The clients of one process: ``writer`` for everything, ``reader`` for read-only scripts
    (a replica when there are any; else the writer itself)."""

    target: RedisTarget
    writer: Client
    reader: Client

    def shard_of(self, key: str) -> str | None:
        """The cluster node serving ``key`` now, from the client's slot map (no round trip);
        None for a single server, or before the cluster client has reached the cluster."""
        writer = self.writer
        if not isinstance(writer, LazyCluster) or writer.built is None:
            return None
        owners = writer.built.nodes_manager.slots_cache.get(key_slot(key.encode()))
        return str(owners[0].name) if owners else None

    def close(self) -> None:
        """Close both clients."""
        self.writer.close()
        if self.reader is not self.writer:
            self.reader.close()


def _options(timeout: float) -> dict[str, Any]:
    return {
        "decode_responses": True,
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
    }


def _cluster(target: RedisTarget, timeout: float, replicas: bool) -> LazyCluster:
    def build() -> ClusterClient:
        return ClusterClient(
            startup_nodes=[ClusterNode(host, port) for host, port in target.seeds],
            username=target.username,
            password=target.password,
            # A replica's copy is at most a replication lag behind: fine for a position, and
            # the full poll (on the primary) answers whatever must be exact.
            load_balancing_strategy=(
                LoadBalancingStrategy.ROUND_ROBIN_REPLICAS if replicas else None
            ),
            **_options(timeout),
        )

    return LazyCluster(build)


def _single_client(url: str, timeout: float) -> redis.Redis:
    # A command that fails on a connection error (a reset, a connection Redis closed) is sent
    # once more on a fresh connection before anyone counts it; a timeout is not retried (a
    # stalled Redis would cost twice the timeout).
    once = Retry(NoBackoff(), 1, supported_errors=(rex.ConnectionError,))
    # No CLIENT SETINFO on connecting: two round trips a connection (and a health-check PING
    # before them), paid by the request that opened it, for a label in CLIENT LIST.
    unnamed = DriverInfo(name=None, lib_version=None)
    client = redis.Redis.from_url(
        url, health_check_interval=30, retry=once, driver_info=unnamed, **_options(timeout)
    )
    pool = client.connection_pool
    if pool.connection_class is redis.Connection:
        pool.connection_class = CountingConnection
    elif pool.connection_class is redis.UnixDomainSocketConnection:
        pool.connection_class = CountingUnixConnection
    return client


def connect(url: str, timeout: float = 2.0) -> Client:
    """The writing client for ``url``: one server, or a cluster for ``redis+cluster://``."""
    target = parse_target(url)
    if target.is_cluster:
        return _cluster(target, timeout, replicas=False)
    return _single_client(target.url, timeout)


def connect_links(url: str, replicas: str = "", timeout: float = 2.0) -> Links:
    """The writer and the reader for the settings' ``url`` and ``replicas``.

    With ``ANTEROOM_REDIS_REPLICAS``, each process reads from one replica picked at random, so
    the workers and instances spread over them. On a cluster, a second cluster client routes
    read-only commands to the replicas of each slot.
    """
    target = parse_target(url, replicas)
    writer = connect(url, timeout)
    if target.is_cluster:
        reader: Client = _cluster(target, timeout, replicas=True)
    elif target.replicas:
        reader = _single_client(random.choice(target.replicas), timeout)
    else:
        reader = writer
    return Links(target, writer, reader)
