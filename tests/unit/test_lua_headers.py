"""Each Lua script's header says what it uses: the pieces it calls and the keys it touches.

A script is assembled from its ``-- needs:`` pieces, resolved transitively
(queue/connection/lua_scripts.py),
so a script calling a helper of a piece it does not name still runs, until that piece's own needs
change and the helper silently becomes a nil global. And Redis (a Cluster above all) may only be
asked for keys a script was passed: a key built from the room's base, or a key local the header
does not bind, is touched behind the caller's back. These tests read the scripts as
lua_scripts.py does and fail when:
- a script or piece refers to a top-level name (helper or constant) of a piece it does not name
  in its own ``-- needs:`` line (direct, not transitive);
- an operation, with every piece it carries, touches a room key its ``-- KEYS:`` line does not
  declare (a key local such as ``WAITS``, or a key built as ``BASE .. 'name'``).
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from anteroom.queue.connection import lua_scripts
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.resources import resource_dir

LUA = resource_dir("lua")
PIECES = sorted(p.stem for p in LUA.glob("_*.lua"))
# Every room key a script may be passed, by the local lua_scripts binds it to (ROOM, SPOTS …).
ROOM_KEYS = {name.upper(): name for name in KeySpace().room_keys("r")}
# Held buckets `b:<score>` cannot be passed one by one: their scores are listed in `bks`, and
# declaring `bks` is what lets a script reach them (lua/_bucket.lua).
BUILT_UNDER = {"b:": "bks"}

_COMMENT = re.compile(r"--\[(=*)\[.*?\]\1\]|--[^\n]*", re.DOTALL)
_STRING = re.compile(r"'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"")
_LONG_STRING = re.compile(r"\[(=*)\[.*?\]\1\]", re.DOTALL)
_TOP_FUNCTION = re.compile(r"^local function ([A-Za-z_]\w*)", re.MULTILINE)
_TOP_LOCALS = re.compile(r"^local ([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=", re.MULTILINE)
# A name not after `.` or `:` (a field or method), nor a table field being set (`{name = …}`).
_NAME = re.compile(r"(?<![.:\w])([A-Za-z_]\w*)\b(?!\s*=[^=])")
_LOCAL_NAMES = re.compile(r"\blocal\s+(?:function\s+)?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)")
_PARAMS = re.compile(r"\bfunction\b[^(]*\(([^)]*)\)")
_FOR = re.compile(r"\bfor\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?:=|in\b)")
_BUILT = re.compile(r"\bBASE\s*\.\.\s*'([^']*)'")


def _code(text: str) -> str:
    """The text without comments and with string literals emptied (their words are no names)."""
    text = _COMMENT.sub("", text)
    text = _LONG_STRING.sub("''", text)
    return _STRING.sub("''", text)


def _names(listed: str) -> set[str]:
    return {n.strip() for n in listed.split(",") if n.strip()}


@cache
def text(name: str) -> str:
    return lua_scripts._expanded(name)  # as assembled: shared names and constants written in


@cache
def defined(piece: str) -> frozenset[str]:
    """The top-level names a piece gives the scripts that carry it."""
    code = _code(text(piece))
    names = set(_TOP_FUNCTION.findall(code))
    for listed in _TOP_LOCALS.findall(code):
        names |= _names(listed)
    return frozenset(names)


def own_locals(code: str) -> set[str]:
    """Every name the code declares itself (locals, parameters, loop variables), at any depth."""
    names: set[str] = set()
    for pattern in (_LOCAL_NAMES, _PARAMS, _FOR):
        for listed in pattern.findall(code):
            names |= _names(listed.replace("...", ""))
    return names


def used_pieces(name: str) -> set[str]:
    """Pieces whose top-level names ``name`` refers to (a name it declares itself aside)."""
    code = _code(text(name))
    referred = set(_NAME.findall(code)) - own_locals(code)
    return {piece for piece in PIECES if piece != name and referred & defined(piece)}


def touched_keys(name: str) -> set[str]:
    """Room keys ``name``'s own text touches: key locals it refers to, keys built from BASE."""
    code = _code(text(name))
    keys = {ROOM_KEYS[n] for n in set(_NAME.findall(code)) & ROOM_KEYS.keys()}
    for built in _BUILT.findall(text(name)):
        keys.add(next((k for p, k in BUILT_UNDER.items() if built.startswith(p)), built))
    return keys


def test_the_checker_sees_a_call_to_a_piece_not_named() -> None:
    # The rule itself, on a script written for it: a helper of _base called without naming it.
    code = _code("local now = room_clock(0, 0)\nreturn err('RoomNotFound') -- fmt(x)\n")
    referred = set(_NAME.findall(code)) - own_locals(code)
    assert referred & defined("_base") == {"err"}
    assert referred & defined("_clock") == {"room_clock"}
    assert "now" not in referred  # its own local, not a piece's


def test_each_top_level_name_is_given_by_one_piece() -> None:
    # Two pieces giving one name would make which one a script gets depend on assembly order.
    owners: dict[str, list[str]] = {}
    for piece in PIECES:
        for name in defined(piece):
            owners.setdefault(name, []).append(piece)
    assert {n: o for n, o in owners.items() if len(o) > 1} == {}


@pytest.mark.parametrize("name", [*PIECES, *lua_scripts.OPERATIONS])
def test_a_script_names_every_piece_it_uses_in_its_own_needs(name: str) -> None:
    missing = used_pieces(name) - set(lua_scripts._needs(text(name)))
    assert missing == set(), f"lua/{name}.lua uses {sorted(missing)} without naming them"


@pytest.mark.parametrize("name", lua_scripts.OPERATIONS)
def test_an_operation_declares_every_key_it_and_its_pieces_touch(name: str) -> None:
    declared = set(lua_scripts.operation(name).keys)
    carried = [name, *lua_scripts._pieces(name)]
    undeclared = {piece: touched_keys(piece) - declared for piece in carried}
    assert {p: k for p, k in undeclared.items() if k} == {}, f"lua/{name}.lua KEYS"


@pytest.mark.parametrize("name", lua_scripts.OPERATIONS)
def test_an_operation_declares_only_room_keys(name: str) -> None:
    assert set(lua_scripts.operation(name).keys) <= set(ROOM_KEYS.values())


@pytest.mark.parametrize("name", lua_scripts.STANDALONE)
def test_a_standalone_script_carries_the_pieces_it_uses_and_they_touch_no_key(name: str) -> None:
    # Its keys are built from what its caller passes, not a room's fixed keys: a piece that
    # touches a room key would find its local unbound there.
    assert used_pieces(name) <= set(lua_scripts._needs(text(name)))
    pieces = lua_scripts._pieces(name)
    assert {p: touched_keys(p) for p in pieces if touched_keys(p)} == {}
    source = lua_scripts.standalone(name)
    assert all(f"-- {piece}.lua" in source for piece in pieces)


def test_enter_finds_the_address_counters_after_its_declared_keys() -> None:
    # The engine passes the per-address counters after the declared keys: a key added to the
    # header moves them, and enter.lua must read them from there.
    offset = re.search(r"KEYS\[(\d+) \+ i\]", _code(text("enter")))
    assert offset and int(offset.group(1)) == len(lua_scripts.operation("enter").keys)
    # join passes enter's keys, then enter's counters, then its own: it counts past both.
    first = re.search(r"local first = (\d+) \+ n", _code(text("join")))
    assert first and int(first.group(1)) == len(lua_scripts.operation("join").keys)
