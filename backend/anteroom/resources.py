"""Find the files that ship beside the code: Lua scripts, templates and static files.

In a wheel they live inside the package (``anteroom/lua`` …); in a source checkout they live at
the top of the repository (`lua/`, `templates/`, `static/`), so both places are looked at, package
first.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Directory ``name`` (``lua``, ``templates`` or ``static``) for this installation."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"anteroom resource folder {name!r} is missing from the installation")
