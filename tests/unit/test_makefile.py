"""The Makefile's two commands install what each needs: ``make serve`` never the test extra, and
``make test`` after ``make serve`` (a fresh clone's order) still installs it.

``make -n`` prints what would run without running it, in a copy of the Makefile and pyproject.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def would_run(clone: Path, target: str) -> str:
    return subprocess.run(
        ["make", "-n", target], cwd=clone, capture_output=True, text=True, check=True
    ).stdout


def fresh_clone(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml", "packages/anteroom-sdk/pyproject.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def ran(clone: Path, target: str) -> str:
    """Pretend the Python steps of ``make target`` ran: the venv exists, the stamps are new."""
    (clone / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    python = clone / ".venv" / "bin" / "python"
    python.touch()
    python.chmod(0o755)
    commands = would_run(clone, target)
    for line in commands.splitlines():
        if line.startswith("touch .venv/"):
            (clone / line.split()[1]).touch()
    return commands


def test_serve_installs_the_package_without_the_test_extra(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    commands = would_run(clone, "serve")
    assert "pip install --quiet -e ./packages/anteroom-sdk -e .\n" in commands
    assert "[test]" not in commands
    assert ".venv/bin/anteroom serve" in commands


def test_test_after_serve_installs_the_test_extra_and_serve_after_test_nothing(
    tmp_path: Path,
) -> None:
    clone = fresh_clone(tmp_path)
    ran(clone, "serve")
    assert "pip install" not in would_run(clone, "serve")  # stamped: nothing to install again
    commands = ran(clone, "pytest")
    assert "pip install --quiet -e ./packages/anteroom-sdk -e '.[test]'" in commands
    assert "pip install" not in would_run(clone, "pytest")
    assert "pip install" not in would_run(clone, "serve")
