"""A local Redis Cluster for the tests and bench/: 3 primaries + 3 replicas on loopback.

Debian's ``redis-server`` (7.x; ``make test`` installs it) runs each node in a temporary folder
on free ports (client port and cluster-bus port both chosen free), ``redis-cli --cluster create``
joins them, and the context manager returns once every node says ``cluster_state:ok``, all agree
on the six nodes and every replica has finished its first sync::

    with local_cluster() as cluster:
        cluster.url                    # redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…
        cluster.primary_for("key")     # port of the primary serving the key's slot now
        cluster.kill(port)             # SIGKILL, as a crash
        cluster.wait_promoted(port)    # its replica is primary and the cluster is ok: new port

Everything is killed and the folder removed on exit. Only the standard library and redis-py.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.crc import key_slot

REDIS_SERVER = os.environ.get("ANTEROOM_CLUSTER_REDIS_SERVER", "/usr/bin/redis-server")
REDIS_CLI = str(Path(REDIS_SERVER).with_name("redis-cli"))
# Short enough for a failover test to finish in seconds; long enough that a loaded 2-core
# machine does not declare healthy nodes failed (a replica starts its election after this).
NODE_TIMEOUT_MS = 2000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Node:
    """One redis-server of the cluster; ``role`` is "primary" or "replica" as last read."""

    port: int
    bus_port: int
    folder: Path
    process: subprocess.Popen[bytes]
    role: str = "?"

    @property
    def pid(self) -> int:
        """Process id of the node's redis-server."""
        return self.process.pid

    @property
    def alive(self) -> bool:
        """True until the process has exited."""
        return self.process.poll() is None

    def client(self, timeout: float = 2.0) -> redis.Redis:
        """A plain (non-cluster) client of this node alone."""
        return redis.Redis(
            port=self.port, decode_responses=True, socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )  # fmt: skip

    def log(self, chars: int = 3000) -> str:
        """The end of the node's log."""
        path = self.folder / "redis.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""


class LocalCluster:
    """The running cluster started by :func:`local_cluster`."""

    def __init__(self, nodes: list[Node], folder: Path) -> None:
        self._nodes = nodes
        self.folder = folder
        # Slots each killed port served: :meth:`wait_promoted` waits for them to be served again.
        self._lost_slots: dict[int, list[int]] = {}

    @property
    def url(self) -> str:
        """``redis+cluster://`` URL naming every node as a seed (dead ones are skipped)."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self._nodes)

    @property
    def nodes(self) -> list[Node]:
        """Every node, its ``role`` refreshed from the cluster's current view."""
        roles = self._roles() if any(node.alive for node in self._nodes) else {}
        for node in self._nodes:
            # A killed process is dead before the others' gossip agrees it has failed.
            node.role = roles.get(node.port, node.role) if node.alive else "dead"
        return list(self._nodes)

    def node(self, port: int) -> Node:
        """The node listening on ``port`` (its role refreshed)."""
        return next(n for n in self.nodes if n.port == port)

    def primaries(self) -> list[int]:
        """Ports of the live primaries that serve slots."""
        return sorted({port for port in self._slot_owners().values()})

    def primary_for(self, key: str) -> int:
        """Port of the primary serving ``key``'s slot now (hash tags honoured)."""
        return self.primary_for_slot(key_slot(key.encode()))

    def primary_for_slot(self, slot: int) -> int:
        """Port of the primary serving ``slot`` now."""
        owners = self._slot_owners()
        if slot not in owners:
            raise LookupError(f"slot {slot} is not served by any live primary")
        return owners[slot]

    def replica_of(self, port: int) -> int:
        """Port of a live replica of the primary on ``port``."""
        view = self._cluster_nodes()
        ids = {int(row["port"]): row["id"] for row in view}
        primary_id = ids[port]
        for row in view:
            if row["master"] == primary_id and "fail" not in row["flags"]:
                return int(row["port"])
        raise LookupError(f"the primary on {port} has no live replica")

    def kill(self, port: int) -> None:
        """SIGKILL the node on ``port`` (a crash: no shutdown, no final sync)."""
        owners = self._slot_owners()
        self._lost_slots[port] = [slot for slot, owner in owners.items() if owner == port]
        node = next(n for n in self._nodes if n.port == port)
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(10)

    def wait_promoted(self, old_port: int, timeout: float = 30.0) -> int:
        """Wait until the slots of the killed ``old_port`` are served by a promoted replica and
        every live node says ``cluster_state:ok``; the new primary's port."""
        slots = self._lost_slots.get(old_port)
        if not slots:
            raise ValueError(f"{old_port} was not killed by kill(), or served no slot")
        deadline = time.monotonic() + timeout
        while True:
            owners = self._slot_owners()
            new = owners.get(slots[0])
            if new is not None and new != old_port and self._all_ok():
                return new
            if time.monotonic() > deadline:
                raise TimeoutError(f"no replica took over from {old_port}:\n{self._report()}")
            time.sleep(0.05)  # waiting for the cluster's election, not for a race

    def warm_up(self) -> None:
        """Write one key on each primary: Redis 7 leaves a replica out of CLUSTER SLOTS until
        its replication offset is above zero, so a client reading from replicas would not know
        of them before the first write (a test's first client would read from primaries)."""
        owners = self._slot_owners()
        for port in sorted(set(owners.values())):
            key = next(
                f"warm-up:{i}"
                for i in itertools.count()
                if owners[key_slot(f"warm-up:{i}".encode())] == port
            )
            client = self.node(port).client()
            try:
                client.set(key, "1")
            finally:
                client.close()

    def wait_ok(self, timeout: float = 30.0, replicas_listed: int = 0) -> None:
        """Wait until every live node says ``cluster_state:ok``, knows every node, every live
        replica has finished its sync and (``replicas_listed``) every node's CLUSTER SLOTS names
        that many replicas per primary."""
        deadline = time.monotonic() + timeout
        while not (
            self._all_ok() and self._replicas_synced() and self._replicas_listed(replicas_listed)
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cluster did not settle:\n{self._report()}")
            time.sleep(0.05)  # waiting for gossip and sync, not for a race

    def stop(self) -> None:
        """Kill every node and remove the folder (stopping twice is harmless)."""
        for node in self._nodes:
            if node.alive:
                node.process.send_signal(signal.SIGKILL)
        for node in self._nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.process.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- reading the cluster's own view, from any live node -----------------------------------

    def _ask(self, *command: str) -> object:
        errors = []
        for node in self._nodes:
            if not node.alive:
                continue
            client = node.client(timeout=1.0)
            try:
                return client.execute_command(*command)
            except redis.RedisError as exc:
                errors.append(f"{node.port}: {exc}")
            finally:
                client.close()
        raise RuntimeError("no live node answered: " + "; ".join(errors))

    def _cluster_nodes(self) -> list[dict[str, str]]:
        """CLUSTER NODES as rows: id, port, flags, master (id or "-")."""
        # Sent as two words, so redis-py leaves the reply as the server's text.
        text = str(self._ask("CLUSTER", "NODES"))
        rows = []
        for line in text.strip().splitlines():
            cols = line.split()
            port = cols[1].split("@")[0].rsplit(":", 1)[1]
            rows.append({"id": cols[0], "port": port, "flags": cols[2], "master": cols[3]})
        return rows

    def _roles(self) -> dict[int, str]:
        roles = {}
        for row in self._cluster_nodes():
            if "fail" in row["flags"] and "fail?" not in row["flags"]:
                roles[int(row["port"])] = "dead"
            elif "master" in row["flags"]:
                roles[int(row["port"])] = "primary"
            elif "slave" in row["flags"]:
                roles[int(row["port"])] = "replica"
        return roles

    def _slot_owners(self) -> dict[int, int]:
        """Slot -> port of its primary, per CLUSTER SLOTS of a live node (live owners only)."""
        owners: dict[int, int] = {}
        alive = {n.port for n in self._nodes if n.alive}
        for entry in self._ask("CLUSTER", "SLOTS"):  # type: ignore[union-attr]
            start, end, primary = int(entry[0]), int(entry[1]), entry[2]
            port = int(primary[1])
            if port in alive:
                for slot in range(start, end + 1):
                    owners[slot] = port
        return owners

    def _all_ok(self) -> bool:
        live = [n for n in self._nodes if n.alive]
        for node in live:
            client = node.client(timeout=1.0)
            try:
                info = client.execute_command("CLUSTER", "INFO")
                known = client.execute_command("CLUSTER", "NODES")
            except redis.RedisError:
                return False
            finally:
                client.close()
            text = info if isinstance(info, str) else str(info)
            if "cluster_state:ok" not in text:
                return False
            if len(str(known).strip().splitlines()) != len(self._nodes):
                return False
        return True

    def _replicas_listed(self, replicas: int) -> bool:
        for node in self._nodes:
            if not node.alive:
                continue
            client = node.client(timeout=1.0)
            try:
                ranges = client.execute_command("CLUSTER", "SLOTS")
            except redis.RedisError:
                return False
            finally:
                client.close()
            if any(len(entry) < 3 + replicas for entry in ranges):
                return False
        return True

    def _replicas_synced(self) -> bool:
        for node in self._nodes:
            if not node.alive:
                continue
            client = node.client(timeout=1.0)
            try:
                info = client.info("replication")
            except redis.RedisError:
                return False
            finally:
                client.close()
            if info.get("role") == "slave" and (
                info.get("master_link_status") != "up" or info.get("master_sync_in_progress")
            ):
                return False
        return True

    def _report(self) -> str:
        lines = []
        for node in self._nodes:
            lines.append(f"--- node {node.port} (alive={node.alive}) ---\n{node.log(1500)}")
        return "\n".join(lines)


def _start_node(folder: Path, node_timeout_ms: int, full_coverage: bool) -> Node:
    folder.mkdir(parents=True)
    port, bus_port = _free_port(), _free_port()
    while bus_port == port:
        bus_port = _free_port()
    args = [
        REDIS_SERVER,
        "--port", str(port),
        "--cluster-port", str(bus_port),
        "--bind", "127.0.0.1",
        "--dir", str(folder),
        "--cluster-enabled", "yes",
        "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", str(node_timeout_ms),
        "--cluster-require-full-coverage", "yes" if full_coverage else "no",
        "--appendonly", "no",
        "--save", "",
        "--daemonize", "no",
        "--logfile", str(folder / "redis.log"),
    ]  # fmt: skip
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
    return Node(port, bus_port, folder, process)


def _wait_answering(node: Node, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        client = node.client(timeout=0.5)
        try:
            if client.ping():
                return
        except redis.RedisError:
            pass
        finally:
            client.close()
        if not node.alive:
            raise RuntimeError(f"redis-server on {node.port} exited:\n{node.log()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"redis-server on {node.port} did not answer:\n{node.log()}")
        time.sleep(0.02)  # waiting for a process to boot


@contextlib.contextmanager
def local_cluster(
    primaries: int = 3,
    replicas: int = 1,
    *,
    node_timeout_ms: int = NODE_TIMEOUT_MS,
    full_coverage: bool = True,
    timeout: float = 60.0,
) -> Iterator[LocalCluster]:
    """Start a cluster of ``primaries`` primaries with ``replicas`` replicas each; tear it down
    after. ``full_coverage=False`` lets the other shards answer while one has no primary
    (``cluster-require-full-coverage no``; Redis's default stops them all). Raises
    FileNotFoundError when Debian's redis-server is not installed."""
    if not (os.access(REDIS_SERVER, os.X_OK) and os.access(REDIS_CLI, os.X_OK)):
        raise FileNotFoundError(f"{REDIS_SERVER} and redis-cli are needed (make test installs)")
    folder = Path(tempfile.mkdtemp(prefix="anteroom-cluster-"))
    nodes: list[Node] = []
    cluster = LocalCluster(nodes, folder)
    try:
        for i in range(primaries * (1 + replicas)):
            nodes.append(_start_node(folder / f"node{i}", node_timeout_ms, full_coverage))
        for node in nodes:
            _wait_answering(node, timeout)
        # redis-cli makes the first ``primaries`` addresses primaries, the rest their replicas.
        created = subprocess.run(
            [REDIS_CLI, "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in nodes),
             "--cluster-replicas", str(replicas), "--cluster-yes"],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if created.returncode != 0:
            raise RuntimeError(
                f"redis-cli --cluster create failed:\n{created.stdout}\n{created.stderr}"
            )
        cluster.wait_ok(timeout)
        cluster.warm_up()
        cluster.wait_ok(timeout, replicas_listed=replicas)
        yield cluster
    finally:
        cluster.stop()
