"""The access log `anteroom serve` writes (ops/access_log.py): gunicorn's line, byte for byte."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger as GunicornLogger

from anteroom.ops import access_log


@pytest.fixture(autouse=True)
def as_served() -> Iterator[None]:
    """The access logger as `anteroom serve` has it: pytest's capture handlers set aside."""
    log = logging.getLogger("gunicorn.access")
    kept = list(log.handlers)
    log.handlers = []
    yield
    log.handlers = kept


def _logger(cls: type[GunicornLogger], fmt: str = access_log.FORMAT) -> tuple[Any, io.StringIO]:
    # Both classes set up the one "gunicorn.access" logger: each is used before the next is made.
    cfg = Config()
    cfg.set("accesslog", "-")
    cfg.set("access_log_format", fmt)
    logger = cls(cfg)
    out = io.StringIO()
    (handler,) = [h for h in logger.access_log.handlers if getattr(h, "_gunicorn", False)]
    logger.access_log.handlers = [handler]
    handler.setStream(out)
    return logger, out


def _request(path: str, status: str, sent: int | None) -> tuple[Any, Any, dict[str, Any]]:
    resp = SimpleNamespace(status=status, sent=sent, headers=[("Content-Type", "text/plain")])
    req = SimpleNamespace(headers=[("USER-AGENT", "x")])
    environ = {"REMOTE_ADDR": "198.18.0.7", "REQUEST_METHOD": "POST", "PATH_INFO": path,
               "RAW_URI": path + "?abq=secret", "SERVER_PROTOCOL": "HTTP/1.1",
               "QUERY_STRING": "abq=secret"}  # fmt: skip
    return resp, req, environ


@pytest.mark.parametrize(
    ("path", "status", "sent", "took"),
    [
        ("/api/v1/queue/join", "200 OK", 512, timedelta(microseconds=2500)),
        ('/odd"path', "404 NOT FOUND", None, timedelta(seconds=1, microseconds=999_999)),
        ("/healthz", "503 SERVICE UNAVAILABLE", 0, timedelta()),
    ],
)
def test_the_line_is_gunicorns(path: str, status: str, sent: int | None, took: timedelta) -> None:
    lines = []
    for cls in (access_log.Logger, GunicornLogger):
        logger, out = _logger(cls)
        if cls is access_log.Logger:
            assert logger._plain_handler() is not None  # the direct write
        logger.access(*_request(path, status, sent), took)
        lines.append(out.getvalue())
    ours, theirs = lines
    assert ours == theirs
    assert "secret" not in ours  # the path only: query strings carry tokens
    assert ours.count("\n") == 1


def test_another_setup_takes_gunicorns_path() -> None:
    """Another format, or a handler someone added, is written by gunicorn's own code."""
    fmt = '%(h)s "%(r)s" %(s)s %({user-agent}i)s'
    lines = []
    for cls in (access_log.Logger, GunicornLogger):
        logger, out = _logger(cls, fmt)
        assert not isinstance(logger, access_log.Logger) or logger._plain_handler() is None
        logger.access(*_request("/x", "200 OK", 2), timedelta())
        lines.append(out.getvalue())
    assert lines[0] == lines[1]
    assert "?abq=secret" in lines[0]  # gunicorn's %(r)s: the raw request line

    extra = io.StringIO()
    added = logging.StreamHandler(extra)
    ours, ours_out = _logger(access_log.Logger)
    ours.access_log.addHandler(added)
    try:
        ours.access(*_request("/y", "200 OK", 2), timedelta())
    finally:
        ours.access_log.removeHandler(added)
    assert ours_out.getvalue() and extra.getvalue()  # both handlers got the line
