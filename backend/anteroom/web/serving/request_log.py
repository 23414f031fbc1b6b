"""Structured request logs (issue 14, item 6): one JSON line per request with
``ANTEROOM_LOG_FORMAT=json``; by default gunicorn's human-readable access line stays the log.

A line names the route pattern (``/queue/<slug>``), never the path's query string (``?abq=`` and
``?key=`` carry tokens and keys) nor any header or body value but the room, so no token or key can
reach the log through it.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from typing import Any

from flask import Flask, Response, g, request

log = logging.getLogger("anteroom.request")
INSTANCE = f"{socket.gethostname()}:{os.getpid()}"
ROOM_BODY_ROUTES = frozenset({"/api/v1/queue/enter"})
EXTENSION = "anteroom.request_log"  # True in app.extensions when lines are logged as JSON


def _room() -> str | None:
    """The room a request is about: its id or slug from the URL, an enter's ``room``, or the
    room id its token names (set by the visitor views once the token checked out)."""
    if isinstance(g.get("log_room"), str):
        return str(g.log_room)[:64]
    args = request.view_args or {}
    for name in ("room_id", "slug"):
        if isinstance(args.get(name), str):
            return str(args[name])[:64]
    rule = request.url_rule
    if rule is not None and rule.rule in ROOM_BODY_ROUTES:
        body = request.get_json(silent=True, cache=True)  # parsed by the view already
        if isinstance(body, dict) and isinstance(body.get("room"), str):
            return str(body["room"])[:64]
    return None


def record() -> dict[str, Any]:
    """The fields of this request's line (no status or latency yet)."""
    rule = request.url_rule
    return {
        "route": rule.rule if rule is not None else "(unmatched)",
        "method": request.method,
        "room": _room(),
        "instance": INSTANCE,
    }


def _start() -> None:
    g.request_log_started = time.perf_counter()


def _finish(response: Response) -> Response:
    started = g.pop("request_log_started", None)
    fields = record()
    elapsed = None if started is None else time.perf_counter() - started
    write(fields["route"], fields["method"], fields["room"], response.status_code, elapsed)
    return response


def enabled(app: Flask) -> bool:
    """True when ``app`` logs requests as JSON lines (``ANTEROOM_LOG_FORMAT=json``)."""
    return bool(app.extensions.get(EXTENSION))


def write(route: str, method: str, room: str | None, status: int, seconds: float | None) -> None:
    """Log one request's line (the Flask hook's and the hot path's one format)."""
    line: dict[str, Any] = {"ts": round(time.time(), 3), "route": route, "method": method}
    line |= {"room": room, "instance": INSTANCE, "status": status}
    if seconds is not None:
        line["latencyMs"] = round(seconds * 1000, 2)
    log.info(json.dumps(line, separators=(",", ":")))


def init_app(app: Flask, log_format: str) -> None:
    """Log each request as JSON when ``log_format`` is ``json`` (else leave logging alone)."""
    if log_format not in ("text", "json"):
        raise ValueError("ANTEROOM_LOG_FORMAT must be text or json")
    app.extensions[EXTENSION] = log_format == "json"
    if log_format != "json":
        return
    if not log.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    app.before_request(_start)
    app.after_request(_finish)
