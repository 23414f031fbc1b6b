"""A non-editable ``pip install .`` into a fresh virtual environment is a working server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import pytest
import requests

from helpers import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_lua_templates_and_static(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
    )
    wheel = next(tmp_path.glob("anteroom-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    lua = {p.name for p in (ROOT / "lua").glob("*.lua")}
    assert {f"anteroom/lua/{name}" for name in lua} <= names
    assert {"anteroom/templates/queue.html", "anteroom/static/anteroom.css"} <= names
    assert "anteroom/static/anteroom.js" in names  # the built agent (make builds it first)


def test_installed_server_serves_readyz_and_the_hosted_page(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    pip = env_dir / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", str(ROOT)], check=True, cwd=tmp_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env |= {"ANTEROOM_BIND": f"127.0.0.1:{port}", "ANTEROOM_DATA_DIR": str(tmp_path / "var")}
    server = subprocess.Popen(
        [str(env_dir / "bin" / "anteroom"), "serve"],
        env=env,
        cwd=tmp_path,  # nowhere near the source tree: only the installed files can be used
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                ready = requests.get(base + "/readyz", timeout=2)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)  # the process is booting
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        page = requests.get(base + "/queue/demo?key=pk_demo", timeout=5)
        assert page.status_code == 200 and "Anteroom demo drop" in page.text
        assert requests.get(base + "/static/hosted.js", timeout=5).status_code == 200
        assert (tmp_path / "var" / "appendonlydir").exists() or list(
            (tmp_path / "var").glob("*.aof")
        )
    finally:
        server.terminate()
        server.wait(30)
