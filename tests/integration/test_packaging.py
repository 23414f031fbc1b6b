"""Packaging: a non-editable install is a working server, and a clean clone builds a complete wheel.

The browser agent in ``static/`` is build output (git-ignored): ``hatch_build.py`` bundles it
with Node for the wheel and the sdist, and the sdist carries it so its wheel needs no Node.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
import requests

from helpers import free_port
from live_server import ServerProcess

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
AGENT = ("static/anteroom.js", "static/anteroom.mjs", "static/hosted.js")


def clean_clone(tmp_path: Path) -> Path:
    """A fresh ``git clone`` of the committed HEAD: no node_modules, no built agent."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    assert not any((clone / name).exists() for name in AGENT)
    assert not (clone / "node_modules").exists()
    return clone


def without_node() -> dict[str, str]:
    """The environment with a PATH on which there is no ``node`` (nor ``npm``)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(
        d for d in env.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "node").exists()
    )
    assert shutil.which("node", path=env["PATH"]) is None
    return env


def wheel_names(folder: Path) -> set[str]:
    return set(zipfile.ZipFile(next(folder.glob("anteroom-*.whl"))).namelist())


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
    assert "anteroom/translations/ar.json" in names
    assert {f"anteroom/{name}" for name in AGENT} <= names  # the built agent


def test_a_clean_clone_builds_a_wheel_that_carries_the_agent(tmp_path: Path) -> None:
    clone = clean_clone(tmp_path)
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(clone)],
        check=True,
    )
    names = wheel_names(out)
    assert {f"anteroom/{name}" for name in AGENT} <= names
    assert "anteroom/static/anteroom.css" in names


def test_without_node_a_clean_clone_fails_to_build_and_says_why(tmp_path: Path) -> None:
    clone = clean_clone(tmp_path)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-w",
            str(tmp_path / "out"),
            str(clone),
        ],
        env=without_node(),
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "needs Node.js 20 or later, and `node` is not on PATH" in result.stdout + result.stderr
    assert not list((tmp_path / "out").glob("*.whl"))


def test_the_sdist_carries_the_agent_so_its_wheel_needs_no_node(tmp_path: Path) -> None:
    clone = clean_clone(tmp_path)
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(dist), str(clone)],
        check=True,
        capture_output=True,
    )
    sdist = next(dist.glob("anteroom-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert set(AGENT) <= names
    assert "hatch_build.py" in names and not any(n.startswith("frontend/") for n in names)
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(sdist)],
        env=without_node(),
        check=True,
    )
    assert {f"anteroom/{name}" for name in AGENT} <= wheel_names(out)


def test_installed_server_serves_readyz_and_the_hosted_page(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    pip = env_dir / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", str(ROOT)], check=True, cwd=tmp_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env |= {"ANTEROOM_BIND": f"127.0.0.1:{port}", "ANTEROOM_DATA_DIR": str(tmp_path / "var")}
    command = [str(env_dir / "bin" / "anteroom"), "serve"]
    log = tmp_path / "server.log"
    # cwd: nowhere near the source tree, so only the installed files can be used
    server = ServerProcess(command, port, log, env=env, ready_path="/readyz", cwd=tmp_path)
    with server.start(timeout=60):
        base = server.url
        ready = requests.get(base + "/readyz", timeout=2)
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        page = requests.get(base + "/queue/demo?key=pk_demo", timeout=5)
        assert page.status_code == 200 and "Anteroom demo drop" in page.text
        assert requests.get(base + "/static/hosted.js", timeout=5).status_code == 200
        assert (tmp_path / "var" / "appendonlydir").exists() or list(
            (tmp_path / "var").glob("*.aof")
        )
