"""Background threads start from one place: the service container (issue 22 item 2)."""

from __future__ import annotations

import re
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[2] / "backend" / "anteroom"


def test_only_the_container_starts_background_threads() -> None:
    starters = sorted(
        str(path.relative_to(BACKEND))
        for path in BACKEND.rglob("*.py")
        if re.search(r"\.ensure_running\b", path.read_text(encoding="utf-8"))
    )
    assert starters == ["service_container.py"]
