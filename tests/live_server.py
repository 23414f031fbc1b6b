"""Run the real service (``anteroom serve`` under gunicorn) for tests that need one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import requests

from helpers import TEST_KEYS, free_port

ANTEROOM = Path(sys.executable).with_name("anteroom")


class LiveServer:
    """A gunicorn-served Anteroom on a free port, against the tests' Redis."""

    def __init__(self, redis_url: str, data_dir: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = (
            os.environ
            | {
                "ANTEROOM_BIND": f"127.0.0.1:{self.port}",
                "ANTEROOM_REDIS_URL": redis_url,
                "ANTEROOM_KEYS": TEST_KEYS,
                "ANTEROOM_DATA_DIR": str(data_dir),
                "ANTEROOM_WORKERS": "4",
                "ANTEROOM_DEMO": "0",
            }
            | env
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir / "server.log"

    def start(self, timeout: float = 30) -> LiveServer:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(ANTEROOM), "serve"], env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("server exited:\n" + self.log.read_text())
            try:
                if requests.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass  # not listening yet, or too slow to answer on a loaded machine: ask again
            time.sleep(0.1)  # waiting for a process to boot, not for a race
        self.stop()
        raise TimeoutError("server did not become ready:\n" + self.log.read_text())

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
