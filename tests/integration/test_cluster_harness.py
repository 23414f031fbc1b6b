"""The local Redis Cluster harness (tests/redis_cluster.py) the cluster suites stand on."""

from __future__ import annotations

import redis
from redis.cluster import RedisCluster

from redis_cluster import local_cluster


def test_three_primaries_three_replicas_then_a_crash_promotes_a_replica() -> None:
    with local_cluster() as cluster:
        assert cluster.url.startswith("redis+cluster://127.0.0.1:")
        roles = sorted(node.role for node in cluster.nodes)
        assert roles == ["primary"] * 3 + ["replica"] * 3
        assert len(cluster.primaries()) == 3

        seeds = [n.port for n in cluster.nodes]
        client = RedisCluster(host="127.0.0.1", port=seeds[0], decode_responses=True)
        client.set("{room-a}:x", "1")
        owner = cluster.primary_for("{room-a}:x")
        assert redis.Redis(port=owner, decode_responses=True).get("{room-a}:x") == "1"
        # Replication is asynchronous: WAIT makes this write reach the replica before the crash.
        assert redis.Redis(port=owner).execute_command("WAIT", 1, 2000) == 1
        replica = cluster.replica_of(owner)

        cluster.kill(owner)
        promoted = cluster.wait_promoted(owner)
        assert promoted == replica
        assert cluster.primary_for("{room-a}:x") == promoted
        assert cluster.node(owner).role == "dead"
        assert client.get("{room-a}:x") == "1"  # the cluster client found the new primary
        client.close()
        nodes = cluster.nodes
    # Torn down: every process gone, the folder removed.
    assert not cluster.folder.exists()
    assert not any(node.alive for node in nodes)
