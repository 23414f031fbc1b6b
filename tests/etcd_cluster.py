"""A local etcd cluster (Debian's etcd-server): one member per region, for the tests and bench/.

Three members on this machine keep a quorum when one is lost (a region's loss). Its election
timers are short (50 ms heartbeats, 500 ms elections) so a lost member's leadership moves within
a second. Start with ``with EtcdCluster(tmp_dir, 3) as cluster``; ``cluster.stop(i)`` and
``cluster.start(i)`` take one member away and back.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

import pytest

from anteroom.ops.embedded_redis import EmbeddedRedis
from helpers import free_port

ETCD = shutil.which("etcd") or "/usr/bin/etcd"


class EtcdCluster:
    """``size`` etcd members under ``root``, each its own client and peer port."""

    def __init__(self, root: Path, size: int = 3) -> None:
        self.root = root
        self.size = size
        self.client_ports = [free_port() for _ in range(size)]
        self.peer_ports = [free_port() for _ in range(size)]
        self.token = f"anteroom-{time.monotonic_ns()}"
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * size

    @property
    def endpoints(self) -> list[str]:
        """Each member's client URL."""
        return [f"http://127.0.0.1:{port}" for port in self.client_ports]

    def _command(self, i: int, state: str) -> list[str]:
        peers = ",".join(f"m{j}=http://127.0.0.1:{p}" for j, p in enumerate(self.peer_ports))
        client = f"http://127.0.0.1:{self.client_ports[i]}"
        peer = f"http://127.0.0.1:{self.peer_ports[i]}"
        return [
            ETCD,
            f"--name=m{i}",
            f"--data-dir={self.root / f'm{i}'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster={peers}",
            f"--initial-cluster-state={state}",
            f"--initial-cluster-token={self.token}",
            "--heartbeat-interval=50",
            "--election-timeout=500",
            "--log-level=error",
        ]

    def start(self, i: int, state: str = "existing") -> None:
        """Start member ``i`` (again: it rejoins with its data)."""
        with open(self.root / f"m{i}.log", "ab") as log:  # the child keeps its own copy
            self.procs[i] = subprocess.Popen(self._command(i, state), stdout=log, stderr=log)

    def stop(self, i: int) -> None:
        """Stop member ``i`` (its region's etcd is lost)."""
        proc = self.procs[i]
        if proc is not None:
            proc.terminate()
            proc.wait(10)
            self.procs[i] = None

    def healthy(self, i: int) -> bool:
        """True when member ``i`` answers and the cluster has a leader."""
        try:
            with urllib.request.urlopen(self.endpoints[i] + "/health", timeout=1) as reply:
                return b'"true"' in reply.read()
        except OSError:
            return False

    def __enter__(self) -> Self:
        # A port found free may be taken before etcd binds it (other suites pick ports too):
        # a cluster that does not come up is started again on new ports, twice at most.
        for attempt in range(3):
            self.root.mkdir(parents=True, exist_ok=True)
            for i in range(self.size):
                self.start(i, "new")
            deadline = time.monotonic() + 30
            while not all(self.healthy(i) for i in range(self.size)):
                if time.monotonic() > deadline or any(
                    proc is not None and proc.poll() is not None for proc in self.procs
                ):
                    break
                time.sleep(0.1)
            else:
                return self
            self.close()
            if attempt < 2:
                shutil.rmtree(self.root, ignore_errors=True)
                self.client_ports = [free_port() for _ in range(self.size)]
                self.peer_ports = [free_port() for _ in range(self.size)]
                self.token = f"anteroom-{time.monotonic_ns()}"
        raise RuntimeError(f"etcd did not start; see {self.root}/m*.log")

    def close(self) -> None:
        """Stop every member."""
        for i in range(self.size):
            self.stop(i)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@contextmanager
def redis_per_region(
    factory: pytest.TempPathFactory, regions: Iterable[str]
) -> Iterator[dict[str, str]]:
    """One embedded Redis server per region (a region's own Redis): {region: its URL}."""
    servers = {
        r: EmbeddedRedis(factory.mktemp(f"redis-{r}"), port=free_port()).start() for r in regions
    }
    try:
        yield {r: str(server.url) for r, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()
