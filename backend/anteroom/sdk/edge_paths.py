"""Which room protects a request path, read every way a router could read it.

Routers disagree about paths a browser never sends: gunicorn hands ``//checkout`` on as it is and
Flask merges the slashes; werkzeug decodes ``%2F`` into a separator and Express keeps it in the
segment; a proxy or a static server resolves ``..`` that werkzeug and Express route literally;
Express matches ``/CHECKOUT`` to ``/checkout``; Bottle drops bytes that are not UTF-8 from the
path; werkzeug, Bottle and Falcon add the ``/`` a ``PATH_INFO`` lacks (a ``SCRIPT_NAME`` of ``/``
leaves ``checkout``); Django's ``(?i)`` routes match the KELVIN SIGN to ``k``. So:

- Repeated slashes are collapsed and, unless the routes are case-sensitive, case is ignored: every
  router that matters does one or the other, and a browser sends these.
- Every *reading* of the path is matched: as the server decoded it (bytes as latin-1), as UTF-8
  with invalid bytes replaced or dropped, with a missing leading ``/`` added, with the mount
  prefix (``mount``) and with the request's own ``SCRIPT_NAME``, and, when routes ignore case,
  lower-cased and case-folded the way Unicode-aware routers fold (LONG S to ``s``, KELVIN SIGN
  to ``k``, DOTLESS I and CAPITAL I WITH DOT to ``i``). A request whose readings disagree about
  which room protects it is *ambiguous*.
- A path is ambiguous too when its spelling leaves the route to the router: a ``.`` or ``..``
  segment (also spelled ``%2E``), a backslash, a NUL, an encoded ``/`` or ``\\`` (``%2F``,
  ``%5C``, ``%00`` in the path as sent), or a ``%`` that is not an escape. If any reading of it
  (dots resolved or not, backslash as a separator or not, cut at a NUL or not) is protected, it
  is refused.
- An ambiguous request is refused (``queue:ambiguous-path``) whatever it carries; a request no
  reading protects is none of the edge's business and passes.
- ``languages`` names language prefixes (Django's ``i18n_patterns``): ``/fr/checkout`` is
  protected by the route ``/checkout``.

Plain paths (printable ASCII, starting with ``/``, nothing suspicious) have one reading and take
a fast path. Standard library only; shared with the Node middleware through
``tests/fixtures/edge_cases.json``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["PathMatch", "RouteTable", "raw_path_of"]

_SLASHES = re.compile(r"/{2,}")
# In the decoded path: a backslash, a NUL, a '.' or '..' segment.
_SUSPICIOUS_PATH = re.compile(r"[\\\x00]|(?:^|/)\.\.?(?:/|$)")
# As sent: escapes that make a separator or a terminator out of data, a '%' that escapes nothing.
_SUSPICIOUS_RAW = re.compile(r"%(?:2f|5c|00)|%(?![0-9a-f]{2})", re.IGNORECASE)
_ABSOLUTE_FORM = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
# A path with one reading: printable ASCII but the backslash, from a leading '/' (and no "/.").
_PLAIN = re.compile(r"/[!-\[\]-~]*")


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


def _spellings(path: str) -> set[str]:
    """Every path a router might make of ``path`` by dots, backslashes and NULs, collapsed."""
    variants = {path, path.replace("\\", "/"), path.split("\x00", 1)[0]}
    readings: set[str] = set()
    for variant in variants:
        for spelled in (variant, _collapse(variant)):
            readings.add(_collapse(spelled))
            readings.add(_collapse(_resolve_dots(spelled)))
    return readings


def _decodings(path: str) -> set[str]:
    """``path`` (bytes as latin-1, as WSGI gives it) as it is, and as UTF-8 with invalid bytes
    replaced and dropped (Bottle drops them)."""
    try:
        data = path.encode("latin-1")
    except UnicodeEncodeError:
        return {path}  # already text (an ASGI or Django path)
    replaced = data.decode("utf-8", "replace")
    return {path, replaced, replaced.replace("\ufffd", "")}


def _readings(paths: Iterable[str]) -> set[str]:
    """Every reading of ``paths`` a router might route (see the module docstring)."""
    readings: set[str] = set()
    for path in paths:
        for decoded in _decodings(path):
            for slashed in {decoded, "/" + decoded.lstrip("/")}:
                readings |= _spellings(slashed)
    return readings


@dataclass(frozen=True)
class PathMatch:
    """The room protecting a path (None: unprotected), or ``ambiguous`` with the room it risks."""

    room: str | None
    ambiguous: bool = False


class RouteTable:
    """Path prefixes → room slugs, longest prefix first.

    ``mount`` is the prefix the app is served under (its ``SCRIPT_NAME``), when routes are
    written as the browser sees them; ``languages`` the language prefixes a route may follow.
    """

    def __init__(
        self,
        routes: Mapping[str, str],
        case_sensitive: bool = False,
        mount: str = "",
        languages: Iterable[str] = (),
    ) -> None:
        self.case_sensitive = case_sensitive
        self.mount = mount.rstrip("/")
        ordered = sorted(routes.items(), key=lambda kv: -len(kv[0]))
        self._routes = tuple(
            (self._fold(_collapse(prefix)), self._fold(_collapse(prefix).rstrip("/") + "/"), slug)
            for prefix, slug in ordered
        )
        self._languages = frozenset(self._fold(lang.strip("/")) for lang in languages)

    def _fold(self, path: str) -> str:
        return path if self.case_sensitive else path.lower()

    def _folds(self, path: str) -> set[str]:
        """``path`` folded as the routers fold: Unicode-aware ones map some letters to ASCII."""
        if self.case_sensitive:
            return {path}
        path = path.replace("\u0130", "i")  # CAPITAL I WITH DOT: its simple lower case is i
        return {path.lower(), path.upper().lower()}

    def _lookup(self, folded: str) -> str | None:
        for prefix, below, slug in self._routes:
            if folded == prefix or folded.startswith(below):
                return slug
        if self._languages:
            language, slash, rest = folded[1:].partition("/")
            if slash and language in self._languages:
                return self._lookup("/" + rest)
        return None

    def room_for(self, path: str) -> str | None:
        """Slug protecting ``path`` (decoded, slashes collapsed, mount included), or None."""
        return self._lookup(self._fold(path))

    def plain_reading(
        self, path: str, raw_path: str | None = None, script_name: str = ""
    ) -> str | None:
        """The one reading of a plain path (the fast path's: mount included, slashes collapsed,
        case kept), or None when the path is not plain and so may be read more than one way.
        Bypass rules match path prefixes on it (``bypass_rules``)."""
        raw = path if raw_path is None else raw_path
        routed = self.mount + path if self.mount else path
        if (
            _PLAIN.fullmatch(routed) is None
            or "/." in routed
            or _SUSPICIOUS_RAW.search(raw) is not None
            or (bool(self.mount) and script_name.rstrip("/") != self.mount)
        ):
            return None
        return _collapse(routed)

    def match(self, path: str, raw_path: str | None = None, script_name: str = "") -> PathMatch:
        """Match ``path`` (decoded, as the app routes it: ``PATH_INFO``) spelled ``raw_path`` on
        the wire, below ``script_name`` (``SCRIPT_NAME``)."""
        raw = path if raw_path is None else raw_path
        routed = self.mount + path if self.mount else path
        # With a mount, the request's own SCRIPT_NAME is a reading too (gunicorn takes one from
        # a header): it must agree with the mount.
        other_mount = bool(self.mount) and script_name.rstrip("/") != self.mount
        if (
            _PLAIN.fullmatch(routed) is not None
            and "/." not in routed  # no dot segment (and a few harmless others)
            and _SUSPICIOUS_RAW.search(raw) is None
            and not other_mount
        ):
            return PathMatch(self._lookup(self._fold(_collapse(routed))))  # the fast path
        suspicious = (
            _SUSPICIOUS_PATH.search(routed) is not None or _SUSPICIOUS_RAW.search(raw) is not None
        )
        texts = {routed, self.mount + "/" + path.lstrip("/")}
        if other_mount:
            texts.add(script_name + path)
        rooms = {self._lookup(f) for r in _readings(texts) for f in self._folds(r)}
        found = sorted(room for room in rooms if room is not None)
        if not found:
            return PathMatch(None)
        if suspicious or len(rooms) > 1:
            return PathMatch(found[0], ambiguous=True)
        return PathMatch(found[0])
