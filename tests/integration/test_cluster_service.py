"""The real service (gunicorn, ``anteroom serve``) on a Redis Cluster of 3 primaries + 3 replicas:
keys, rooms, audit, challenges, per-address limits and the visitor flow; rooms spread on shards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from anteroom.engine import Engine
from anteroom.queue.connection.redis_link import Client, connect
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.store.keystore import KeyStore
from live_server import LiveServers
from redis_cluster import LocalCluster
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

MANAGEMENT = "/api/management/v1"
KEYS = KeySpace()


@pytest.fixture
def cluster_client(redis_cluster: LocalCluster) -> Iterator[Client]:
    client = connect(redis_cluster.url, timeout=30)
    client.flushall()
    yield client
    client.close()


def keys_on(cluster: LocalCluster, port: int, pattern: str) -> list[str]:
    """Keys matching ``pattern`` held by the node on ``port`` (one node, not the cluster)."""
    node = cluster.node(port).client()
    try:
        return sorted(node.scan_iter(match=pattern, count=1000))
    finally:
        node.close()


def test_the_service_on_a_cluster_queues_admits_and_spreads_rooms_over_shards(
    redis_cluster: LocalCluster, cluster_client: Client, live_server: LiveServers
) -> None:
    record, secret = KeyStore(cluster_client, KEYS).create("shop")
    server = live_server(redis_cluster.url, ANTEROOM_POW_DIFFICULTY="4")
    operator = requests.Session()
    operator.headers["Authorization"] = f"Bearer {secret}"

    # Twelve rooms through the management API (secret key checked on the cluster, audit written).
    ids = []
    for i in range(12):
        created = operator.post(
            server.url + MANAGEMENT + "/queues",
            json={
                "slug": f"drop-{i:02d}",
                "name": "Drop",
                "redirectUrl": "https://shop.example/co",
            },
            timeout=10,
        )
        assert created.status_code == 201, created.text
        ids.append(created.json()["id"])
    # Each room lives whole on one primary (its hash tag), and the rooms spread over primaries.
    owners = {room: redis_cluster.primary_for(KEYS.room(room)) for room in ids}
    assert len(set(owners.values())) >= 2, owners
    for room, port in owners.items():
        here = keys_on(redis_cluster, port, f"anteroom:r:{{{room}}}:*")
        assert KEYS.room(room) in here
        for other in set(redis_cluster.primaries()) - {port}:
            assert keys_on(redis_cluster, other, f"anteroom:r:{{{room}}}:*") == []
    audit = operator.get(server.url + MANAGEMENT + "/audit", params={"limit": 50}, timeout=10)
    assert audit.status_code == 200, audit.text
    assert [e["type"] for e in audit.json()["events"]] == ["queue.created"] * 12

    room = ids[0]
    opened = operator.patch(
        server.url + MANAGEMENT + f"/queues/{room}", json={"action": "open"}, timeout=10
    )
    assert opened.status_code == 200, opened.text
    engine = Engine(cluster_client)
    engine.set_clock(room, 1_800_000_000_000)

    visitors = [Visitor(server.url, record.public_key) for _ in range(3)]
    entered = [v.enter("drop-00") for v in visitors]
    assert all(e.status_code == 200 for e in entered), [e.text for e in entered]
    waiting = [v for v, e in zip(visitors, entered, strict=True) if e.json["status"] == "waiting"]
    assert [v.last["position"] for v in waiting] == list(range(1, len(waiting) + 1))
    order = [v for v, e in zip(visitors, entered, strict=True) if e.json["status"] == "admitted"]
    for _ in range(10):  # a second of the room's clock deals one more (60 a minute)
        if not waiting:
            break
        engine.shift_clock(room, 1_000)
        for visitor in list(waiting):
            polled = visitor.poll()
            assert polled.status_code == 200, polled.text
            if polled.json["status"] == "admitted":
                order.append(visitor)
                waiting.remove(visitor)
    assert order == visitors  # admitted in the order they entered, every one of them
    assert engine.stats(room).dealt_total == 3

    # A spent challenge stays spent (its marker on the cluster), and limits count there too.
    body = visitors[0].solved()
    assert visitors[0].post("identify", body).status_code == 200
    replayed = visitors[0].post("identify", body | {"solution": body["solution"] + " "})
    assert replayed.status_code in (400, 401), replayed.text  # not the proof: refused
    again = visitors[0].post("identify", body)  # the same proof: the session it earned
    assert again.status_code == 200
    everywhere = [
        k for port in redis_cluster.primaries() for k in keys_on(redis_cluster, port, "*")
    ]
    assert any(k.startswith("anteroom:pc:") for k in everywhere)
    assert any("anteroom:lim" in k for k in everywhere)  # identify/enter limits, by `limits`
    # The two-call arrival: the proof's marker and the room on their own shards, the enter
    # limit charged by the view (its counters live on another shard than the room's keys).
    newcomer = Visitor(server.url, record.public_key)
    issued = newcomer.arrive("drop-00")
    body = newcomer.join_body("drop-00", issued.json)
    joined = newcomer.join(body)
    assert joined.status_code == 200, joined.text
    assert joined.json["queue"]["ticket"] == 4
    # The join's calls apart on a cluster keep its promise: a retry answers the first answer.
    again = newcomer.join(body)
    assert again.status_code == 200, again.text
    assert again.json["session"] == joined.json["session"]
    assert again.json["queue"]["ticket"] == 4
    visitors.append(newcomer)
    for visitor in visitors:
        visitor.close()


def test_the_keys_command_creates_and_revokes_keys_on_a_cluster(
    redis_cluster: LocalCluster, cluster_client: Client
) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env = clean | {"ANTEROOM_REDIS_URL": redis_cluster.url}
    anteroom = str(Path(sys.executable).with_name("anteroom"))

    def keys(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [anteroom, "keys", *args], env=env, capture_output=True, text=True, timeout=60
        )

    made = keys("create", "--environment", "prod", "--json")
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    store = KeyStore(cluster_client, KEYS)
    record = store.authenticate(created["secretKey"])
    assert record is not None and store.environment_of(created["publicKey"]) == "prod"
    assert keys("revoke", record.id).returncode == 0
    assert store.authenticate(created["secretKey"]) is None
    assert store.environment_of(created["publicKey"]) is None
