"""The spot record (hash ``spots``, field = vid): its fields, in their stored order, declared once.

A spot is kept as one ``|``-joined string, read with one pattern match for the poll's speed.
The scripts never spell the order: the assembler (queue/connection/lua_scripts.py) writes the
record as ``@SPOT{ticket = …, state = 'w', …}`` and reads it with
``@SPOT~(raw){score = score, seen = seen, ...}``, both from the tuples here; Python reads a
record with :func:`parse`.

The stored format never changes without a migration: a previous release reads it side by side
during a rolling upgrade, and records written before the poll limit left Redis (0.1.0's, with
``window|count`` after ``seen``) are still read (``OLD_SPOT``).
"""

from __future__ import annotations

# ``state`` is 'w' (waiting) or 'a' (admitted); ``seen`` is when the spot counts as last polled
# (booked ahead, see mark_seen in lua/_spot.lua); ``since`` is the entry time while waiting and
# the admission time once admitted; ``expires`` and ``dealNumber`` are empty while waiting.
SPOT = (
    "ticket",
    "score",
    "state",
    "seen",
    "sessionJti",
    "networkTag",
    "since",
    "expires",
    "dealNumber",
)
# The record as written before the poll limit left Redis: two more fields after ``seen``.
OLD_SPOT = (*SPOT[:4], "window", "count", *SPOT[4:])

# The records the assembler writes and reads by field name (``@NAME{…}``, ``@NAME~(raw){…}``).
RECORDS: dict[str, tuple[str, ...]] = {"SPOT": SPOT, "OLD_SPOT": OLD_SPOT}


def parse(raw: str) -> dict[str, str]:
    """A stored spot record (either layout) by field name; ValueError for neither."""
    parts = raw.split("|")
    for layout in (SPOT, OLD_SPOT):
        if len(parts) == len(layout):
            return {name: part for name, part in zip(layout, parts, strict=True) if name in SPOT}
    raise ValueError(f"not a spot record: {raw!r}")
