"""The breaker pauses only the cluster shard that failed; a single server pauses as a whole.

(Opening on the first failure here, ``threshold=1``: what counts is tested in test_faults.py.)
"""

from __future__ import annotations

import pytest
import redis.exceptions as rex

from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.storage_errors import ClusterUnreachable, StorageUnavailable

SHARDS = {"room-a": "10.0.0.1:7000", "room-b": "10.0.0.2:7000"}


def refused() -> None:
    raise rex.ConnectionError("Connection refused")


def test_a_failed_shard_pauses_its_own_keys_only() -> None:
    now = [100.0]
    breaker = Breaker(pause=3.0, clock=lambda: now[0], shard_of=SHARDS.get, threshold=1)
    with pytest.raises(StorageUnavailable):
        breaker.call(refused, "room-a")
    with pytest.raises(StorageUnavailable, match="circuit breaker open"):
        breaker.call(lambda: "never run", "room-a")
    assert breaker.call(lambda: "answered", "room-b") == "answered"
    assert breaker.call(lambda: "answered") == "answered"  # nothing paused everything
    assert not breaker.is_open
    now[0] += 3.0
    assert breaker.call(lambda: "again", "room-a") == "again"


def test_without_shards_a_failure_pauses_every_call() -> None:
    now = [100.0]
    breaker = Breaker(pause=3.0, clock=lambda: now[0], threshold=1)
    with pytest.raises(StorageUnavailable):
        breaker.call(refused, "room-a")
    assert breaker.is_open
    with pytest.raises(StorageUnavailable, match="circuit breaker open"):
        breaker.call(lambda: "never run", "room-b")
    now[0] += 3.0
    assert breaker.call(lambda: "again") == "again"


def test_on_a_cluster_only_an_unreachable_cluster_pauses_every_call() -> None:
    breaker = Breaker(pause=3.0, clock=lambda: 100.0, shard_of=SHARDS.get, threshold=1)
    with pytest.raises(StorageUnavailable):
        breaker.call(refused)  # several shards, one failed: redis-py names none
    assert breaker.call(lambda: "answered", "room-b") == "answered"

    def unreachable() -> None:
        raise ClusterUnreachable("Redis Cluster unreachable: no seed answered")

    with pytest.raises(StorageUnavailable):
        breaker.call(unreachable, "room-a")
    with pytest.raises(StorageUnavailable, match="circuit breaker open"):
        breaker.call(lambda: "never run", "room-b")
