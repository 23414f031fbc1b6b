"""Load the Lua scripts of ``lua/`` and register them with a Redis client.

Each operation (``lua/<name>.lua``) is one script carrying only the helper pieces it needs: its
header names them in a ``-- needs: _a, _b`` line (pieces are ``lua/_<piece>.lua``, with needs of
their own), and its keys in a ``-- KEYS: room spots …`` line (names of ``KeySpace.room_keys``).
The assembled script binds each declared key to a local (``ROOM``, ``SPOTS`` …), then the pieces
in dependency order, then the operation. redis-py reloads a script after NOSCRIPT.

A few scripts are not room operations (``STANDALONE``): their keys are not a room's fixed keys
(a room's key base, a challenge marker), so they are loaded as written, without pieces, and
their callers pass the keys their ``-- KEYS[1]:`` header documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import redis
from redis.commands.core import Script

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
    "poll_far",
    "book_seen",
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
    # Touches no key (an empty KEYS line): the draw's order keys, until the shuffle carries _draw.
    "draw_keys",
    "begin_draw",
    "set_beacon",
    "place_drawn",
    "finish_draw",
    "reroll_draw",
    "set_events",
    "shuffle_prequeue",
)

# Scripts loaded as written: the room series' sampler and refusal counter, the challenge spend,
# the first start's setup token (offered, spent).
STANDALONE = (
    "sample_series",
    "count_refusals",
    "spend_challenge",
    "offer_setup",
    "spend_setup",
)

_NEEDS = re.compile(r"^-- needs: *(.*)$", re.MULTILINE)
_KEYS = re.compile(r"^-- KEYS: *(.*)$", re.MULTILINE)
_WRAPS = re.compile(r"^-- wraps: *(\w+)", re.MULTILINE)


@dataclass(frozen=True)
class Operation:
    """An assembled script: its full source and the room keys it declares, in KEYS order."""

    source: str
    keys: tuple[str, ...]


def _read(name: str) -> str:
    return (resource_dir("lua") / f"{name}.lua").read_text(encoding="utf-8")


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
    parts += [f"-- {piece}.lua\n{_read(piece)}" for piece in _pieces(inner)]
    if wrapped:
        parts.append(f"-- {inner}.lua\nlocal function {inner}_op()\n{_read(inner)}\nend")
    parts.append(f"-- {name}.lua\n{body}")
    return Operation("\n".join(parts), keys)


def source(name: str) -> str:
    """Full source of operation ``name``."""
    return operation(name).source


def register(client: redis.Redis) -> dict[str, Script]:
    """All operation scripts, registered on ``client``."""
    return {name: client.register_script(source(name)) for name in OPERATIONS}


@cache
def standalone(name: str) -> str:
    """Source of standalone script ``name`` (``lua/<name>.lua`` as written)."""
    if name not in STANDALONE:
        raise ValueError(f"not a standalone script: {name!r}")
    return _read(name)


def register_standalone(client: redis.Redis, name: str) -> Script:
    """Standalone script ``name``, registered on ``client``."""
    return client.register_script(standalone(name))
