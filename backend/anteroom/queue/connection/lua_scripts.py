"""Load the Lua scripts of ``lua/`` and register them with a Redis client.

Each operation (``lua/<name>.lua``) is one script carrying only the helper pieces it needs: its
header names them in a ``-- needs: _a, _b`` line (pieces are ``lua/_<piece>.lua``, with needs of
their own), and its keys in a ``-- KEYS: room spots …`` line (names of ``KeySpace.room_keys``).
The assembled script binds each declared key to a local (``ROOM``, ``SPOTS`` …), then the pieces
in dependency order, then the operation. redis-py reloads a script after NOSCRIPT.

A few scripts are not room operations (``STANDALONE``): their keys are not a room's fixed keys
(a room's key base, a challenge marker), so they are loaded as written, without pieces, and
their callers pass the keys their ``-- KEYS[1]:`` header documents.

What Lua shares with Python is written into every script here, from its one Python home, so
the two cannot drift (``expand``):
- a room hash field is named by its readable name (queue/rooms/room_hash.py): ``@opensAt`` becomes
  the stored name ``'oa'``; a read of several (an HMGET of ROOM bound to a local ``v``),
  ``@{status, opensAt}``, becomes the list of stored names, and ``v[@opensAt]`` its position
  in that list (``2``);
- a shared constant is named ``$NAME`` (``SHARED``: the Python value it stands for);
- a long reply is built by name, ``@ANSWER{status = 'held', ticket = t, …}``, and written as
  the array of its slots in script_replies' order ('' for a slot not named); ``reply[@ANSWER.
  pollAfterMs]`` is that slot's position;
- a record kept as one ``|``-joined string (queue/line/spot_record.RECORDS) is written by name,
  ``@SPOT{ticket = t, state = 'w', …}`` (the parts joined in the record's order, '' for a part
  not named; ``... = rest`` ends it with a rest read as below), and read by name,
  ``local @SPOT~(raw){score = score, state = 'w', ...}``: the assignment of the named parts, in
  the record's order, from one match of a pattern written here (a quoted value is matched as
  written, a part not named is skipped; ``...`` leaves the record's end open, ``... = rest``
  takes the rest from the separator after the last part named).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import redis
from redis.commands.core import Script

from anteroom.queue.connection.script_replies import REPLIES
from anteroom.queue.draw import room_draw
from anteroom.queue.line import far_poll, line_blocks, poll_cadence, spot_record
from anteroom.queue.regions import pool_order
from anteroom.queue.rooms import key_layout
from anteroom.queue.rooms.room_hash import STORED
from anteroom.resources import resource_dir

OPERATIONS = (
    "create_room",
    "update_room",
    "delete_room",
    "open_room",
    "pause_room",
    "close_room",
    "enter",
    # enter.lua's body behind a prelude (its `-- wraps: enter` line): an arrival's join.
    "join",
    "poll",
    "book_fail_open",
    "check_in_fail_open",
    "book_seen_many",
    "snapshot",
    "leave",
    "refresh",
    "revoke",
    "stats",
    "line",
    "sweep",
    "tick",
    "shift_clock",
    "set_clock",
    # A room across regions: this region's lease and summary (queue/regions/region_cell.py).
    "apply_lease",
    "region_summary",
    # Touches no key (an empty KEYS line): the draw's order keys, until the shuffle carries _draw.
    "draw_keys",
    "begin_draw",
    "set_beacon",
    "place_drawn",
    "finish_draw",
    "reroll_draw",
    "set_draw_regions",
    "set_events",
    "shuffle_prequeue",
    "issue_invites",
    "withdraw_invite",
    "invites",
    # "Tell me when it's my turn" (queue/line/parking.py).
    "park",
    "turns",
    "claim_mail",
    "mail_done",
    "redeem_return",
)

# Scripts loaded as written: the room series' sampler and refusal counter, the challenge spend,
# the first start's setup token (offered, spent).
STANDALONE = (
    "sample_series",
    "count_refusals",
    "spend_challenge",
    "offer_setup",
    "spend_setup",
    "advance_layout",
    "release_layout_lock",
    "agent_lane",
)

# The constants the scripts share with Python, by the name a script writes after ``$``.
SHARED: dict[str, int | tuple[int, ...]] = {
    "MAX_ADMIT": far_poll.MAX_ADMIT,
    "SEEN_BOOKING_MAX": far_poll.SEEN_BOOKING_MAX_MS,
    # the waits hash's fields but the last ("inf"): the bounds a wait is counted under
    "WAIT_BOUNDS": tuple(int(bound) for bound in key_layout.WAIT_BUCKETS[:-1]),
    "FRONT_MIN": poll_cadence.FRONT_MIN,
    "FRONT_MS": poll_cadence.FRONT_MS,
    "SPREAD": poll_cadence.SPREAD,
    "CADENCE_CAP": poll_cadence.CADENCE_CAP_MS,
    "HELD_POLL_MS": poll_cadence.HELD_POLL_MS,
    "MISSED_POLLS": poll_cadence.MISSED_POLLS,
    "DEFAULT_POLL_BUDGET": poll_cadence.DEFAULT_POLL_BUDGET,
    "POST_OPEN_KEY": line_blocks.POST_OPEN_KEY,
    "TICKET_BLOCK": line_blocks.TICKET_BLOCK,
    "POOL_BLOCK": line_blocks.POOL_BLOCK,
    "SKIP_LANE": line_blocks.SKIP_LANE,
    "PRIORITY_LANE": line_blocks.PRIORITY_LANE,
    "DRAWN_SPAN": room_draw.DRAWN_SPAN,
    "POOL_ARRIVAL_BASE": pool_order.POOL_ARRIVAL_BASE,
    "POOL_ARRIVAL_SCALE": pool_order.POOL_ARRIVAL_SCALE,
}

_NEEDS = re.compile(r"^-- needs: *(.*)$", re.MULTILINE)
# In order of precedence: a read of several fields bound to a local, a position in such a
# read, a field's stored name, a shared constant. ``@``/``$`` after a word character or a
# quote is left alone (``'q@ms;'`` in a comment, ``%d+$`` in a pattern).
_SHARED = re.compile(
    r"(?P<bind>local (?P<var>\w+) = redis\.call\('HMGET', ROOM, )@\{(?P<list>[^}]*)\}"
    r"|@(?P<reply>[A-Z]+)\.(?P<slot>\w+)"
    r"|(?P<of>\w+)\[@(?P<at>\w+)\]"
    r"|(?<![\w'\"])@(?P<field>\w+)"
    r"|(?<![\w'\"%])\$(?P<constant>[A-Z][A-Z0-9_]*)"
)


def _stored(name: str, where: str) -> str:
    if name not in STORED:
        raise ValueError(
            f"{where}: @{name} is no field of the room hash (queue/rooms/room_hash.py)"
        )
    return STORED[name]


def _lua_value(value: int | tuple[int, ...]) -> str:
    if isinstance(value, tuple):
        return "{" + ", ".join(str(int(v)) for v in value) + "}"
    return str(int(value))


_REPLY = re.compile(r"@([A-Z][A-Z_]*)\{")
_MATCH = re.compile(r"@([A-Z][A-Z_]*)~\(")
_LITERAL = re.compile(r"""^'([^'\\]*)'$|^"([^"\\]*)"$""")
_MAGIC = re.compile(r"([\^$()%.\[\]*+\-?])")
OPEN = "..."  # a record's spec: the parts after the last named are not read (or are `rest`)
_ITEM = re.compile(r"^\s*(\w+)\s*=(?!=)\s*(.*?)\s*$", re.DOTALL)


def _closing(text: str, start: int) -> int:
    """Index of the brace closing the one before ``start`` (strings and nesting skipped)."""
    depth, quote, i = 0, "", start
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "({[":
            depth += 1
        elif char in ")}]":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    raise ValueError("unclosed reply")


def _items(body: str) -> list[str]:
    """The top-level comma-separated items of a table constructor's body."""
    items, depth, quote, current = [], 0, "", ""
    for char in body:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "({[":
            depth += 1
        elif char in ")}]":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        current += char
    return [item for item in [*items, current] if item.strip()]


def _spec(name: str, body: str, where: str, form: str) -> dict[str, str]:
    """The ``part = value`` items of a record's spec, checked against its parts."""
    given: dict[str, str] = {}
    for item in _items(body):
        if item.strip() == OPEN:
            given[OPEN] = ""
            continue
        rest = item.strip().startswith(OPEN)
        named = _ITEM.match(item.replace(OPEN, "_rest_", 1) if rest else item)
        if rest and named:
            given[OPEN] = " ".join(named[2].split())
            continue
        if not named or named[1] not in spot_record.RECORDS[name]:
            raise ValueError(f"{where}: {form}{{{item.strip()}}} names no part of {name}")
        given[named[1]] = " ".join(named[2].split())
    return given


def _lua_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _record(name: str, body: str, where: str) -> str:
    """``@NAME{part = expr, …}``: one concatenation of the parts in the record's order."""
    given = _spec(name, body, where, f"@{name}")
    parts = spot_record.RECORDS[name]
    last = max((parts.index(p) for p in given if p != OPEN), default=len(parts) - 1)
    upto = parts[: last + 1] if OPEN in given else parts
    pieces: list[tuple[bool, str]] = []  # (literal, text)
    for i, part in enumerate(upto):
        if i:
            pieces.append((True, "|"))
        value = given.get(part, "''")
        literal = _LITERAL.match(value)
        if literal:
            pieces.append((True, literal[1] if literal[1] is not None else literal[2]))
        else:
            pieces.append((False, f"({value})"))
    if given.get(OPEN):
        pieces.append((False, f"({given[OPEN]})"))
    merged: list[tuple[bool, str]] = []
    for literal, piece in pieces:
        if literal and merged and merged[-1][0]:
            merged[-1] = (True, merged[-1][1] + piece)
        else:
            merged.append((literal, piece))
    if len(merged) == 1 and not merged[0][0]:
        return f"('' .. {merged[0][1]})"
    return "(" + " .. ".join(_lua_string(p) if lit else p for lit, p in merged) + ")"


def _record_reads(text: str, where: str) -> str:
    """``@NAME~(raw){part = var, …}``: the named vars, in the record's order, = one match."""
    while found := _MATCH.search(text):
        name, close = found[1], _closing(text, found.end())
        if name not in spot_record.RECORDS:
            raise ValueError(f"{where}: @{name}~(…) is no record of spot_record.RECORDS")
        subject = text[found.end() : close].strip()
        if text[close + 1 : close + 2] != "{":
            raise ValueError(f"{where}: @{name}~({subject}) wants its parts in {{…}}")
        end = _closing(text, close + 2)
        given = _spec(name, text[close + 2 : end], where, f"@{name}~")
        parts = spot_record.RECORDS[name]
        named = [parts.index(p) for p in given if p != OPEN]
        upto = parts[: max(named) + 1] if OPEN in given and named else parts
        pattern, names = "^", []
        for i, part in enumerate(upto):
            pattern += "|" if i else ""
            value = given.get(part)
            literal = _LITERAL.match(value) if value else None
            if value is None:
                pattern += "[^|]*"
            elif literal:
                pattern += _MAGIC.sub(r"%\1", literal[1] if literal[1] is not None else literal[2])
            else:
                if not re.fullmatch(r"[A-Za-z_]\w*", value):
                    raise ValueError(f"{where}: @{name}~{{{part} = {value}}} is no local's name")
                pattern += "([^|]*)"
                names.append(value)
        if given.get(OPEN):
            pattern += "(|.*)$"
            names.append(given[OPEN])
        elif OPEN in given and len(upto) < len(parts):
            pattern += "|"
        else:
            pattern += "$"
        if not names:
            raise ValueError(f"{where}: @{name}~({subject}) reads no part")
        read = f"{', '.join(names)} = ({subject}):match({_lua_string(pattern)})"
        text = text[: found.start()] + read + text[end + 1 :]
    return text


def _replies(text: str, where: str) -> str:
    """``@NAME{slot = expr, …}`` written as the array of NAME's slots (``''`` where not named)."""
    text = _record_reads(text, where)
    while found := _REPLY.search(text):
        name, end = found[1], _closing(text, found.end())
        if name in spot_record.RECORDS:
            record = _record(name, text[found.end() : end], where)
            text = text[: found.start()] + record + text[end + 1 :]
            continue
        if name not in REPLIES:
            raise ValueError(f"{where}: @{name}{{…}} is no reply of script_replies.REPLIES")
        given: dict[str, str] = {}
        for item in _items(text[found.end() : end]):
            named = _ITEM.match(item)
            if not named or named[1] not in REPLIES[name]:
                raise ValueError(f"{where}: @{name}{{{item.strip()}}} names no slot of it")
            given[named[1]] = " ".join(named[2].split())
        values = ", ".join(given.get(slot, "''") for slot in REPLIES[name])
        text = text[: found.start()] + "{" + values + "}" + text[end + 1 :]
    return text


def expand(text: str, where: str = "lua") -> str:
    """``text`` with the room hash's fields, the shared constants and the replies' slots
    written in (see above)."""
    reads: dict[str, list[str]] = {}  # a local bound to a read of several fields: their names

    def one(match: re.Match[str]) -> str:
        if match["reply"]:
            slots = REPLIES.get(match["reply"], ())
            if match["slot"] not in slots:
                raise ValueError(f"{where}: @{match['reply']}.{match['slot']} is no reply slot")
            return str(slots.index(match["slot"]) + 1)
        if match["var"]:
            names = [n.strip() for n in match["list"].split(",") if n.strip()]
            reads[match["var"]] = names
            fields = ", ".join(f"'{_stored(n, where)}'" for n in names)
            return match["bind"] + fields
        if match["of"]:
            names = reads.get(match["of"], [])
            if match["at"] not in names:
                raise ValueError(f"{where}: {match['of']}[@{match['at']}] is not in its read")
            return f"{match['of']}[{names.index(match['at']) + 1}]"
        if match["field"]:
            return f"'{_stored(match['field'], where)}'"
        if match["constant"] not in SHARED:
            raise ValueError(f"{where}: ${match['constant']} is no shared constant")
        return _lua_value(SHARED[match["constant"]])

    return _SHARED.sub(one, _replies(text, where))


_KEYS = re.compile(r"^-- KEYS: *(.*)$", re.MULTILINE)
_WRAPS = re.compile(r"^-- wraps: *(\w+)", re.MULTILINE)


@dataclass(frozen=True)
class Operation:
    """An assembled script: its full source and the room keys it declares, in KEYS order."""

    source: str
    keys: tuple[str, ...]


def _read(name: str) -> str:
    return (resource_dir("lua") / f"{name}.lua").read_text(encoding="utf-8")


def _expanded(name: str) -> str:
    # Not cached apart: operation() is, and the benchmarks swap _read to assemble another tree.
    return expand(_read(name), f"lua/{name}.lua")


def _needs(text: str) -> list[str]:
    found = _NEEDS.search(text)
    return [n.strip() for n in found.group(1).split(",") if n.strip()] if found else []


def _pieces(name: str) -> list[str]:
    """The pieces ``name`` needs, each after its own needs, each once."""
    ordered: list[str] = []

    def visit(piece: str, path: tuple[str, ...]) -> None:
        if piece in ordered:
            return
        if piece in path:
            raise ValueError(f"lua pieces need each other: {' -> '.join((*path, piece))}")
        for need in _needs(_read(piece)):
            visit(need, (*path, piece))
        ordered.append(piece)

    for need in _needs(_read(name)):
        visit(need, (name,))
    return ordered


@cache
def operation(name: str) -> Operation:
    """Operation ``name`` assembled: key locals, needed pieces, then its own text.

    A script that ``wraps`` another operation carries that one's pieces, and its body as the
    local function ``enter_op`` (named for the one wrapped today), which its own text calls.
    """
    body = _read(name)
    wrapped = _WRAPS.search(body)
    inner = wrapped.group(1) if wrapped else name
    declared = _KEYS.search(body)
    if not declared:
        raise ValueError(f"lua/{name}.lua has no '-- KEYS:' header line")
    keys = tuple(declared.group(1).split())
    bind = ", ".join(key.upper() for key in keys)
    slots = ", ".join(f"KEYS[{i}]" for i in range(1, len(keys) + 1))
    parts = [f"local {bind} = {slots}"] if keys else []
    parts += [f"-- {piece}.lua\n{_expanded(piece)}" for piece in _pieces(inner)]
    if wrapped:
        parts.append(f"-- {inner}.lua\nlocal function {inner}_op()\n{_expanded(inner)}\nend")
    parts.append(f"-- {name}.lua\n{expand(body, f'lua/{name}.lua')}")
    return Operation("\n".join(parts), keys)


def source(name: str) -> str:
    """Full source of operation ``name``."""
    return operation(name).source


def register(client: redis.Redis) -> dict[str, Script]:
    """All operation scripts, registered on ``client``."""
    return {name: client.register_script(source(name)) for name in OPERATIONS}


@cache
def standalone(name: str) -> str:
    """Source of standalone script ``name``: the pieces its ``-- needs:`` line names, then
    ``lua/<name>.lua`` as written, shared names written in."""
    if name not in STANDALONE:
        raise ValueError(f"not a standalone script: {name!r}")
    pieces = [f"-- {piece}.lua\n{_expanded(piece)}" for piece in _pieces(name)]
    return "\n".join([*pieces, f"-- {name}.lua\n{_expanded(name)}"])


def register_standalone(client: redis.Redis, name: str) -> Script:
    """Standalone script ``name``, registered on ``client``."""
    return client.register_script(standalone(name))
