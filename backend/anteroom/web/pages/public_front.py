"""``fairness.json`` and its entrant list answered before Flask's request cycle
(web/visitor/hot_path.py
hands their GETs and HEADs here), in their common cases.

Twenty impatient fetchers make hundreds of requests a second, most of them refused by their
address's limit or answered from memory; a full Flask request cycle for each (request and
response objects, context locals, hooks) cost other rooms' polls more than the answer did.
Here, with the views' rules and the same status, headers and bodies:

- the per-address limit's ``429`` (counted as the views count it: before any Redis read);
- once the room and its draw are read (as the views read them), a ``304`` to a matching
  ``If-None-Match``, a ``HEAD``, or a full answer (plain or gzip, charged to the process's egress
  budget, ``429 Busy`` past it), from the document this process has already built.

Anything else goes to the Flask views (``web/pages/fairness.py``), marked as counted so the limit is
not charged twice: a query other than ``key`` (and the list's ``root``) in plain characters, a
key or room refused, Redis failing, a room with no public draw, a document not built here yet.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import orjson
from werkzeug.http import parse_accept_header, parse_etags, quote_etag

from anteroom.service_container import Services
from anteroom.web.pages import fairness as views
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving import metrics, request_log
from anteroom.web.visitor import address_limits

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment
    from flask import Flask

PREFIX = "/queue/"
DOCUMENT, LIST = "/fairness.json", "/fairness/entrants.json"
RULES = {DOCUMENT: "/queue/<slug>/fairness.json", LIST: "/queue/<slug>/fairness/entrants.json"}
# Values with nothing to decode (keys are pk_…, roots hex): anything else is the views' to read.
PLAIN = re.compile(r"[A-Za-z0-9_.~-]*")
ANSWERED = frozenset(("GET", "HEAD"))


class Answer:
    """A finished answer: status, headers, body (sent unless the request is a HEAD)."""

    __slots__ = ("body", "code", "headers")

    def __init__(self, code: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.code, self.headers, self.body = code, headers, body


def route_of(path: str) -> tuple[str, str] | None:
    """``(slug, document)`` when ``path`` names one of the public documents, else None."""
    if not path.startswith(PREFIX):
        return None
    for suffix in (DOCUMENT, LIST):
        if path.endswith(suffix):
            slug = path[len(PREFIX) : -len(suffix)]
            return (slug, suffix) if slug and "/" not in slug else None
    return None


def _query(environ: WSGIEnvironment, names: tuple[str, ...]) -> dict[str, str] | None:
    """The query's values when it holds only ``names``, each once and plain, else None."""
    raw = environ.get("QUERY_STRING", "")
    found: dict[str, str] = {}
    for pair in raw.split("&") if raw else ():
        name, sep, value = pair.partition("=")
        if not sep or name not in names or name in found or not PLAIN.fullmatch(value):
            return None
        found[name] = value
    return found if "key" in found else None


def answer(app: Flask, environ: WSGIEnvironment, slug: str, which: str) -> Answer | None:
    """This request's answer, or None when it is the views' (``environ`` marked if counted)."""
    method = environ.get("REQUEST_METHOD")
    query = _query(environ, ("key", "root") if which == LIST else ("key",))
    if method not in ANSWERED or query is None:
        return None
    started = time.perf_counter()
    services: Services = app.extensions["anteroom"]
    services.on_request()  # what the app's before_request does for Flask
    address = environ.get("REMOTE_ADDR") or "127.0.0.1"  # as address_limits.charge
    try:
        address_limits.Limits.of(app.extensions, address).charge("fairness")
    except errors.ApiError as exc:
        found = _error(exc)
    else:
        environ[views.CHARGED] = True
        found = _document(app, services, environ, slug, which, query)
    if found is None:
        return None
    rule = RULES[which]
    refused = orjson.loads(found.body) if found.code >= 400 else None
    elapsed = time.perf_counter() - started
    seen = app.extensions["anteroom_breaker_seen"]
    metrics.observe(rule, method, found.code, elapsed, refused, services.breaker, seen)
    if request_log.enabled(app):
        request_log.write(rule, method, slug[:64], found.code, elapsed)
    return found


def _document(
    app: Flask,
    services: Services,
    environ: WSGIEnvironment,
    slug: str,
    which: str,
    query: dict[str, str],
) -> Answer | None:
    """The built document's answer, or None (the views build it or word the refusal)."""
    cache = app.extensions.get(views.EXTENSION)
    if cache is None:
        return None
    try:
        room, draw = views.room_and_draw(services, query["key"], slug)
        if which == DOCUMENT:
            key, fresh_for = views.document_key(room, draw, query["key"])[0], views.FIGURES_SECONDS
            control = views.REVALIDATE
        else:
            key, fresh_for = views.list_key(room, draw, query.get("root")), None
            control = views.list_cache_control(query.get("root"))
    except Exception:  # refusals, Redis failing: the views word them
        return None
    now = views.clock()
    document = cache.peek(key, now, fresh_for)
    if document is None:
        return None
    packed = parse_accept_header(environ.get("HTTP_ACCEPT_ENCODING")).quality("gzip") > 0
    tag = document.etag + ("-gz" if packed else "")
    headers = [("ETag", quote_etag(tag)), ("Cache-Control", control), ("Vary", "Accept-Encoding")]
    if parse_etags(environ.get("HTTP_IF_NONE_MATCH")).contains_weak(tag):
        return Answer(304, headers, b"")
    body = document.packed if packed else document.body
    if environ.get("REQUEST_METHOD") != "HEAD":
        try:
            cache.spend(len(body), now)
        except errors.ApiError as exc:
            return _error(exc)
    front = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    if packed:
        front.append(("Content-Encoding", "gzip"))
    return Answer(200, front + headers, body)


def _error(exc: errors.ApiError) -> Answer:
    """``exc`` as ``http_errors.to_response`` answers it."""
    body = orjson.dumps(exc.body()) + b"\n"  # the trailing newline, as Flask's jsonify
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    if exc.retry_after is not None:
        headers.append(("Retry-After", str(exc.retry_after)))
    headers += list(exc.extra_headers.items())
    return Answer(exc.code or 400, headers, body)


def body_of(found: Answer, environ: WSGIEnvironment) -> list[bytes]:
    """What is sent after the headers (nothing for a HEAD or a 304)."""
    return [] if environ.get("REQUEST_METHOD") == "HEAD" or found.code == 304 else [found.body]
