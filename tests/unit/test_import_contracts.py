"""The layer rules of pyproject's import-linter contracts hold, and break on a wrong import."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "backend" / "anteroom"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# Everything anteroom-sdk ships (packages/anteroom-sdk/hatch_build.py), the package's own
# __init__ among them.
SDK_FILES = [
    *sorted((PACKAGE / "sdk").glob("*.py")),
    PACKAGE / "__init__.py",
    PACKAGE / "verify.py",
    PACKAGE / "edge.py",
]


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports (relative imports count as the SDK's)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("anteroom.sdk" if node.level else str(node.module))
    return names


@pytest.mark.parametrize("path", SDK_FILES, ids=lambda p: p.name)
def test_sdk_is_stdlib_only(path: Path) -> None:
    """Sites install the SDK alone: it may import the standard library and itself, nothing else."""
    foreign = {
        name
        for name in imported_modules(path)
        if name.split(".")[0] not in sys.stdlib_module_names
        and name != "__future__"
        and not name.startswith("anteroom.sdk")
    }
    assert foreign == set()


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": str(tree / "backend")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    shutil.copytree(
        PACKAGE, tmp_path / "backend" / "anteroom", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.parametrize(
    ("module", "wrong_import", "contract"),
    [
        ("queue/rooms/key_layout.py", "import flask", "The queue core imports no Flask"),
        ("identity/sessions.py", "from anteroom.web import http_errors", "Nothing below the web"),
        ("sdk/tokens.py", "import redis", "The SDK needs nothing of the project"),
        ("store/keystore.py", "import anteroom.web.app_factory", "Nothing below the web"),
        ("store/audit_log.py", "import flask", "Nothing below the web"),
        ("store/keystore.py", "from anteroom.identity import sessions", "Layers"),
        ("queue/rooms/key_layout.py", "from anteroom.store import keystore", "The queue core"),
        ("sdk/tokens.py", "from anteroom.store import audit_log", "The SDK needs nothing"),
        ("web/visitor/front_door.py", "from anteroom.ops import demo_seed", "Nothing imports ops"),
        ("identity/sessions.py", "import anteroom.ops.cli", "Nothing imports ops"),
        ("identity/sessions.py", "from anteroom import service_container", "Layers"),
        ("identity/revocation.py", "from anteroom.web import app_factory", "Layers"),
        ("config.py", "from anteroom.store import keystore", "Layers"),
        ("store/audit_log.py", "from anteroom import config", "Layers"),
        ("queue/line/room_engine.py", "from anteroom import config", "The queue core"),
        ("service_container.py", "from anteroom.web import http_errors", "Nothing below the web"),
        ("web/visitor/hot_path.py", "from anteroom import engine", "The visitor's entrances"),
        (
            "web/pages/plain_page.py",
            "from anteroom.queue.line import room_engine",
            "The visitor's entrances",
        ),
    ],
)
def test_a_wrong_import_breaks_a_contract(
    tree_copy: Path, module: str, wrong_import: str, contract: str
) -> None:
    assert lint_imports(tree_copy).returncode == 0  # the tree as it is keeps every contract
    target = tree_copy / "backend" / "anteroom" / module
    target.write_text(target.read_text() + f"\n{wrong_import}  # deliberately wrong\n")
    result = lint_imports(tree_copy)
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert any(line.startswith(contract) for line in broken), result.stdout


def test_the_sdk_distribution_ships_what_the_sdk_contract_guards() -> None:
    """anteroom-sdk ships exactly the modules kept standard-library only (and the package root).

    A new public SDK module must be named in both places: in the contract, so it stays
    standard-library only, and in packages/anteroom-sdk/hatch_build.py, so sites get it.
    """
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    sdk = next(c for c in contracts if c["name"].startswith("The SDK needs nothing"))
    hook = ast.parse((ROOT / "packages" / "anteroom-sdk" / "hatch_build.py").read_text())
    shipped = next(
        ast.literal_eval(node.value)
        for node in hook.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SHIPPED"
    )
    modules = {
        "anteroom." + pattern.removesuffix("/*.py").removesuffix(".py").replace("/", ".")
        for pattern in shipped
        if pattern != "__init__.py"
    }
    assert "__init__.py" in shipped
    assert modules == set(sdk["source_modules"])
