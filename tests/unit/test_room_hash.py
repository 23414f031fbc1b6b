"""Every field of the room hash that the scripts or Python read or write is declared in
queue/rooms/room_hash.py, so the table is the whole list of what a room stores.

The scripts name a field by its readable name (``@opensAt``) and the assembler writes in its
stored name (queue/connection/lua_scripts.py), so no script spells a stored name or a field's
position by
hand. The test reads every HMGET/HGET/HSET/HINCRBY/HDEL on ROOM in lua/*.lua as assembled, and
every such call on ``keys.room(...)`` in the Python package, and fails on a stored name the
table does not declare (a field added without saying what it is).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from anteroom.queue.connection import lua_scripts
from anteroom.queue.line import room_engine
from anteroom.queue.rooms import room_config, room_hash
from anteroom.queue.series import room_series
from anteroom.resources import resource_dir

LUA = resource_dir("lua")
PACKAGE = Path(room_hash.__file__).resolve().parents[1]
_LUA_CALL = re.compile(r"redis\.call\('(HMGET|HGET|HSET|HINCRBY|HDEL|HSETNX|HEXISTS)', ROOM,")
_PY_CALL = re.compile(r"\.(hmget|hget|hset|hincrby|hdel|hsetnx)\(\s*self\.keys\.room\(")
_STRING = re.compile(r"""^(['"])(\w*)\1$""")
# Field names a script passes as a variable, each checked below on its own.
DYNAMIC = {
    ("_purge", "HGET", "cursor_field"),  # purge_revocations' callers name it
    ("_purge", "HSET", "cursor_field"),
    ("_room", "HSET", "unpack(args)"),  # save_room: the COUNTERS table of _room.lua
    ("update_room", "HSET", "unpack(ARGV)"),  # room_config's stored names
    ("create_room", "HSET", "unpack(ARGV)"),
    ("sample_series", "HMGET", "unpack(fields)"),  # room_series.COUNTERS, LATER_COUNTERS
}


def call_arguments(text: str, start: int) -> list[str]:
    """The comma-separated arguments from ``start`` to the call's closing parenthesis."""
    depth, args, current = 0, [], ""
    for char in text[start:]:
        if char in "({":
            depth += 1
        elif char in ")}":
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            args.append(current.strip())
            current = ""
        else:
            current += char
    args.append(current.strip())
    return [a for a in args if a]


def named_fields(command: str, args: list[str]) -> list[str]:
    """The arguments of ``command`` that name fields (HSET: every other one, from the first)."""
    if command.upper() in ("HSET", "HSETNX"):
        fields = []
        for i, arg in enumerate(args):
            if arg.startswith("unpack("):  # the pairs go on from a table
                fields.append(arg)
                break
            if i % 2 == 0:
                fields.append(arg)
        return fields
    if command.upper() == "HINCRBY":
        return args[:1]
    return args


def assembled(path: Path) -> str:
    """A script or piece as the assembler writes it into a script (fields' stored names in)."""
    return lua_scripts.expand(path.read_text(encoding="utf-8"), path.name)


def lua_fields(
    read: Callable[[Path], str] = assembled,
) -> tuple[set[tuple[str, str]], set[tuple[str, str, str]]]:
    """(literal (script, field) uses, dynamic (script, command, expression) uses) in lua/."""
    literal, dynamic = set(), set()
    for path in sorted(LUA.glob("*.lua")):
        text = read(path)
        for match in _LUA_CALL.finditer(text):
            for arg in named_fields(match.group(1), call_arguments(text, match.end())):
                found = _STRING.match(arg)
                if found:
                    literal.add((path.stem, found.group(2)))
                else:
                    dynamic.add((path.stem, match.group(1), arg))
    return literal, dynamic


def test_every_field_the_scripts_name_is_declared() -> None:
    literal, dynamic = lua_fields()
    assert len(literal) > 50  # the parser still finds the scripts' fields
    undeclared = sorted((s, f) for s, f in literal if f not in room_hash.STORED_NAMES)
    assert undeclared == [], "declare these in queue/rooms/room_hash.py"
    assert dynamic == DYNAMIC, "a script names a room field in a variable: check it here"


def test_no_script_spells_a_stored_name_or_a_position_by_hand() -> None:
    literal, _ = lua_fields(lambda path: path.read_text(encoding="utf-8"))
    assert sorted(literal) == [], "name these fields as @readableName"
    for path in sorted(LUA.glob("*.lua")):
        text = path.read_text(encoding="utf-8")
        reads = re.findall(r"redis\.call\('HMGET', ROOM, *(@\{|unpack\(|.)", text)
        assert set(reads) <= {"@{", "unpack("}, f"{path.name}: a read of fields by position"


def test_an_unknown_field_or_one_outside_its_read_is_refused_at_assembly() -> None:
    with pytest.raises(ValueError, match="@opensAtt is no field"):
        lua_scripts.expand("redis.call('HGET', ROOM, @opensAtt)")
    read = "local v = redis.call('HMGET', ROOM, @{status, opensAt})\n"
    assert lua_scripts.expand(read + "return v[@opensAt]").endswith("return v[2]")
    assert "'st', 'oa'" in lua_scripts.expand(read)
    with pytest.raises(ValueError, match=r"v\[@seed\] is not in its read"):
        lua_scripts.expand(read + "return v[@seed]")
    with pytest.raises(ValueError, match=r"\$NO_SUCH is no shared constant"):
        lua_scripts.expand("local X = $NO_SUCH")


def test_fields_the_scripts_pass_on_are_declared() -> None:
    purge = (LUA / "_purge.lua").read_text(encoding="utf-8")
    assert "local function purge_revocations(cursor_field" in purge
    cursors = set()
    for path in LUA.glob("*.lua"):
        cursors |= set(re.findall(r"purge_revocations\('(\w+)'", assembled(path)))
    assert cursors == {room_hash.stored("sweepPurgeCursor"), room_hash.stored("revokePurgeCursor")}
    room = assembled(LUA / "_room.lua")
    saved = re.findall(r"\{'\w+', '(\w+)'\}", room[room.index("local COUNTERS") :])
    assert saved and set(saved) <= room_hash.STORED_NAMES


def test_every_field_python_names_is_declared() -> None:
    used: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in _PY_CALL.finditer(text):
            key_end = text.index(")", match.end()) + 1  # past keys.room(...)
            for arg in named_fields(match.group(1), call_arguments(text, key_end)):
                found = _STRING.match(arg)
                if found:
                    used.add((path.name, found.group(2)))
    assert sorted((p, f) for p, f in used if f not in room_hash.STORED_NAMES) == []
    named = [f.stored for f in room_config.FIELDS]
    named += [
        *room_engine.COUNTERS,
        *room_series.COUNTERS,
        *room_series.LATER_COUNTERS,
        *room_series.WEB_REFUSALS,
    ]
    assert set(named) <= room_hash.STORED_NAMES


def test_each_field_is_declared_once() -> None:
    names = [f.name for f in room_hash.FIELDS]
    stored = [f.stored for f in room_hash.FIELDS]
    assert len(set(names)) == len(names) and len(set(stored)) == len(stored)
    assert all(f.meaning for f in room_hash.FIELDS)


def test_an_undeclared_field_is_seen() -> None:
    text = "redis.call('HSET', ROOM, 'st', 'idle', 'zzz', 1)"
    match = _LUA_CALL.search(text)
    assert match is not None
    fields = named_fields("HSET", call_arguments(text, match.end()))
    assert fields == ["'st'", "'zzz'"]
    assert "zzz" not in room_hash.STORED_NAMES


# A reply of this many slots or more is built by name (@NAME{…}, script_replies.REPLIES).
LONG_REPLY = 5


def positional_replies(text: str) -> list[str]:
    """The array literals of ``text`` returned with LONG_REPLY items or more, none named."""
    found = []
    for match in re.finditer(r"return \{", text):
        items = call_arguments(text, match.end())
        if len(items) >= LONG_REPLY and not any(re.match(r"^\w+ *=[^=]", i) for i in items):
            found.append(", ".join(items))
    return found


def test_no_script_returns_a_long_reply_by_position() -> None:
    """A long reply is written by slot name and decoded by the same names, so Lua and Python
    cannot disagree on a position (stats.lua, tick.lua, the queue answer, the snapshot)."""
    offenders = {
        path.name: found
        for path in sorted(LUA.glob("*.lua"))
        if (found := positional_replies(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "build these with @NAME{slot = …} (script_replies.REPLIES)"
    assert positional_replies("return {1, fmt(now), dealt, swept, due}") != []
    assert positional_replies("return {ran = 1, now = t, a = 1, b = 2, c = 3}") == []
    assert positional_replies("return {'ERR', code, retry or 0}") == []  # short: by header


# A record's parts at places written by hand: two or more parts joined with '|' around an
# expression, a table of parts concatenated with '|', a pattern reading two parts or more, a
# part read by its index.
_BY_PLACE = re.compile(
    r"\.\. *'\|\|+'"
    r"|\.\. *'\|' *\.\.[^\n]*\.\. *'\|' *\.\."
    r"|table\.concat\(\{[^}]*\}, *'\|'\)"
    r"|\[\^\|\]\*\)?\|\(?\[\^\|\]\*"
    r"|\bf\[\d+\]"
)


def test_no_script_writes_or_reads_a_record_of_parts_by_place() -> None:
    """A record kept in one string is written and read by part name through one list: `evo`
    through _event_state.lua's EVENT_STATE, a spot through queue/line/spot_record.py (the
    assembler writes ``@SPOT{…}`` and ``@SPOT~(raw){…}``), not as parts at places by hand."""
    offenders = [
        f"{path.name}: {m[0]}"
        for path in sorted(LUA.glob("*.lua"))
        for m in _BY_PLACE.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert _BY_PLACE.search("return fmt(b) .. '||||||' .. prequeue")
    assert _BY_PLACE.search("table.concat({fmt(b), id, mode}, '|')")
    assert _BY_PLACE.search("return {boundary = tonumber(f[1]) or 0}")
    assert _BY_PLACE.search("head .. 'a' .. middle .. at .. '|' .. expires .. '|' .. deal")
    assert _BY_PLACE.search("raw:match('^[^|]*|([^|]*)|')")
    assert _BY_PLACE.search("raw:match('^(([^|]*)|[^|]*|w|)([^|]*)(|.*)$')")
    assert not _BY_PLACE.search("redis.call('HEXISTS', INV, invite.id .. '|' .. vid)")
