"""The local Redis Cluster harness (tests/redis_cluster.py) the cluster suites stand on.

Killing a primary and waiting for its replica's promotion is shown by test_cluster_failover.py,
on a cluster of its own, whose teardown is checked there too.
"""

from __future__ import annotations

import redis

from anteroom.queue.connection.redis_link import connect
from redis_cluster import LocalCluster


def test_three_primaries_each_with_a_replica_serve_their_slots(redis_cluster: LocalCluster) -> None:
    assert redis_cluster.url.startswith("redis+cluster://127.0.0.1:")
    nodes = redis_cluster.nodes
    assert sorted(node.role for node in nodes) == ["primary"] * 3 + ["replica"] * 3
    primaries = redis_cluster.primaries()
    assert len(primaries) == 3
    replicas = {redis_cluster.replica_of(port) for port in primaries}
    assert replicas == {node.port for node in nodes if node.role == "replica"}

    client = connect(redis_cluster.url, timeout=30)
    for room in ("room-a", "room-b", "room-c", "room-d"):
        key = f"harness:{{{room}}}:x"
        client.set(key, room)
        owner = redis_cluster.primary_for(key)
        # The key is on the primary the harness names (another would answer MOVED).
        assert redis.Redis(port=owner, decode_responses=True).get(key) == room
        client.delete(key)
    client.close()
