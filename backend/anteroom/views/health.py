"""Liveness and readiness probes."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify
from flask.typing import ResponseReturnValue

from .. import scripts
from ..storage import StorageError, storage_errors

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    """The process is up (no dependency is checked)."""
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz() -> ResponseReturnValue:
    """Redis answers and every Lua script is loaded."""
    client = current_app.extensions["anteroom"].redis
    try:
        with storage_errors():
            client.ping()
            shas = [client.script_load(scripts.source(name)) for name in scripts.OPERATIONS]
            loaded = client.script_exists(*shas)
    except StorageError as exc:
        return jsonify(status="unavailable", redis=str(exc)), 503
    if not all(loaded):
        return jsonify(status="unavailable", scripts="not loaded"), 503
    return jsonify(status="ready", scripts=len(shas))
