"""Liveness and readiness probes."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis
from flask import Blueprint, Flask, current_app, jsonify
from flask.typing import ResponseReturnValue

from anteroom.queue import lua_scripts as scripts
from anteroom.queue.redis_link import StorageError, storage_errors

bp = Blueprint("health", __name__)
log = logging.getLogger("anteroom")
EXTENSION = "anteroom.readiness"


class Readiness:
    """Whether Redis answers with every script loaded, checked at most once per ``ttl`` seconds.

    Probes come often and from many places; each process asks Redis one SCRIPT EXISTS per
    ``ttl`` at most, and loads a script only when Redis has lost it (a restart).
    """

    def __init__(
        self, client: redis.Redis, ttl: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.ttl = ttl
        self.clock = clock
        self.sources = {script.sha: script.script for script in scripts.register(client).values()}
        self._checked_at: float | None = None
        self._ready = False
        self._lock = threading.Lock()

    def ready(self) -> bool:
        """The cached answer, refreshed when older than ``ttl``."""
        with self._lock:  # concurrent probes wait for one check instead of each making theirs
            now = self.clock()
            if self._checked_at is None or now - self._checked_at >= self.ttl:
                self._ready = self._check()
                self._checked_at = now
            return self._ready

    def _check(self) -> bool:
        shas = list(self.sources)
        try:
            with storage_errors():
                exists = self.client.script_exists(*shas)
                for sha, loaded in zip(shas, exists, strict=True):
                    if not loaded:
                        self.client.script_load(self.sources[sha])
        except StorageError as exc:
            # The reason is for the operator's log; a probe's caller learns only "unavailable".
            log.warning("not ready: Redis failed: %s", exc)
            return False
        return True


def init_app(app: Flask, client: redis.Redis) -> None:
    """Register the probes, with one :class:`Readiness` for ``client``."""
    app.extensions[EXTENSION] = Readiness(client)
    app.register_blueprint(bp)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    """The process is up (no dependency is checked)."""
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz() -> ResponseReturnValue:
    """Redis answers and every Lua script is loaded (checked at most once a second)."""
    readiness: Readiness = current_app.extensions[EXTENSION]
    if not readiness.ready():
        return jsonify(status="unavailable"), 503
    return jsonify(status="ready", scripts=len(readiness.sources))
