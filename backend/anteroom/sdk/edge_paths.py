"""Which room protects a request path, read the way the application's router will read it.

Routers disagree about paths a browser never sends: gunicorn hands ``//checkout`` on as it is and
Flask merges the slashes; werkzeug decodes ``%2F`` into a separator and Express keeps it in the
segment; a proxy or a static server resolves ``..`` that werkzeug and Express route literally;
Express matches ``/CHECKOUT`` to ``/checkout``. So:

- Repeated slashes are collapsed and, unless the routes are case-sensitive, case is ignored: every
  router that matters does one or the other, and a browser sends these.
- A path is *ambiguous* when its spelling leaves the route to the router: a ``.`` or ``..``
  segment (also spelled ``%2E``), a backslash, a NUL, an encoded ``/`` or ``\\`` (``%2F``,
  ``%5C``, ``%00`` in the path as sent), or a ``%`` that is not an escape. If any reading of an
  ambiguous path (dots resolved or not, backslash as a separator or not, cut at a NUL or not) is
  protected, the request is refused (``queue:ambiguous-path``) whatever it carries; otherwise it
  is none of the edge's business and passes.

Standard library only; shared with the Node middleware through ``tests/fixtures/edge_cases.json``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PathMatch", "RouteTable", "raw_path_of"]

_SLASHES = re.compile(r"/{2,}")
# In the decoded path: a backslash, a NUL, a '.' or '..' segment.
_SUSPICIOUS_PATH = re.compile(r"[\\\x00]|(?:^|/)\.\.?(?:/|$)")
# As sent: escapes that make a separator or a terminator out of data, a '%' that escapes nothing.
_SUSPICIOUS_RAW = re.compile(r"%(?:2f|5c|00)|%(?![0-9a-f]{2})", re.IGNORECASE)
_ABSOLUTE_FORM = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


def raw_path_of(target: str) -> str:
    """The path of a request target as sent: no scheme and host (absolute form), no query."""
    if not target.startswith("/"):
        target = _ABSOLUTE_FORM.sub("", target, count=1) or "/"
    return target.split("?", 1)[0]


def _collapse(path: str) -> str:
    return _SLASHES.sub("/", path)


def _resolve_dots(path: str) -> str:
    """RFC 3986 dot-segment removal; ``..`` above the root stays at the root."""
    kept: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    return "/" + "/".join(kept)


def _readings(path: str) -> set[str]:
    """Every path a router might make of ``path``, slashes collapsed."""
    variants = {path, path.replace("\\", "/"), path.split("\x00", 1)[0]}
    readings: set[str] = set()
    for variant in variants:
        for spelled in (variant, _collapse(variant)):
            readings.add(_collapse(spelled))
            readings.add(_collapse(_resolve_dots(spelled)))
    return readings


@dataclass(frozen=True)
class PathMatch:
    """The room protecting a path (None: unprotected), or ``ambiguous`` with the room it risks."""

    room: str | None
    ambiguous: bool = False


class RouteTable:
    """Path prefixes → room slugs, longest prefix first."""

    def __init__(self, routes: Mapping[str, str], case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive
        ordered = sorted(routes.items(), key=lambda kv: -len(kv[0]))
        self._routes = tuple(
            (self._fold(_collapse(prefix)), self._fold(_collapse(prefix).rstrip("/") + "/"), slug)
            for prefix, slug in ordered
        )

    def _fold(self, path: str) -> str:
        return path if self.case_sensitive else path.lower()

    def room_for(self, path: str) -> str | None:
        """Slug protecting ``path`` (decoded, slashes collapsed), or None."""
        path = self._fold(path)
        for prefix, below, slug in self._routes:
            if path == prefix or path.startswith(below):
                return slug
        return None

    def match(self, path: str, raw_path: str | None = None) -> PathMatch:
        """Match ``path`` (decoded, as the app routes it) spelled ``raw_path`` on the wire."""
        raw = path if raw_path is None else raw_path
        if _SUSPICIOUS_PATH.search(path) is None and _SUSPICIOUS_RAW.search(raw) is None:
            return PathMatch(self.room_for(_collapse(path)))
        rooms = sorted({room for r in _readings(path) if (room := self.room_for(r)) is not None})
        return PathMatch(rooms[0], ambiguous=True) if rooms else PathMatch(None)
