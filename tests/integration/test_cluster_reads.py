"""Read-only scripts (the engine's far poll, EVALSHA_RO) run on replicas: a cluster's, by the
slot of their declared key, or ``ANTEROOM_REDIS_REPLICAS`` of a single primary."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from anteroom.queue.connection.redis_link import connect_links
from helpers import free_port
from redis_cluster import REDIS_SERVER, LocalCluster

pytestmark = pytest.mark.redis

READ = "return redis.call('GET', KEYS[1])"


def calls(port: int) -> dict[str, int]:
    """Calls per command on one node since its last CONFIG RESETSTAT."""
    node = redis.Redis(port=port, decode_responses=True)
    try:
        return {name: int(s["calls"]) for name, s in node.info("commandstats").items()}
    finally:
        node.close()


def reset_stats(ports: list[int]) -> None:
    for port in ports:
        node = redis.Redis(port=port)
        node.config_resetstat()
        node.close()


def test_a_read_only_script_runs_on_the_replica_of_its_key_in_one_round_trip(
    redis_cluster: LocalCluster,
) -> None:
    links = connect_links(redis_cluster.url)
    key = "anteroom:r:{q0123456789abcdef}:room"
    links.writer.set(key, "hello")
    primary = redis_cluster.primary_for(key)
    replica = redis_cluster.replica_of(primary)
    # Replication is asynchronous; this test is about routing, so it lets the copy arrive.
    assert redis.Redis(port=primary).execute_command("WAIT", 1, 2000) == 1
    # Scripts are not replicated: loading through the reader reaches every node, replicas too
    # (redis-py sends SCRIPT LOAD to primaries only, and the replica would answer NOSCRIPT).
    sha = links.reader.script_load(READ)
    ports = [node.port for node in redis_cluster.nodes]
    assert all(redis.Redis(port=p).script_exists(sha) == [True] for p in ports)

    reset_stats(ports)
    for _ in range(10):
        assert links.reader.evalsha_ro(sha, 1, key) == "hello"
    assert calls(replica).get("cmdstat_evalsha_ro") == 10
    # Routed by the declared key: no node was asked COMMAND GETKEYS first (redis-py asked
    # twice per EVALSHA_RO, each time of one default node: three round trips instead of one).
    assert [p for p in ports if calls(p).get("cmdstat_command|getkeys")] == []
    links.close()


@pytest.fixture
def primary_and_replica(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A primary and its replica, Debian's redis-server 7 (EVALSHA_RO needs 7)."""
    ports = (free_port(), free_port())
    processes = []
    for i, port in enumerate(ports):
        folder = tmp_path / f"node{i}"
        folder.mkdir()
        args = [
            REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", str(folder), "--logfile", str(folder / "log"),
        ]  # fmt: skip
        if i:
            args += ["--replicaof", "127.0.0.1", str(ports[0])]
        processes.append(subprocess.Popen(args, start_new_session=True))
    replica = redis.Redis(port=ports[1], decode_responses=True)
    deadline = time.monotonic() + 20
    while True:
        try:
            if replica.info("replication").get("master_link_status") == "up":
                break
        except redis.ConnectionError:
            pass
        assert time.monotonic() < deadline, "the replica never synced"
        time.sleep(0.05)  # waiting for the replica's first sync, not for a race
    replica.close()
    yield ports
    for process in processes:
        process.kill()
        process.wait(10)


def test_replicas_of_a_single_primary_take_the_read_only_scripts(
    primary_and_replica: tuple[int, int],
) -> None:
    primary, replica = primary_and_replica
    links = connect_links(
        f"redis://127.0.0.1:{primary}/0", f"redis://127.0.0.1:{replica}/0", timeout=5
    )
    links.writer.set("anteroom:r:{q1}:room", "hello")
    assert links.writer.execute_command("WAIT", 1, 2000) == 1
    sha = links.writer.script_load(READ)
    reset_stats([primary, replica])
    try:
        links.reader.evalsha_ro(sha, 1, "anteroom:r:{q1}:room")
    except redis.exceptions.NoScriptError:
        links.reader.script_load(READ)  # what the engine does: a replica may lack the script
    assert links.reader.evalsha_ro(sha, 1, "anteroom:r:{q1}:room") == "hello"
    assert calls(replica).get("cmdstat_evalsha_ro", 0) >= 1
    assert "cmdstat_evalsha_ro" not in calls(primary)
    with pytest.raises(redis.exceptions.ReadOnlyError):
        links.reader.set("anteroom:r:{q1}:room", "written on a replica")  # the reader never writes
    links.close()
