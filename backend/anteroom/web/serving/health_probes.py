"""Liveness and readiness probes."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis
from flask import Blueprint, Flask, current_app
from flask.typing import ResponseReturnValue

from anteroom.queue.connection import lua_scripts as scripts
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.storage_errors import StorageError
from anteroom.web.api import api_routes as routes
from anteroom.web.api.api_models import Alive, NotReady, Ready

bp = Blueprint("health", __name__)
log = logging.getLogger("anteroom")
EXTENSION = "anteroom.readiness"


# A probe's answer within about this (a load balancer's probe timeout is often 1-2 s): the check
# runs on its own client with this socket timeout, and probes never queue behind a check.
BUDGET_SEC = 0.5
# Built once: /healthz is also the benchmarks' plain endpoint (bench/http.py), kept as cheap.
ALIVE = Alive(status="ok")


class Readiness:
    """Whether Redis answers with every script loaded, checked at most once per ``ttl`` seconds.

    Probes come often and from many places; each process asks Redis one SCRIPT EXISTS per
    ``ttl`` at most, and loads a script only when Redis has lost it (a restart). While the
    request path's breaker is open the answer is "unavailable" at once, without asking Redis;
    a probe that comes while another is checking gets the last answer instead of waiting.
    """

    def __init__(
        self,
        client: redis.Redis,
        breaker: Breaker | None = None,
        ttl: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.breaker = breaker or Breaker()
        self.ttl = ttl
        self.clock = clock
        self.sources = {script.sha: script.script for script in scripts.register(client).values()}
        self._checked_at: float | None = None
        self._ready = False
        self._lock = threading.Lock()

    def ready(self) -> bool:
        """The cached answer, refreshed when older than ``ttl``; False while the breaker is open."""
        if self.breaker.is_open:
            return False  # the requests skip Redis: so does the probe, and says so at once
        if not self._lock.acquire(blocking=False):
            return self._ready  # another probe is checking: its answer is as fresh as ours
        try:
            now = self.clock()
            if self._checked_at is None or now - self._checked_at >= self.ttl:
                self._ready = self._check()
                self._checked_at = now
            return self._ready
        finally:
            self._lock.release()

    def _check(self) -> bool:
        shas = list(self.sources)

        def check() -> None:
            exists = self.client.script_exists(*shas)
            for sha, loaded in zip(shas, exists, strict=True):
                if not loaded:
                    self.client.script_load(self.sources[sha])

        try:
            self.breaker.call(check)  # a failure counts like a request's
        except StorageError as exc:
            # The reason is for the operator's log; a probe's caller learns only "unavailable".
            log.warning("not ready: Redis failed: %s", exc)
            return False
        return True


def init_app(app: Flask, client: redis.Redis, breaker: Breaker | None = None) -> None:
    """Register the probes, with one :class:`Readiness` for ``client`` (its socket timeout the
    probe's budget) answering from the request path's ``breaker``."""
    app.extensions[EXTENSION] = Readiness(client, breaker)
    app.register_blueprint(bp)


@routes.view(bp, routes.HEALTHZ)
def healthz() -> ResponseReturnValue:
    """The process is up (no dependency is checked)."""
    return ALIVE


@routes.view(bp, routes.READYZ)
def readyz() -> ResponseReturnValue:
    """Redis answers and every Lua script is loaded (checked at most once a second)."""
    readiness: Readiness = current_app.extensions[EXTENSION]
    if not readiness.ready():
        return NotReady(status="unavailable"), 503
    return Ready(status="ready", scripts=len(readiness.sources))
