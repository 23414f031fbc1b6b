"""Servers in child processes, for the tests and bench/: started, awaited, stopped, logs kept.

``LiveServer`` is the real service (``anteroom serve`` under gunicorn); ``ServerProcess`` runs any
other server the edge suites and benchmarks need. conftest's ``live_server`` fixture starts them
for tests and shows their logs when a test fails.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

from helpers import TEST_KEYS, free_port

ANTEROOM = Path(sys.executable).with_name("anteroom")
SERVE = (
    [str(ANTEROOM), "serve"]
    if ANTEROOM.exists()
    else [sys.executable, "-m", "anteroom.ops.cli", "serve"]
)
LOG_LINES = 200  # of a server's log shown with a failing test

# Servers started and not stopped before the current test began: their logs go with a failure.
STARTED: list[ServerProcess] = []


class ServerProcess:
    """A server in a child process on 127.0.0.1:``port``, its output in the file ``log``.

    Ready once it accepts connections or, with ``ready_path``, once GET ``ready_path`` is a 200.
    """

    def __init__(
        self,
        command: Sequence[str],
        port: int,
        log: Path,
        *,
        env: Mapping[str, str] | None = None,
        ready_path: str | None = None,
        cwd: Path | None = None,
        name: str | None = None,
        new_session: bool = False,
    ) -> None:
        self.command = list(command)
        self.new_session = new_session  # its own process group, as a shell's foreground job
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.env = dict(env) if env is not None else None
        self.ready_path = ready_path
        self.cwd = cwd
        self.name = name or Path(self.command[0]).name
        self.process: subprocess.Popen[bytes] | None = None
        self.stopped_at: float | None = None

    def start(self, timeout: float = 30) -> Self:
        """Start the process and return once it is ready; its log is in the error if it is not."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                cwd=self.cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=self.new_session,
            )
        self.stopped_at = None
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{self.name} did not become ready:\n{self.output()}")
            time.sleep(0.1)  # waiting for a process to boot, not for a race
        STARTED.append(self)
        return self

    def ready(self) -> bool:
        try:
            if self.ready_path is None:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            try:
                connection.request("GET", self.ready_path)
                return connection.getresponse().status == 200
            finally:
                connection.close()
        except (OSError, http.client.HTTPException):
            return False  # not listening yet, or too slow to answer on a loaded machine

    def stop(self) -> None:
        """Terminate the process (kill it if it lingers); stopping twice is harmless."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process and self.stopped_at is None:
            self.stopped_at = time.time()

    def output(self, lines: int | None = None) -> str:
        """What the process wrote so far (its last ``lines`` lines)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text if lines is None else "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self.start() if self.process is None else self  # started already, or not

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class LiveServer(ServerProcess):
    """``anteroom serve`` (gunicorn, 4 workers) on a free port, against ``redis_url``.

    ``env`` overrides its ANTEROOM_* settings; inherited ANTEROOM_* variables are dropped, so a
    developer's own settings never leak into a test. ``command`` runs another installation's
    ``anteroom serve`` (a previous release, tests/previous_release.py).
    """

    def __init__(
        self,
        redis_url: str,
        data_dir: Path | str,
        *,
        command: Sequence[str] = SERVE,
        **env: str,
    ) -> None:
        port = free_port()
        self.data_dir = Path(data_dir)
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
        settings = {
            "ANTEROOM_BIND": f"127.0.0.1:{port}",
            "ANTEROOM_REDIS_URL": redis_url,
            "ANTEROOM_KEYS": TEST_KEYS,
            "ANTEROOM_DATA_DIR": str(self.data_dir),
            "ANTEROOM_WORKERS": "4",
            "ANTEROOM_DEMO": "0",
        }
        super().__init__(
            command,
            port,
            self.data_dir / "server.log",
            env=inherited | settings | env,
            ready_path="/readyz",
            name="anteroom serve",
        )

    def workers(self) -> list[int]:
        """Pids of gunicorn's worker processes (Linux /proc)."""
        assert self.process is not None
        return sorted(children_of(self.process.pid))

    def worker_holding(self, sock: socket.socket, timeout: float = 2.0) -> int | None:
        """The worker that accepted the client socket ``sock`` (None if it cannot be told).

        A gunicorn worker that wakes first accepts every pending connection, so which worker
        answers is up to the kernel; a test that needs several workers pins its connections.
        """
        client_port = sock.getsockname()[1]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            inode = _socket_inodes(self.port).get(client_port)
            if inode:
                wanted = f"socket:[{inode}]"
                for pid in self.workers():
                    fds = Path(f"/proc/{pid}/fd")
                    with contextlib.suppress(OSError):
                        if any(os.readlink(fd) == wanted for fd in fds.iterdir()):
                            return pid
            time.sleep(0.002)  # polling /proc until the worker has accepted it, not a race
        return None

    def connection_per_worker(self) -> dict[int, http.client.HTTPConnection]:
        """One kept-alive connection pinned to each worker the kernel lets us reach.

        Left to itself, the worker that wakes first may accept every connection, and a test of
        what several workers share would see one only.
        """
        pinned: dict[int, http.client.HTTPConnection] = {}
        for _ in range(200):
            if len(pinned) == len(self.workers()):
                break
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            conn.connect()
            worker = self.worker_holding(conn.sock)  # type: ignore[arg-type]
            if worker is None or worker in pinned:
                conn.close()
            else:
                pinned[worker] = conn
        return pinned

    def request_through_every_worker(
        self, method: str, path: str, body: str, headers: dict[str, str]
    ) -> dict[int, tuple[int, bytes]]:
        """The same request answered once by each worker: ``{worker pid: (status, body)}``.

        Each connection is used as soon as it is pinned: a connection left without a request
        is closed by the worker after its keep-alive time (2 s), which a loaded machine may
        spend while the others are pinned.
        """
        answered: dict[int, tuple[int, bytes]] = {}
        for _ in range(200):
            if len(answered) == len(self.workers()):
                break
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            conn.connect()
            worker = self.worker_holding(conn.sock)  # type: ignore[arg-type]
            if worker is not None and worker not in answered:
                conn.request(method, path, body, headers)
                reply = conn.getresponse()
                answered[worker] = (reply.status, reply.read())
            conn.close()
        return answered


def _socket_inodes(port: int) -> dict[int, str]:
    """Server-side sockets of ``port`` on loopback: client port -> socket inode (Linux /proc)."""
    out = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        local, remote, inode = cols[1], cols[2], cols[9]
        if int(local.split(":")[1], 16) == port:
            out[int(remote.split(":")[1], 16)] = inode
    return out


def children_of(pid: int) -> list[int]:
    """Pids of the live children of ``pid`` (Linux /proc)."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The process name in parentheses may hold spaces: read past its closing one.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


class LiveServers(Protocol):
    """The ``live_server`` fixtures: start a ``LiveServer`` (the tests' Redis by default)."""

    def __call__(
        self, redis_url: str | None = None, data_dir: Path | None = None, **env: str
    ) -> LiveServer: ...


def servers_since(moment: float) -> list[ServerProcess]:
    """Servers that were running at ``moment`` or started since (older ones are forgotten)."""
    STARTED[:] = [s for s in STARTED if s.stopped_at is None or s.stopped_at >= moment]
    return list(STARTED)
