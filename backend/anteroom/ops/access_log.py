"""The access log ``anteroom serve`` writes: gunicorn's line, at a fraction of its cost.

gunicorn's logger builds, for every request, a dict of every request header, response header
and WSGI environ variable (its ``{name}i``, ``{name}o`` and ``{name}e`` atoms), escapes each,
then sends the line through :mod:`logging` (a record, its handler's lock, formatter, write and
flush). Our format reads seven atoms, so this builds those seven, escaped as gunicorn escapes
them, and writes the line straight to gunicorn's own stream handler, under its lock, flushed:
the same bytes in the same place. Any other set-up (another format, a ``logconfig``, syslog,
handlers added by someone else) is gunicorn's own path, unchanged.

Measured under ``bench/arrivals.py``, gunicorn's access log was ~8% of a worker's samples.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from gunicorn.glogging import Logger as GunicornLogger

# What `anteroom serve` logs per request: the path only (query strings carry tokens), never a
# token; the worker's pid says which worker answered.
FORMAT = '%(h)s "%(m)s %(U)s" %(s)s %(b)s %(M)sms %(p)s'


def _safe(value: Any) -> Any:
    # As gunicorn's SafeAtoms: a double quote inside an atom is escaped; a missing one is '-'.
    if value is None:
        return "-"
    return value.replace('"', '\\"') if isinstance(value, str) else value


class Logger(GunicornLogger):  # type: ignore[misc]
    """gunicorn's logger whose access line for :data:`FORMAT` is built and written directly."""

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        """Write the access line for this request (gunicorn's, when the set-up is not ours)."""
        if not self.access_log_enabled:
            return
        handler = self._plain_handler()
        if handler is None:
            super().access(resp, req, environ, request_time)
            return
        status = resp.status
        if isinstance(status, str):
            status = status.split(None, 1)[0]
        sent = getattr(resp, "sent", None)
        atoms = {
            "h": _safe(environ.get("REMOTE_ADDR", "-")),
            "m": _safe(environ.get("REQUEST_METHOD")),
            "U": _safe(environ.get("PATH_INFO")),
            "s": _safe(status),
            "b": str(sent) if sent is not None else "-",
            "M": request_time.seconds * 1000 + int(request_time.microseconds / 1000),
            "p": f"<{os.getpid()}>",
        }
        try:
            line = FORMAT % atoms + handler.terminator
            handler.acquire()
            try:
                handler.stream.write(line)
                handler.flush()
            finally:
                handler.release()
        except Exception:
            # As gunicorn: a line that cannot be written is reported, the request unharmed.
            super().access(resp, req, environ, request_time)

    def _plain_handler(self) -> logging.StreamHandler[Any] | None:
        """gunicorn's own handler, when it alone takes the access log in our format."""
        log = self.access_log
        if self.cfg.access_log_format != FORMAT or len(log.handlers) != 1 or log.filters:
            return None
        handler = log.handlers[0]
        if not getattr(handler, "_gunicorn", False) or type(handler) is not logging.StreamHandler:
            return None
        if handler.filters or not log.isEnabledFor(logging.INFO):
            return None
        return handler
