"""The spot record has one home (queue/line/spot_record.py): the assembler writes both the
scripts' writer (``@SPOT{…}``) and their readers (``@SPOT~(raw){…}``) from it, and Python
reads it through ``spot_record.parse``. The stored strings are the contract a previous release
reads during a rolling upgrade, so they are spelled out here as it stores them.
"""

from __future__ import annotations

import pytest
import redis

from anteroom.queue.connection import lua_scripts
from anteroom.queue.line import spot_record
from anteroom.resources import resource_dir

LUA = resource_dir("lua")

# As 0.2 writes them (and 0.1.0 reads them): waiting, admitted; and 0.1.0's older layout with
# the poll limit's window|count after `seen`.
WAITING = "12|3|w|5000|jti1|net1|4000||"
ADMITTED = "12|3|a|5000|jti1|net1|6000|9000|7"
OLD_WAITING = "12|3|w|5000|5|1|jti1|net1|4000||"

# The pieces that write and read a record, assembled, then a probe: each record through
# parse_spot, and written back through spot_record.
PROBE = """
local out = {}
for i, raw in ipairs(ARGV) do
  local spot = parse_spot(raw)
  out[i] = spot_record(spot)
end
return out
"""


def pieces(*names: str) -> str:
    return "\n".join(lua_scripts.expand((LUA / f"{n}.lua").read_text(), n) for n in names)


def test_the_scripts_write_back_what_they_read_in_the_stored_format(
    redis_client: redis.Redis,
) -> None:
    script = pieces("_base", "_record") + "\n" + spot_writer() + PROBE
    written = redis_client.eval(script, 0, WAITING, ADMITTED, OLD_WAITING)
    # an old record is read alike and written in today's layout
    assert written == [WAITING, ADMITTED, WAITING]


def spot_writer() -> str:
    """spot_record of _spot.lua alone (its other functions need the room's keys)."""
    text = (LUA / "_spot.lua").read_text()
    start = text.index("local function spot_record")
    return lua_scripts.expand(text[start : text.index("\nend\n", start) + 5], "_spot.lua")


def test_python_reads_both_layouts_by_name() -> None:
    assert spot_record.parse(ADMITTED) == {
        "ticket": "12",
        "score": "3",
        "state": "a",
        "seen": "5000",
        "sessionJti": "jti1",
        "networkTag": "net1",
        "since": "6000",
        "expires": "9000",
        "dealNumber": "7",
    }
    assert spot_record.parse(OLD_WAITING) == spot_record.parse(WAITING)
    with pytest.raises(ValueError, match="not a spot record"):
        spot_record.parse("12|3|w")


def test_a_read_is_written_from_the_record_s_order(redis_client: redis.Redis) -> None:
    """A read names parts in any order; the assignment and the pattern follow the record's."""
    text = "local @SPOT~(raw){seen = seen, state = 'w', ticket = ticket, ... = rest}"
    assert lua_scripts.expand(text) == (
        "local ticket, seen, rest = (raw):match('^([^|]*)|[^|]*|w|([^|]*)(|.*)$')"
    )
    probe = lua_scripts.expand(
        "local raw = ARGV[1]\n"
        "local @SPOT~(raw){seen = seen, score = score, state = 'w', ticket = ticket, ... = rest}\n"
        "if not ticket then return 'none' end\n"
        "return @SPOT{seen = '1', ticket = ticket, score = score, state = 'w', ... = rest}"
    )
    assert redis_client.eval(probe, 0, WAITING) == "12|3|w|1|jti1|net1|4000||"
    assert redis_client.eval(probe, 0, ADMITTED) == "none"  # 'w' is matched as written
    # open at the end: only the parts up to the last named are read
    assert lua_scripts.expand("@SPOT~(r){score = s, ...}") == "s = (r):match('^[^|]*|([^|]*)|')"
    # closed: the whole record, unnamed parts skipped and parts named '' matched empty
    closed = lua_scripts.expand("@SPOT~(r){ticket = t, expires = ''}")
    assert closed == "t = (r):match('^([^|]*)|[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|[^|]*||[^|]*$')"


def test_an_unknown_part_or_record_is_refused_at_assembly() -> None:
    with pytest.raises(ValueError, match="names no part of SPOT"):
        lua_scripts.expand("@SPOT{tickett = 1}")
    with pytest.raises(ValueError, match="names no part of SPOT"):
        lua_scripts.expand("local @SPOT~(raw){window = w}")  # only the old layout has it
    with pytest.raises(ValueError, match="no local's name"):
        lua_scripts.expand("local @SPOT~(raw){score = tonumber(x)}")
    with pytest.raises(ValueError, match="is no record"):
        lua_scripts.expand("@NOPE~(raw){score = s}")
