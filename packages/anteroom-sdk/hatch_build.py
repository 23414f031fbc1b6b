"""Hatch build hook: anteroom-sdk ships the standard-library part of ``backend/anteroom/``.

The distribution owns the package ``anteroom`` itself (its ``__init__.py``) and the modules a
site needs: ``anteroom.verify``, ``anteroom.edge`` and ``anteroom.sdk``. In a clone they are read
from the service's tree; the sdist carries them under ``anteroom/``, so a wheel built from the
sdist needs nothing else. Editable installs are left alone (``dev-mode-dirs``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# Relative to the package folder; the import-linter contract "The SDK needs nothing…" and
# tests/unit/test_import_contracts.py keep every one of them standard-library only.
SHIPPED = ("__init__.py", "verify.py", "edge.py", "sdk/*.py")


def package_folder(root: Path) -> Path:
    """Where the SDK's files are: the unpacked sdist's ``anteroom/``, else the service's tree."""
    unpacked = root / "anteroom"
    if unpacked.is_dir():
        return unpacked
    return root.parent.parent / "backend" / "anteroom"


def shipped_files(root: Path) -> dict[str, str]:
    """Each file of the SDK (absolute path) and its place in the distribution (``anteroom/…``)."""
    folder = package_folder(root)
    files = {
        str(path): f"anteroom/{path.relative_to(folder).as_posix()}"
        for pattern in SHIPPED
        for path in sorted(folder.glob(pattern))
    }
    if "anteroom/verify.py" not in files.values():
        raise RuntimeError(f"anteroom-sdk: no anteroom/verify.py under {folder}")
    return files


class SdkFiles(BuildHookInterface):  # type: ignore[misc]
    """Adds the SDK's files to the sdist and the wheel."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        build_data["force_include"].update(shipped_files(Path(self.root)))
