"""The connection limits' rules: what an address counts under, the forwarded visitor, the counts,
the settings, and the request guard's body read (tests/integration/test_connection_limits.py
runs them through gunicorn)."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import gevent
import pytest
from flask import Flask
from gunicorn.http.errors import InvalidChunkSize

from anteroom.config import Settings
from anteroom.ops.connection_limits import (
    Limits,
    OpenCounts,
    RequestGuard,
    address_key,
    forwarded_client,
)


def test_ipv4_counts_as_itself_and_ipv6_by_its_64() -> None:
    assert address_key("198.51.100.7") == "198.51.100.7"
    # One subscriber's /64 is one address: a machine may take a new one per connection.
    assert (
        address_key("2001:db8:1:2::1") == address_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    )
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("::ffff:198.51.100.7") == "198.51.100.7"  # a dual-stack listener's IPv4
    assert address_key("fe80::1%eth0") == "fe80::/64"
    assert address_key("not:an:address" + "x" * 200) == ("not:an:address" + "x" * 200)[:64]


def test_the_forwarded_visitor_is_the_one_proxyfix_names() -> None:
    environ = {"REMOTE_ADDR": "10.0.0.5", "HTTP_X_FORWARDED_FOR": "1.1.1.1, 2.2.2.2, 3.3.3.3"}
    assert forwarded_client(environ, 1) == "3.3.3.3"
    assert forwarded_client(environ, 2) == "2.2.2.2"
    assert forwarded_client(environ, 4) == "10.0.0.5"  # fewer hops than trusted: the peer
    assert forwarded_client({"REMOTE_ADDR": "10.0.0.5"}, 1) == "10.0.0.5"
    assert (
        forwarded_client({"REMOTE_ADDR": "10.0.0.5", "HTTP_X_FORWARDED_FOR": " "}, 1) == "10.0.0.5"
    )


def test_the_peer_is_capped_only_when_no_proxy_is_trusted() -> None:
    assert Limits(per_address=5).peer_key(("198.51.100.7", 4000)) == "198.51.100.7"
    assert Limits(per_address=5, trusted_proxies=1).peer_key(("10.0.0.5", 4000)) is None
    assert Limits(per_address=0).peer_key(("198.51.100.7", 4000)) is None
    assert Limits(per_address=5).peer_key("") is None  # a Unix socket's peer
    forwarded = {"REMOTE_ADDR": "10.0.0.5", "HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    assert Limits(per_address=5).visitor_key(forwarded) is None
    assert Limits(per_address=5, trusted_proxies=1).visitor_key(forwarded) == "198.51.100.7"


def test_counts_stop_at_the_cap_and_forget_an_address_with_none_open() -> None:
    counts = OpenCounts(cap=2)
    assert counts.take("a") and counts.take("a")
    assert not counts.take("a")
    assert counts.take("b")
    counts.give("a")
    assert counts.take("a")
    for _ in range(2):
        counts.give("a")
    counts.give("b")
    assert counts.held == {}


def test_a_refusal_is_logged_once_a_minute_per_address() -> None:
    counts = OpenCounts(cap=1)
    assert counts.first_refusal("a")
    assert not counts.first_refusal("a")
    assert counts.first_refusal("b")


def test_settings_read_the_limits_and_refuse_nonsense() -> None:
    settings = Settings.from_env(
        {"ANTEROOM_REQUEST_TIMEOUT": "2.5", "ANTEROOM_CONNECTIONS_PER_ADDRESS": "0"}
    )
    assert (settings.request_timeout, settings.connections_per_address) == (2.5, 0)
    assert Limits.from_settings(Settings()) == Limits(10.0, 256, 0)
    for name, value in [
        ("REQUEST_TIMEOUT", "0"),
        ("REQUEST_TIMEOUT", "soon"),
        ("REQUEST_TIMEOUT", "nan"),
        ("CONNECTIONS_PER_ADDRESS", "-1"),
    ]:
        with pytest.raises(ValueError, match=f"ANTEROOM_{name}"):
            Settings.from_env({f"ANTEROOM_{name}": value})


# -- the guard's body read (a gevent.Timeout needs no patched socket: the stream yields) -------


class Stream:
    """A request body arriving in ``pieces``, each ``delay`` seconds after the last."""

    def __init__(self, pieces: list[bytes], delay: float = 0.0, error: Exception | None = None):
        self.pieces, self.delay, self.error = pieces, delay, error
        self.asked: list[int] = []

    def read(self, size: int) -> bytes:
        self.asked.append(size)
        gevent.sleep(self.delay)  # a client sending slowly, on the event loop
        if not self.pieces and self.error is not None:
            raise self.error
        if not self.pieces:
            return b""
        piece = self.pieces.pop(0)
        if len(piece) > size:  # at most what was asked, as gunicorn's body does
            piece, rest = piece[:size], piece[size:]
            self.pieces.insert(0, rest)
        return piece


def guarded(deadline_in: float, max_body: int = 100) -> tuple[RequestGuard, list[Any], list[bool]]:
    app = Flask("guarded")
    app.config["MAX_CONTENT_LENGTH"] = max_body
    seen: list[Any] = []
    closed: list[bool] = []

    def inner(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        given = environ["wsgi.input"]  # the body in memory, or the stream left as it was
        seen.append(given.getvalue() if isinstance(given, io.BytesIO) else given)
        start_response("200 OK", [])
        return [b"ok"]

    deadline = time.monotonic() + deadline_in
    guard = RequestGuard(app, inner, Limits(), lambda: deadline, lambda: closed.append(True))
    return guard, seen, closed


def call(guard: RequestGuard, **environ: Any) -> tuple[str, bytes]:
    status: list[str] = []
    body = b"".join(guard(environ, lambda s, h: status.append(s)))  # type: ignore[arg-type]
    return status[0], body


def test_a_body_in_time_reaches_the_app_from_memory() -> None:
    guard, seen, closed = guarded(1.0)
    stream = Stream([b'{"a":', b" 1}"], delay=0.01)
    assert call(guard, CONTENT_LENGTH="8", **{"wsgi.input": stream})[0] == "200 OK"
    assert seen == [b'{"a": 1}'] and not closed


def test_a_body_past_the_deadline_is_408_and_closed() -> None:
    guard, seen, closed = guarded(0.05)
    stream = Stream([b"{", b"}"], delay=0.2)
    started = time.monotonic()
    status, body = call(guard, CONTENT_LENGTH="2", REQUEST_METHOD="POST", **{"wsgi.input": stream})
    assert time.monotonic() - started < 0.2  # cut at the deadline, not after the slow read
    assert status == "408 Request Timeout" and json.loads(body)["error"] == "RequestTimeout"
    assert seen == [] and closed == [True]


def test_a_chunked_body_is_read_to_one_byte_past_the_limit() -> None:
    guard, seen, closed = guarded(1.0, max_body=10)
    stream = Stream([b"x" * 8, b"y" * 8, b"z" * 8])
    call(guard, HTTP_TRANSFER_ENCODING="chunked", **{"wsgi.input": stream})
    assert seen == [b"x" * 8 + b"yyy"] and closed == [True]  # the app says it is too large
    guard, seen, closed = guarded(1.0, max_body=10)
    call(guard, HTTP_TRANSFER_ENCODING="chunked", **{"wsgi.input": Stream([b"x" * 8])})
    assert seen == [b"x" * 8] and not closed


def test_an_over_long_declared_body_is_not_read() -> None:
    guard, seen, closed = guarded(1.0, max_body=10)
    stream = Stream([b"x" * 11], delay=5)
    call(guard, CONTENT_LENGTH="11", **{"wsgi.input": stream})
    assert stream.asked == [] and seen == [b""] and closed == [True]


def test_a_malformed_chunk_is_a_json_400() -> None:
    guard, seen, closed = guarded(1.0)
    stream = Stream([], error=InvalidChunkSize(b"zz"))
    status, body = call(guard, HTTP_TRANSFER_ENCODING="chunked", **{"wsgi.input": stream})
    assert status == "400 Bad Request" and json.loads(body)["fields"] == {
        "body": "is not valid chunked encoding"
    }
    assert seen == [] and closed == [True]


def test_no_body_is_not_read_at_all() -> None:
    guard, seen, closed = guarded(1.0)
    for environ in ({}, {"CONTENT_LENGTH": "0"}):
        stream = Stream([], delay=5)
        assert call(guard, **environ, **{"wsgi.input": stream})[0] == "200 OK"
        assert stream.asked == [] and seen[-1] is stream and not closed


def test_the_visitor_apis_refusals_carry_its_cors_headers() -> None:
    """A browser reads a 408 or 429 of the visitor API (its agent backs off, says why) only if
    the answer allows its origin; elsewhere (pages, management) nothing is added."""
    from anteroom.web.visitor.visitor_api import ANSWER_HEADERS

    answers: dict[str, dict[str, str]] = {}
    for path in ("/api/v1/queue/poll", "/queue/drop"):
        guard, _, _ = guarded(0.05)
        given: list[tuple[str, str]] = []
        environ = {"CONTENT_LENGTH": "2", "REQUEST_METHOD": "POST", "PATH_INFO": path}
        stream = Stream([b"{", b"}"], delay=0.2)
        sent = guard({**environ, "wsgi.input": stream}, lambda s, h, given=given: given.extend(h))  # type: ignore[arg-type,misc]
        assert b"RequestTimeout" in b"".join(sent)
        answers[path] = dict(given)
    assert set(ANSWER_HEADERS) <= set(answers["/api/v1/queue/poll"].items())
    assert "Access-Control-Allow-Origin" not in answers["/queue/drop"]
    # The cap behind a trusted proxy: one visitor past it is refused, readable as well.
    guard, _, _ = guarded(1.0)
    guard.limits = Limits(10.0, 1, 1)  # type: ignore[misc]
    guard.in_progress = OpenCounts(1)
    guard.in_progress.take("203.0.113.9")  # the visitor's one connection in use
    headers: list[tuple[str, str]] = []
    environ = {"PATH_INFO": "/api/v1/arrive", "REQUEST_METHOD": "POST", "REMOTE_ADDR": "10.0.0.1"}
    environ["HTTP_X_FORWARDED_FOR"] = "203.0.113.9"
    body = b"".join(guard(environ, lambda s, h: headers.extend(h)))  # type: ignore[arg-type]
    assert json.loads(body)["error"] == "TooManyConnections"
    assert set(ANSWER_HEADERS) <= set(headers)
