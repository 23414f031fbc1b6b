"""Per-address limits (flask-limiter, counters in Redis so they hold across workers)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from flask import Flask, Response
from flask_limiter import Limiter, RequestLimit
from flask_limiter.util import get_remote_address

from . import errors
from .config import Settings


def storage_uri(redis_url: str) -> str:
    """The `limits` library's spelling of a redis-py URL."""
    if redis_url.startswith("unix://"):
        return "redis+unix://" + redis_url[len("unix://") :].split("?", 1)[0]
    return redis_url


def _breached(limit: RequestLimit) -> Response:
    retry = max(1, math.ceil(limit.reset_at - time.time()))
    return errors.to_response(errors.RateLimited(retry_after=retry))


def init_app(
    app: Flask, settings: Settings, prefix: str, skip: Callable[[], bool] = lambda: False
) -> Limiter:
    """Attach a limiter and put SPEC's limits on challenge, identify and enter.

    ``skip`` exempts requests (the app passes "the circuit breaker is open").
    """
    limiter = Limiter(
        key_func=get_remote_address,
        app=app,
        storage_uri=storage_uri(settings.redis_url),
        storage_options={"socket_connect_timeout": 1, "socket_timeout": 1},
        key_prefix=prefix,
        strategy="fixed-window",
        swallow_errors=True,  # an outage must not turn into 500s; the breaker handles it
        on_breach=_breached,
        headers_enabled=False,
    )
    for endpoint, limit in (
        ("visitor.challenge", settings.limit_challenge),
        ("visitor.identify", settings.limit_identify),
        ("visitor.enter", settings.limit_enter),
    ):
        # While the breaker is open Redis is known to be down: don't wait on it per request.
        view = app.view_functions[endpoint]
        app.view_functions[endpoint] = limiter.limit(limit, exempt_when=skip)(view)
    return limiter
