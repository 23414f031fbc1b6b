"""The long replies (a queue answer, a room's snapshot) are built by slot name in Lua and read by
the same names in Python: the assembler writes the array in script_replies' order, so a slot
added, moved or misspelt on either side fails at assembly, not as a wrong field at run time."""

from __future__ import annotations

import re

import pytest

from anteroom.queue.connection import lua_scripts
from anteroom.queue.connection.script_replies import ANSWER, ANSWER_AT, queue_answer
from anteroom.resources import resource_dir

LUA = resource_dir("lua")


def test_a_reply_built_by_name_is_written_in_slot_order() -> None:
    lua = "return @ANSWER{ticket = f(a, {1, 2}), status = 'held', odds = 'x, y'}"
    expanded = lua_scripts.expand(lua)
    values = ["''"] * len(ANSWER)
    values[ANSWER_AT.status], values[ANSWER_AT.ticket] = "'held'", "f(a, {1, 2})"
    values[ANSWER_AT.odds] = "'x, y'"
    assert expanded == "return {" + ", ".join(values) + "}"
    assert lua_scripts.expand("reply[@ANSWER.keptUntil]") == f"reply[{ANSWER_AT.keptUntil + 1}]"


def test_a_slot_the_reply_has_not_is_refused() -> None:
    with pytest.raises(ValueError, match="names no slot"):
        lua_scripts.expand("return @ANSWER{status = 'held', positon = 3}")
    with pytest.raises(ValueError, match="is no reply slot"):
        lua_scripts.expand("reply[@ANSWER.pollAfter]")
    with pytest.raises(ValueError, match="is no reply"):
        lua_scripts.expand("return @ANSWERS{status = 'held'}")


def test_no_script_builds_a_queue_answer_by_position() -> None:
    for path in sorted(LUA.glob("*.lua")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"return \{'(waiting|held|admitted|idle)'", text), path.name
        assert not re.search(r"reply\[\d+\]", text), path.name


def test_a_reply_decodes_by_its_slot_names() -> None:
    raw: list[object] = [""] * len(ANSWER)
    given = {"status": "waiting", "ticket": 7, "position": -1, "eta": -1, "opensAt": 0,
             "pollAfterMs": 2000, "roomStatus": "open", "generation": 1, "admittedAt": 0,
             "expiresAt": 0, "dealNumber": 0, "score": 10, "now": 5, "orderKey": "9",
             "keptUntil": "99", "odds": "0.25"}  # fmt: skip
    for name, value in given.items():
        raw[getattr(ANSWER_AT, name)] = value
    answer, now = queue_answer(raw)
    assert (answer.ticket, answer.position) == (7, None)
    assert (answer.order_key, answer.kept_until_ms) == (9, 99)
    assert (answer.odds, answer.poll_after_ms, now) == (0.25, 2000, 5)
