"""Packaging: a non-editable install is a working server, and a clean clone builds a complete wheel.

The browser agent in ``static/`` is build output (git-ignored): ``hatch_build.py`` bundles it
with Node for the wheel and the sdist, and the sdist carries it so its wheel needs no Node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
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
SDK = ROOT / "packages" / "anteroom-sdk"
# What anteroom-sdk ships (its hatch_build.py); the service's wheel leaves these out.
SDK_FILES = ("anteroom/__init__.py", "anteroom/verify.py", "anteroom/edge.py", "anteroom/sdk/")


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
    # The SDK from this tree too: the service depends on it, and no index is asked for it.
    subprocess.run([str(pip), "install", "-q", str(SDK), str(ROOT)], check=True, cwd=tmp_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env |= {"ANTEROOM_BIND": f"127.0.0.1:{port}", "ANTEROOM_DATA_DIR": str(tmp_path / "var")}
    env["ANTEROOM_DEMO"] = "1"  # the demo room shows the hosted page works
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


def venv_python(env_dir: Path) -> Path:
    venv.create(env_dir, with_pip=True)
    return env_dir / "bin" / "python"


def outside_the_tree() -> dict[str, str]:
    """The environment without PYTHONPATH: only what is installed can be imported."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


VERIFY_SCRIPT = """
import json, sys
from importlib.metadata import distributions
from anteroom.verify import verify_admission
token, keys, other_keys = sys.argv[1:4]
try:
    import anteroom.queue
    service = True
except ImportError:
    service = False
print(json.dumps({
    "dists": sorted(d.metadata["Name"] for d in distributions()),
    "valid": verify_admission(token, keys, room="spring-drop").valid,
    "other": verify_admission(token, other_keys, room="spring-drop").reason,
    "wrong_room": verify_admission(token, keys, room="another").reason,
    "service": service,
    "from": __import__("anteroom.verify").verify.__file__,
}))
"""


def test_the_sdk_builds_from_a_clean_clone_and_installs_alone(tmp_path: Path) -> None:
    """A site's ``pip install anteroom-sdk``: no other package comes with it, and verify works."""
    from anteroom.sdk.tokens import ADMISSION, Keyring, new_id, sign

    clone = clean_clone(tmp_path)
    dist = tmp_path / "dist"
    # sdist first, then the wheel from the sdist: the sdist alone must be enough
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(clone / SDK.relative_to(ROOT))],
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("anteroom_sdk-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if not n.startswith("anteroom_sdk-")}
    assert {"anteroom/__init__.py", "anteroom/verify.py", "anteroom/edge.py"} <= shipped
    assert "anteroom/sdk/tokens.py" in shipped and "anteroom/sdk/wsgi_edge.py" in shipped
    assert all(n.startswith(SDK_FILES) for n in shipped), shipped
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA")))
    assert b"Requires-Dist" not in metadata

    python = venv_python(tmp_path / "site")
    # --no-index: a dependency, had it any, could not be found and the install would fail
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", str(wheel)],
        check=True,
        env=outside_the_tree(),
    )
    keyring, other = Keyring.generate("k1"), Keyring.generate("k2")
    now = int(time.time())
    claims = {"q": "spring-drop", "qr": "r1", "vid": new_id(), "env": "production",
              "jti": new_id(), "iat": now, "exp": now + 300}  # fmt: skip
    token = sign(keyring, ADMISSION, claims)
    result = subprocess.run(
        [str(python), "-c", VERIFY_SCRIPT, token, keyring.serialize(), other.serialize()],
        check=True,
        capture_output=True,
        text=True,
        env=outside_the_tree(),
        cwd=tmp_path,  # nowhere near the source tree
    )
    seen = json.loads(result.stdout)
    assert set(seen["dists"]) - {"pip", "setuptools"} == {"anteroom-sdk"}
    assert seen["valid"] is True
    assert seen["other"] == "unknown-key" and seen["wrong_room"] == "wrong-room"
    assert seen["service"] is False  # the SDK alone: none of the service
    assert seen["from"].startswith(str(tmp_path / "site"))


def test_the_service_wheel_depends_on_the_sdk_and_leaves_its_files_to_it(tmp_path: Path) -> None:
    import anteroom

    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
    )
    wheel = zipfile.ZipFile(next(tmp_path.glob("anteroom-*.whl")))
    names = set(wheel.namelist())
    assert "anteroom/queue/line/room_engine.py" in names and "anteroom/web/app_factory.py" in names
    assert not [n for n in names if n.startswith(SDK_FILES)]  # anteroom-sdk's, never twice
    metadata = wheel.read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert f"Requires-Dist: anteroom-sdk=={anteroom.__version__}" in metadata.splitlines()
    sdk_version = tomllib.loads((SDK / "pyproject.toml").read_text())["project"]["version"]
    assert sdk_version == anteroom.__version__  # released together
