"""The previous release of Anteroom, installed into a virtual environment of its own.

The release is the newest one in ``releases.toml`` older than this tree's version: found by its
tag (``v<version>``) when the clone has tags, else by the commit recorded there (a fresh clone
may come without tags but has the history). Its tree is taken with ``git archive``, its browser
agent built from it with this clone's ``node_modules`` (as its build hook does), and its two
distributions (``anteroom-sdk``, then ``anteroom``) built into wheels and installed with no
package index: their dependencies are this venv's (the same libraries), seen through a folder of
links that leaves out this tree's own ``anteroom``. The result is kept under
``var/releases/<commit>/`` so the next run starts at once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "var" / "releases"
# Bumped when the way a release is installed changes, so older installs are made again.
RECIPE = "1"
# This tree's own distributions in this venv: never seen by the previous release.
OWN = ("anteroom", "_anteroom", "_editable_impl_anteroom", "__editable__")


@dataclass(frozen=True)
class Release:
    """A release: its version and the commit it was cut from."""

    version: str
    commit: str


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def this_version() -> str:
    """This tree's version (pyproject.toml)."""
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def previous_release() -> Release:
    """The newest recorded release older than this tree, its commit checked against its tag."""
    current = _key(this_version())
    releases = tomllib.loads((ROOT / "releases.toml").read_text())["release"]
    older = [r for r in releases if _key(r["version"]) < current]
    if not older:
        raise LookupError(f"releases.toml records no release before {this_version()}")
    newest = max(older, key=lambda r: _key(r["version"]))
    release = Release(newest["version"], newest["commit"])
    tagged = _git("rev-parse", "--verify", "--quiet", f"v{release.version}^{{commit}}")
    if tagged.returncode == 0:
        found = tagged.stdout.strip()
        if found != release.commit:
            raise LookupError(
                f"tag v{release.version} is {found}, releases.toml records {release.commit}"
            )
    elif _git("cat-file", "-e", f"{release.commit}^{{commit}}").returncode != 0:
        raise LookupError(
            f"release {release.version}: neither its tag v{release.version} nor its commit "
            f"{release.commit} is in this clone (a shallow clone? fetch the full history)"
        )
    return release


def _dependencies(into: Path) -> Path:
    """A folder of links to this venv's libraries, without this tree's own distributions."""
    site = Path(sysconfig.get_paths()["purelib"])
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    for entry in site.iterdir():
        if entry.name.startswith(OWN) or entry.suffix == ".pth":
            continue
        (into / entry.name).symlink_to(entry)
    return into


def _fingerprint() -> str:
    return f"{RECIPE} {sys.version.split()[0]} {sysconfig.get_paths()['purelib']}\n"


def install(release: Release) -> Path:
    """The release's ``anteroom`` command, installed once into ``var/releases/<commit>/``."""
    home = CACHE / release.commit
    command = home / "venv" / "bin" / "anteroom"
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs building at once take turns
        stamp = home / "installed"
        # The links are made again each time: this venv's libraries may have changed.
        deps = _dependencies(home / "deps")
        if stamp.is_file() and stamp.read_text() == _fingerprint() and command.exists():
            return command
        for part in ("src", "venv"):
            shutil.rmtree(home / part, ignore_errors=True)
        src = home / "src"
        src.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "archive", release.commit], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        # Its build hook bundles the agent with esbuild from node_modules: this clone's (the
        # same pinned packages; `make test` installs them first).
        (src / "node_modules").symlink_to(ROOT / "node_modules")
        venv = home / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = venv / "bin" / "python"
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        # A plain path line: the folder joins sys.path, its own .pth files are not run.
        (Path(purelib) / "dependencies.pth").write_text(f"{deps}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
             "--no-build-isolation", str(src / "packages" / "anteroom-sdk"), str(src)],
            cwd=home, env=env | {"PIP_CONFIG_FILE": os.devnull}, check=True,
        )  # fmt: skip
        stamp.write_text(_fingerprint())
    return command
