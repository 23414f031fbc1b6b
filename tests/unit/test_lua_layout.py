"""Every Lua script lives in lua/, is loaded through queue/connection/lua_scripts.py and says what
it takes.

A script written inline in Python escapes the header rules, the constant and room hash checks
and the packaging of lua/; this test fails on one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from anteroom.queue.connection import lua_scripts
from anteroom.resources import resource_dir

LUA = resource_dir("lua")
PACKAGE = Path(lua_scripts.__file__).resolve().parents[1]


def test_no_lua_is_written_inside_python() -> None:
    inline = [p.name for p in PACKAGE.rglob("*.py") if "redis.call(" in p.read_text("utf-8")]
    assert inline == []


def test_every_script_in_lua_is_loaded_as_an_operation_or_standalone() -> None:
    scripts = {p.stem for p in LUA.glob("*.lua") if not p.stem.startswith("_")}
    loaded = [*lua_scripts.OPERATIONS, *lua_scripts.STANDALONE]
    assert sorted(loaded) == sorted(scripts)


@pytest.mark.parametrize("name", lua_scripts.STANDALONE)
def test_a_standalone_script_documents_its_keys_args_and_reply(name: str) -> None:
    header = lua_scripts.standalone(name)
    for part in ("KEYS[1]:", "ARGV:", "Reply:"):
        assert re.search(rf"^-- {re.escape(part)}", header, re.MULTILINE), (name, part)


def test_an_operation_is_not_loaded_as_standalone() -> None:
    with pytest.raises(ValueError):
        lua_scripts.standalone("enter")
