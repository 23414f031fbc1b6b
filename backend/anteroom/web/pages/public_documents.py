"""Public documents that cost their size once (a draw's fairness.json and entrant list).

A document is built once per process and state (its key names what it states: the draw's
root for the list, the draw's public fields and a second of figures for the report) and kept
here as bytes, with their gzip made the first time a client asks for it. Each answer is then a
dict lookup and a write: a strong ``ETag`` (a hash of the bytes, so every process that built
the same document names it alike, with ``-gz`` for its gzip), ``304`` to a matching
``If-None-Match``, ``Vary: Accept-Encoding``, and ``HEAD`` with the headers only.

Memory makes a request cheap, not a flood of them: what the documents' full answers send is
bounded per process (``ANTEROOM_FAIRNESS_EGRESS_MB`` MiB a second, default 16, a burst of twice
that), beyond
which a full answer is ``429 Busy`` with ``Retry-After`` while ``304``s and ``HEAD``s go on. Many
addresses fetching the list back to back (each under its own limit) would otherwise have the
worker copy hundreds of megabytes a second, and other rooms' polls wait behind that.

Kept per process rather than once in Redis: Redis is single-threaded and shared by every room,
and handing it megabytes per request is what held other rooms' polls back; here a request costs
Redis only the room's read that says which document is current. The bytes kept are bounded
(``MAX_BYTES`` per process, least recently used dropped first); a document larger than that is
built for its request and not kept.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from flask import Response, request

from anteroom.web.serving import http_errors as errors

MAX_BYTES = 128 * 2**20  # ~ a list of 1.2 million entrants and its gzip, or many smaller ones
GZIP_LEVEL = 1  # ~2.5% larger than level 6 on hex ids, a third of the CPU


class Document:
    """One built document: its bytes, their tag, and their gzip once asked for."""

    def __init__(self, body: bytes, built_at: float) -> None:
        self.body, self.built_at = body, built_at
        self.etag = hashlib.sha256(body).hexdigest()[:40]
        self._packed: bytes | None = None
        self._lock = threading.Lock()

    @property
    def packed(self) -> bytes:
        """The body's gzip, made once (mtime 0: the same bytes in every process)."""
        if self._packed is None:
            with self._lock:
                if self._packed is None:
                    self._packed = gzip.compress(self.body, GZIP_LEVEL, mtime=0)
        return self._packed

    @property
    def size(self) -> int:
        """Bytes held (the gzip counted once made)."""
        return len(self.body) + len(self._packed or b"")


class DocumentCache:
    """This process's built documents, by key; one build at a time per key."""

    def __init__(self, egress_per_sec: float = 0.0, max_bytes: int = MAX_BYTES) -> None:
        """``egress_per_sec``: full answers' bytes a second (a burst of two seconds'); 0: no cap."""
        self.max_bytes = max_bytes
        self.egress_per_sec, self.egress_burst = egress_per_sec, 2 * egress_per_sec
        self.egress, self.egress_at = self.egress_burst, None  # bytes left, when last filled
        self._kept: OrderedDict[Hashable, Document] = OrderedDict()
        self._building: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(
        self, key: Hashable, build: Callable[[], bytes], now: float, fresh_for: float | None = None
    ) -> Document:
        """The document of ``key``, built by ``build`` unless kept (and, with ``fresh_for``,
        built less than that many seconds before ``now``)."""
        found = self._fresh(key, now, fresh_for)
        if found is not None:
            return found
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        # The first requests after a draw all want it: one builds, the others wait for it.
        try:
            with building:
                found = self._fresh(key, now, fresh_for)
                if found is None:
                    found = Document(build(), now)
                    self._keep(key, found)
        finally:
            with self._lock:
                self._building.pop(key, None)
        return found

    def peek(self, key: Hashable, now: float, fresh_for: float | None = None) -> Document | None:
        """The document of ``key`` when kept (and fresh, as for :meth:`get`), else None: built
        by nobody here (web/pages/public_front.py answers only what is built)."""
        return self._fresh(key, now, fresh_for)

    def spend(self, size: int, now: float) -> None:
        """Take ``size`` bytes from this process's egress budget, or refuse (429 Busy)."""
        rate = self.egress_per_sec
        if rate <= 0:
            return
        with self._lock:
            since = now if self.egress_at is None else self.egress_at
            left = min(self.egress_burst, self.egress + max(0.0, now - since) * rate)
            self.egress_at = now
            if left < size:
                self.egress = left
                raise errors.Busy(retry_after=max(1, math.ceil((size - left) / rate)))
            self.egress = left - size

    def _fresh(self, key: Hashable, now: float, fresh_for: float | None) -> Document | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None or (fresh_for is not None and now - found.built_at >= fresh_for):
                return None
            self._kept.move_to_end(key)
            return found

    def _keep(self, key: Hashable, document: Document) -> None:
        with self._lock:
            self._kept[key] = document
            self._kept.move_to_end(key)
            # Sizes as built; a gzip made later adds at most half again (hex ids compress ~2x).
            while sum(d.size for d in self._kept.values()) > self.max_bytes and self._kept:
                self._kept.popitem(last=False)


def answer(
    document: Document, cache_control: str, cache: DocumentCache | None = None, now: float = 0.0
) -> Response:
    """``document`` as this request asks for it: gzip or not, 304 when its tag matches; a full
    answer's body is charged to ``cache``'s egress budget (when given) at ``now``."""
    packed = request.accept_encodings.quality("gzip") > 0
    tag = document.etag + ("-gz" if packed else "")
    if request.if_none_match.contains_weak(tag):
        unchanged = Response(status=304)
        _headers(unchanged, tag, cache_control)
        return unchanged
    body = document.packed if packed else document.body
    if cache is not None and request.method != "HEAD":
        cache.spend(len(body), now)
    # HEAD: werkzeug sends the headers (Content-Length from these bytes) and no body.
    found = Response(body, mimetype="application/json")
    if packed:
        found.headers["Content-Encoding"] = "gzip"
    _headers(found, tag, cache_control)
    return found


def _headers(response: Response, tag: str, cache_control: str) -> None:
    response.set_etag(tag)
    response.headers["Cache-Control"] = cache_control
    response.vary.add("Accept-Encoding")
