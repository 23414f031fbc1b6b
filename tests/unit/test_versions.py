"""One version for the service, the site SDK and the npm package: every file that states it agrees,
CHANGELOG.md's newest entry is that version, and releases.toml records the releases before it."""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path

import pytest

from anteroom.ops import cli

ROOT = Path(__file__).resolve().parents[2]
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")
CHANGELOG_ENTRY = re.compile(r"^## (\d+\.\d+\.\d+)(?: - (\d{4}-\d{2}-\d{2}))?$", re.MULTILINE)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def stated_versions() -> dict[str, str]:
    """Each place the version is written, by a name saying where."""
    service = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    sdk = tomllib.loads((ROOT / "packages/anteroom-sdk/pyproject.toml").read_text())["project"]
    pins = [d for d in service["dependencies"] if d.startswith("anteroom-sdk")]
    init = ast.parse((ROOT / "backend/anteroom/__init__.py").read_text())
    dunder = next(
        node.value.value
        for node in init.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
        and isinstance(node.value, ast.Constant)
    )
    package = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())
    return {
        "pyproject.toml [project] version": service["version"],
        "pyproject.toml's anteroom-sdk pin": pins[0].removeprefix("anteroom-sdk=="),
        "packages/anteroom-sdk/pyproject.toml": sdk["version"],
        "backend/anteroom/__init__.py __version__": dunder,
        "package.json": package["version"],
        "package-lock.json": lock["version"],
        'package-lock.json packages[""]': lock["packages"][""]["version"],
    }


def changelog_entries() -> list[tuple[str, str | None]]:
    """CHANGELOG.md's released entries, newest first: (version, date)."""
    return CHANGELOG_ENTRY.findall((ROOT / "CHANGELOG.md").read_text())


def recorded_releases() -> list[dict[str, str]]:
    return tomllib.loads((ROOT / "releases.toml").read_text())["release"]  # type: ignore[no-any-return]


def test_every_file_states_one_version() -> None:
    stated = stated_versions()
    assert len(set(stated.values())) == 1, f"the version differs between files: {stated}"
    assert SEMVER.match(stated["pyproject.toml [project] version"])


def test_the_sdk_pin_is_exact() -> None:
    service = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [d for d in service["dependencies"] if d.startswith("anteroom-sdk")]
    assert len(pins) == 1 and pins[0].startswith("anteroom-sdk=="), pins  # released together


def test_the_changelog_s_newest_entry_is_this_version() -> None:
    version = stated_versions()["pyproject.toml [project] version"]
    entries = changelog_entries()
    assert entries, "CHANGELOG.md has no '## x.y.z - date' entry"
    newest = entries[0][0]
    assert newest == version, f"CHANGELOG.md's newest entry is {newest}, not {version}"
    versions = [v for v, _ in entries]
    assert versions == sorted(versions, key=_key, reverse=True), "entries must go newest first"
    assert len(set(versions)) == len(versions)


def test_recorded_releases_come_before_this_version_and_are_in_the_changelog() -> None:
    version = stated_versions()["pyproject.toml [project] version"]
    releases = recorded_releases()
    assert releases, "releases.toml records no release"
    dated = dict(changelog_entries())
    for release in releases:
        assert re.fullmatch(r"[0-9a-f]{40}", release["commit"]), release
        assert _key(release["version"]) <= _key(version), release
        assert dated.get(release["version"]) == release["date"], (
            f"CHANGELOG.md has no entry '## {release['version']} - {release['date']}'"
        )
    ordered = [r["version"] for r in releases]
    assert ordered == sorted(ordered, key=_key, reverse=True)


def test_anteroom_version_reports_it(capsys: pytest.CaptureFixture[str]) -> None:
    # What the installed distributions say: a venv installed before a version change is stale
    # (`make` installs again when a pyproject.toml changes).
    version = stated_versions()["pyproject.toml [project] version"]
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"anteroom {version} (anteroom-sdk {version})"
