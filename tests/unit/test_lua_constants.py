"""Constants the Lua scripts share with Python have one home, in Python: the assembler writes
their values into the scripts (``$NAME``, queue/connection/lua_scripts.py's SHARED), so the two
cannot
differ. These tests check that the scripts take each shared constant from there (none writes
its value by hand) and that the assembled scripts carry the Python values; the cadence, the
histogram, the block counts and the far poll answered in Python then tell what the scripts do.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from anteroom.queue.connection import lua_scripts
from anteroom.queue.draw import room_draw
from anteroom.queue.line import far_poll, line_blocks, poll_cadence, room_engine
from anteroom.queue.rooms import room_config
from anteroom.queue.series import room_series
from anteroom.resources import resource_dir

LUA = resource_dir("lua")
# `local A, B = 1, 2` (numbers) and `local BOUNDS = {1, 2, 5}` (a table of numbers).
_ASSIGN = re.compile(r"^local ([A-Z_][A-Z0-9_]*(?:, *[A-Z_][A-Z0-9_]*)*) *= *(.+?) *(?:--.*)?$")
_NUMBER = re.compile(r"^\d+$")


def lua_source(name: str) -> str:
    return (LUA / f"{name}.lua").read_text(encoding="utf-8")


def lua_constants(source: str) -> dict[str, Any]:
    """The upper-case numeric constants of a Lua source: numbers, or lists of numbers."""
    found: dict[str, Any] = {}
    for line in source.splitlines():
        match = _ASSIGN.match(line)
        if not match:
            continue
        names = [n.strip() for n in match.group(1).split(",")]
        value = match.group(2)
        if value.startswith("{") and value.endswith("}"):
            items = [x.strip() for x in value[1:-1].split(",")]
            if all(_NUMBER.match(x) for x in items):
                found[names[0]] = [int(x) for x in items]
            continue
        values = [v.strip() for v in value.split(",")]
        if len(values) == len(names) and all(_NUMBER.match(v) for v in values):
            found.update(zip(names, (int(v) for v in values), strict=True))
    return found


def wait_bounds() -> list[int]:
    """room_engine.WAIT_BUCKETS as Lua's WAIT_BOUNDS writes them: all but the last ("inf")."""
    *bounded, last = room_engine.WAIT_BUCKETS
    assert last == "inf"
    return [int(bound) for bound in bounded]


# (lua file, Lua name, Python home): the home is read when the test runs.
TWINS = [
    ("_waits", "WAIT_BOUNDS", wait_bounds),
    ("_admissions", "MAX_ADMIT", lambda: far_poll.MAX_ADMIT),
    ("_cadence", "FRONT_MIN", lambda: poll_cadence.FRONT_MIN),
    ("_cadence", "FRONT_MS", lambda: poll_cadence.FRONT_MS),
    ("_cadence", "SPREAD", lambda: poll_cadence.SPREAD),
    ("_cadence", "CADENCE_CAP", lambda: poll_cadence.CADENCE_CAP_MS),
    ("_cadence", "HELD_POLL_MS", lambda: poll_cadence.HELD_POLL_MS),
    ("_expiry", "MISSED_POLLS", lambda: poll_cadence.MISSED_POLLS),
    ("_expiry", "SEEN_BOOKING_MAX", lambda: far_poll.SEEN_BOOKING_MAX_MS),
    ("_room", "DEFAULT_POLL_BUDGET", lambda: poll_cadence.DEFAULT_POLL_BUDGET),
    ("_room", "POST_OPEN_ORDER", lambda: line_blocks.POST_OPEN_KEY),
    ("_blocks", "POST_OPEN_KEY", lambda: line_blocks.POST_OPEN_KEY),
    ("_blocks", "TICKET_BLOCK", lambda: line_blocks.TICKET_BLOCK),
    ("_blocks", "POOL_BLOCK", lambda: line_blocks.POOL_BLOCK),
    ("enter", "POST_OPEN", lambda: line_blocks.POST_OPEN_KEY),
    ("_blocks", "DRAWN_SPAN", lambda: room_draw.DRAWN_SPAN),
    ("_invite", "SKIP_LANE", lambda: line_blocks.SKIP_LANE),
    ("_invite", "PRIORITY_LANE", lambda: line_blocks.PRIORITY_LANE),
]


@pytest.mark.parametrize(("script", "name", "home"), TWINS, ids=[f"{s}.{n}" for s, n, _ in TWINS])
def test_a_shared_constant_is_written_in_from_its_python_home(
    script: str, name: str, home: Any
) -> None:
    assert name not in lua_constants(lua_source(script)), f"lua/{script}.lua writes {name}"
    constants = lua_constants(lua_scripts.expand(lua_source(script)))
    assert name in constants, f"lua/{script}.lua no longer declares {name}"
    assert constants[name] == home()


def test_no_script_writes_a_shared_constant_s_value_by_hand() -> None:
    for path in sorted(LUA.glob("*.lua")):
        written = lua_constants(path.read_text(encoding="utf-8"))
        assert not set(written) & set(lua_scripts.SHARED), path.name


def test_the_room_setting_defaults_to_the_same_poll_budget() -> None:
    assert room_config.BY_API["pollBudgetPerSecond"].default == poll_cadence.DEFAULT_POLL_BUDGET


def test_the_series_codes_statuses_as_python_reads_them() -> None:
    codes = re.search(r"^local codes = \{(.*)\}$", lua_source("sample_series"), re.MULTILINE)
    assert codes is not None
    pairs = dict(re.findall(r"(\w+) = (\d+)", codes.group(1)))
    assert {k: int(v) for k, v in pairs.items()} == room_series.STATUS_CODES


def test_a_change_in_python_reaches_the_scripts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(lua_scripts.SHARED, "HELD_POLL_MS", 16_000)
    assert lua_constants(lua_scripts.expand(lua_source("_cadence")))["HELD_POLL_MS"] == 16_000
