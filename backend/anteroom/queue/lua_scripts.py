"""Load the Lua scripts of ``lua/`` and register them with a Redis client.

Every operation script is prefixed with ``_room.lua`` (the shared helpers), so each one
is a single EVALSHA, except the small standalone ones (``STANDALONE``), which carry only what
they need; redis-py reloads a script after NOSCRIPT (a restarted Redis).
"""

from __future__ import annotations

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
    "poll",
    "poll_far",
    "leave",
    "refresh",
    "revoke",
    "stats",
    "line",
    "sweep",
    "tick",
    "shift_clock",
    "set_clock",
)


# Scripts run on nearly every call, kept free of the shared prelude.
STANDALONE = frozenset({"poll_far"})


@cache
def source(name: str) -> str:
    """Full source of operation ``name``: the shared prelude, then the operation."""
    folder = resource_dir("lua")
    if name in STANDALONE:
        return (folder / f"{name}.lua").read_text(encoding="utf-8")
    prelude = (folder / "_room.lua").read_text(encoding="utf-8")
    body = (folder / f"{name}.lua").read_text(encoding="utf-8")
    return f"{prelude}\n-- {name}.lua\n{body}"


def register(client: redis.Redis) -> dict[str, Script]:
    """All operation scripts, registered on ``client``."""
    return {name: client.register_script(source(name)) for name in OPERATIONS}
