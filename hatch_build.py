"""Hatch build hook: the wheel and the sdist carry the browser agent built from ``frontend/``.

``static/anteroom.js``, ``anteroom.mjs`` and ``hosted.js`` are build output (git-ignored), so a
clean clone has none. In a source tree this hook bundles them with esbuild (``npm ci`` first if
``node_modules`` lacks it) whenever they are missing or older than ``frontend/``; that needs
Node.js. The sdist carries the built files and no ``frontend/``, so a wheel built from the sdist
needs no Node. Editable installs are left alone: they serve ``static/`` from the tree.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUILT = (
    "static/anteroom.js",
    "static/anteroom.mjs",
    "static/hosted.js",
    "static/console.js",
    "static/console.css",
    "static/api-reference.js",
    "static/api-reference.css",
)
SOURCES = ("frontend", "package.json", "package-lock.json")
# What the build bundles from node_modules: a tree installed before one was added gets `npm ci`.
BUNDLED = ("esbuild", "uplot", "swagger-ui-dist")
NO_NODE = (
    "Building anteroom from a source tree bundles the browser agent ({files}) from frontend/ "
    "with esbuild, which needs Node.js 20 or later, and `{tool}` is not on PATH. Install Node.js "
    "(e.g. `apt-get install nodejs npm`), or build from the sdist, which carries the built files."
)


def _sources(root: Path) -> list[Path]:
    found: list[Path] = []
    for name in SOURCES:
        path = root / name
        if path.is_dir():
            found.extend(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            found.append(path)
    return found


def needs_build(root: Path) -> bool:
    """Whether ``frontend/`` is here and the built files are missing or older than it."""
    if not (root / "frontend").is_dir():
        return False  # an unpacked sdist: the built files came with it
    built = [root / name for name in BUILT]
    if not all(p.is_file() for p in built):
        return True
    newest_source = max(p.stat().st_mtime for p in _sources(root))
    return newest_source > min(p.stat().st_mtime for p in built)


def _run(command: list[str], root: Path) -> None:
    try:
        subprocess.run(command, cwd=root, check=True)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(
            f"`{' '.join(command)}` failed (exit {exc.returncode}) while building the browser "
            "agent into static/; see its output above."
        ) from None


def build_agent(root: Path) -> None:
    """Bundle the agent into ``static/`` (``npm ci`` first when a bundled package is missing)."""
    files = ", ".join(BUILT)
    node = shutil.which("node")
    if node is None:
        raise RuntimeError(NO_NODE.format(files=files, tool="node"))
    if not all((root / "node_modules" / name).is_dir() for name in BUNDLED):
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(NO_NODE.format(files=files, tool="npm"))
        _run([npm, "ci", "--no-audit", "--no-fund"], root)
    _run([node, "frontend/build.mjs"], root)


class AgentBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Builds the agent before the wheel or the sdist is assembled, and ships it in both."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Build if stale; fail clearly if the built files cannot be had; ship them."""
        if self.target_name == "wheel" and version == "editable":
            return
        root = Path(self.root)
        if needs_build(root):
            build_agent(root)
        missing = [name for name in BUILT if not (root / name).is_file()]
        if missing:
            raise RuntimeError(f"the browser agent is missing from this tree: {', '.join(missing)}")
        if self.target_name == "sdist":
            # git-ignored, so the sdist would leave them out unless named here
            for name in BUILT:
                build_data["force_include"][str(root / name)] = name
