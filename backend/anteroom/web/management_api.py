"""Management API (SPEC "Management API"): rooms of one environment, by secret key.

Every call names its scope; a key only ever sees its own environment (a room of another one
answers 403, not its contents). Each mutation is written to the environment's audit log and
forgotten by this instance's room cache, so the visitor API of this worker sees it at once
(other workers within the cache's few seconds).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from flask import Blueprint, Response, current_app, jsonify, request
from flask.typing import ResponseReturnValue

from anteroom.identity import revocation
from anteroom.ops.audit_log import CURSOR_PATTERN, AuditLog, diff
from anteroom.ops.keystore import KeyRecord
from anteroom.queue import room_config as rooms
from anteroom.queue import room_engine as eng
from anteroom.queue.redis_link import StorageBusy, StorageUnavailable
from anteroom.service_container import Services
from anteroom.web import http_errors as errors
from anteroom.web.json_body import json_body

bp = Blueprint("management", __name__, url_prefix="/api/management/v1")

ROOM_ID = re.compile(r"^q[0-9a-f]{16}$")
SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a token's jti / vid (ours are 16 chars)
REASON_MAX_LENGTH = 500
ACTIONS = ("open", "pause", "close")
MAX_OPENS_AT = 253_402_300_799_999  # the last millisecond of year 9999
RETRY_SEC = 5
T = TypeVar("T")


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


@bp.after_request
def no_store(response: Response) -> Response:
    """Answers carry live figures and are per key: never cached anywhere."""
    response.headers["Cache-Control"] = "no-store"
    return response


@contextmanager
def storage() -> Iterator[None]:
    """Map storage failures to the API's answers (engine refusals are mapped by the caller)."""
    try:
        yield
    except StorageUnavailable:
        raise errors.Unavailable(retry_after=RETRY_SEC) from None
    except StorageBusy:
        raise errors.Busy(retry_after=RETRY_SEC) from None


def authorize(scope: str) -> KeyRecord:
    """The caller's key record if it is live and has ``scope``; else 401 or 403."""
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    challenge = {"WWW-Authenticate": 'Bearer realm="anteroom"'}
    if scheme.lower() != "bearer" or not secret.strip():
        raise errors.Unauthorized("Send Authorization: Bearer sk_….", headers=challenge)
    with storage():
        record = services().keystore.authenticate(secret.strip())
    if record is None:
        raise errors.Unauthorized("Unknown or revoked secret key.", headers=challenge)
    if scope not in record.scopes:
        raise errors.Forbidden(f"This key lacks the {scope} scope.")
    return record


def environment(key: KeyRecord) -> str:
    """The ``environment`` query parameter (default: the key's), which must be the key's."""
    env = request.args.get("environment", key.environment)
    if env != key.environment:
        raise errors.Forbidden("This key belongs to another environment.")
    return env


def load_room(key: KeyRecord, room_id: str) -> dict[str, Any]:
    """The room ``room_id`` if it exists and belongs to the key's environment."""
    if not ROOM_ID.match(room_id):
        raise errors.RoomNotFound("No such room.")
    with storage():
        try:
            room = services().engine.get_room(room_id)
        except eng.RoomNotFound:
            raise errors.RoomNotFound("No such room.") from None
    if room["environment"] != key.environment:
        raise errors.Forbidden("This room belongs to another environment.")
    return room


def public(room: dict[str, Any]) -> dict[str, Any]:
    """A room as the API shows it: id, environment, configuration, status, opensAt."""
    out = {"id": room["id"], "environment": room["environment"]}
    out |= {f.api: room[f.api] for f in rooms.FIELDS}
    out |= {"status": room["status"], "opensAt": room["opensAt"]}
    return out


def forget(room: dict[str, Any]) -> None:
    """Drop this instance's cached copy so its visitor API sees the change now."""
    cache = services().rooms
    cache.forget(("id", room["id"]))
    cache.forget(("slug", room["environment"], room["slug"]))


def engine_call(fn: Callable[[], T]) -> T:
    """Run an engine call with refusals and storage failures mapped to API errors."""
    with storage():
        try:
            return fn()
        except eng.RoomNotFound:
            raise errors.RoomNotFound("No such room (it was just deleted).") from None


@bp.get("/queues")
def list_queues() -> ResponseReturnValue:
    """Every room of the environment, by slug."""
    key = authorize("queues:read")
    env = environment(key)
    s = services()
    out = []
    with storage():
        for _slug, room_id in sorted(s.engine.list_rooms(env).items()):
            try:
                out.append(public(s.engine.get_room(room_id)))
            except eng.RoomNotFound:
                continue  # deleted between the two reads
    return jsonify({"environment": env, "queues": out})


@bp.post("/queues")
def create_queue() -> ResponseReturnValue:
    """Create a room from its configuration (every bad field named in one 400)."""
    key = authorize("queues:write")
    env = environment(key)
    s = services()
    try:
        config = rooms.validate(json_body())
    except rooms.ValidationError as exc:
        raise errors.BadRequest("Some fields are not valid.", fields=exc.fields) from None
    with storage():
        try:
            room = s.engine.create_room(env, config)
        except eng.SlugTaken:
            fields = {"slug": "is taken in this environment"}
            raise errors.BadRequest("Some fields are not valid.", fields=fields) from None
        AuditLog(s.redis, s.keys).record(
            env,
            "queue.created",
            queue=room,
            key_id=key.id,
            changes={n: {"before": None, "after": room[n]} for n in config},
        )
    forget(room)
    response = jsonify(public(room))
    response.status_code = 201
    response.headers["Location"] = f"{bp.url_prefix}/queues/{room['id']}"
    return response


@bp.get("/queues/<room_id>")
def get_queue(room_id: str) -> ResponseReturnValue:
    """A room's configuration, status, live stats and, while open, the head of its line."""
    key = authorize("queues:read")
    room = load_room(key, room_id)
    s = services()
    stats = engine_call(lambda: s.engine.stats(room_id))
    out = public(room) | {"status": stats.status, "opensAt": stats.opens_at_ms}
    out["stats"] = {
        "waiting": stats.waiting,
        "held": stats.held,
        "active": stats.active,
        "admittedLastMinute": stats.admitted_last_minute,
        "dealtTotal": stats.dealt_total,
        "opensAt": stats.opens_at_ms,
    }
    if stats.status == "open":
        line = engine_call(lambda: s.engine.line(room_id))
        out["line"] = [
            {"ticket": e.ticket, "position": e.position, "visitor": e.visitor, "score": e.score}
            for e in line
        ]
    return jsonify(out)


def _patch_body() -> tuple[dict[str, Any], str | None, int | None]:
    """(configuration changes, action, opensAt) of a PATCH; every problem in one 400."""
    data = json_body()
    action, opens_at = data.pop("action", None), data.pop("opensAt", None)
    problems: dict[str, str] = {}
    try:
        changes = rooms.validate(data, partial=True)
    except rooms.ValidationError as exc:
        problems |= exc.fields
        changes = {}
    if action is not None and action not in ACTIONS:
        problems["action"] = 'must be "open", "pause" or "close"'
    if opens_at is not None:
        if isinstance(opens_at, bool) or not isinstance(opens_at, int):
            problems["opensAt"] = "must be an integer (epoch milliseconds)"
        elif not 0 < opens_at <= MAX_OPENS_AT:
            problems["opensAt"] = "must be a positive epoch time in milliseconds"
        elif action != "open":
            problems["opensAt"] = 'is only taken with "action": "open"'
    if not problems and not changes and action is None:
        problems["body"] = "names no configuration field and no action"
    if problems:
        raise errors.BadRequest("Some fields are not valid.", fields=problems)
    return changes, action, opens_at


def _act(room: dict[str, Any], action: str, opens_at: int | None) -> None:
    """Run ``action`` on ``room``, refusing what SPEC does not allow with a 400."""
    s = services()
    status = room["status"]
    if action == "pause" and status != "open":
        fields = {"action": f"pause needs an open room (this one is {status})"}
        raise errors.BadRequest("The room cannot do that now.", fields=fields)
    if action == "open" and opens_at is not None and status != "idle":
        fields = {"opensAt": f"is only taken by an idle room (this one is {status})"}
        raise errors.BadRequest("The room cannot do that now.", fields=fields)
    with storage():
        try:
            if action == "open":
                s.engine.open(room["id"], opens_at)
            elif action == "pause":
                s.engine.pause(room["id"])
            else:
                s.engine.close(room["id"])
        except eng.NotOpen:
            # Another call changed the status between our read and this one.
            fields = {"action": "pause needs an open room"}
            raise errors.BadRequest("The room cannot do that now.", fields=fields) from None
        except eng.RoomNotFound:
            raise errors.RoomNotFound("No such room (it was just deleted).") from None


@bp.patch("/queues/<room_id>")
def update_queue(room_id: str) -> ResponseReturnValue:
    """Change configuration fields (not ``slug``) and/or run an action, at once for the line."""
    key = authorize("queues:write")
    changes, action, opens_at = _patch_body()
    before = load_room(key, room_id)
    s = services()
    # The action first: it is the part that can be refused, and then nothing has changed.
    if action:
        _act(before, action, opens_at)
    after = engine_call(lambda: s.engine.update_room(room_id, changes))
    names = [*changes, "status", "opensAt"]
    record = {"name": action, "opensAt": opens_at} if action else None
    with storage():
        AuditLog(s.redis, s.keys).record(
            key.environment,
            "queue.updated",
            queue=after,
            key_id=key.id,
            changes=diff(before, after, names),
            action=record,
        )
    forget(after)
    return jsonify(public(after))


@bp.delete("/queues/<room_id>")
def delete_queue(room_id: str) -> ResponseReturnValue:
    """Delete the room and every key of it; its tickets answer 410, its slug is free."""
    key = authorize("queues:write")
    room = load_room(key, room_id)
    s = services()
    engine_call(lambda: s.engine.delete_room(room_id))
    with storage():
        AuditLog(s.redis, s.keys).record(
            key.environment, "queue.deleted", queue=room, key_id=key.id
        )
    forget(room)
    return Response(status=204)


def _revoke_body() -> tuple[str, str, str | None]:
    """(``jti`` or ``vid``, its value, reason) of a revocation; every problem in one 400."""
    data = json_body()
    problems = {name: "unknown field" for name in data if name not in ("jti", "vid", "reason")}
    named = [k for k in revocation.KINDS if k in data]
    if len(named) != 1:
        why = "give jti or vid" if not named else "give jti or vid, not both"
        problems |= {"jti": why, "vid": why}
    for kind in named:
        value = data[kind]
        if not isinstance(value, str) or not SESSION_ID.fullmatch(value):
            problems[kind] = "must be 1 to 64 letters, digits, '-' or '_' (a token's id)"
    reason = data.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > REASON_MAX_LENGTH):
        problems["reason"] = f"must be a string of at most {REASON_MAX_LENGTH} characters"
    if problems:
        raise errors.BadRequest("Some fields are not valid.", fields=problems)
    return named[0], data[named[0]], reason


@bp.post("/sessions/revoke")
def revoke_session() -> ResponseReturnValue:
    """Revoke a session (``jti``) or visitor (``vid``) in every room of the environment.

    Its spots answer ``SessionRevoked`` at their next poll, its admissions cannot be refreshed,
    it cannot enter again; the revocation expires by itself after the longest token life.
    """
    key = authorize("queues:write")
    env = environment(key)
    kind, value, reason = _revoke_body()
    s = services()
    with storage():
        done = revocation.revoke(s, env, kind, value)
        AuditLog(s.redis, s.keys).record(
            env, "session.revoked", key_id=key.id, session={kind: value}, reason=reason
        )
    body = {"environment": env, kind: value, "reason": reason, "rooms": done.rooms}
    body |= {"droppedNow": done.dropped_now, "expiresAt": done.expires_at_ms}
    return jsonify(body)


def _is_cursor(text: str) -> bool:
    """True for a stream id Redis takes as an exclusive end: ASCII, 64-bit parts, not 0-0."""
    if not text.isascii() or not CURSOR_PATTERN.fullmatch(text):
        return False
    ms, seq = (int(part) for part in text.split("-"))
    return max(ms, seq) < 2**64 and (ms, seq) != (0, 0)


@bp.get("/audit")
def audit() -> ResponseReturnValue:
    """The environment's audit events, newest first, ``limit`` at a time after ``cursor``."""
    key = authorize("audit:read")
    env = environment(key)
    cursor = request.args.get("cursor") or None
    problems: dict[str, str] = {}
    if cursor is not None and not _is_cursor(cursor):
        problems["cursor"] = "must be a nextCursor from an earlier answer"
    raw_limit = request.args.get("limit", "50")
    digits = raw_limit.isascii() and raw_limit.isdigit() and len(raw_limit) < 5
    limit = int(raw_limit) if digits else 0
    if not 1 <= limit <= 500:
        problems["limit"] = "must be an integer from 1 to 500"
    if problems:
        raise errors.BadRequest("Some parameters are not valid.", fields=problems)
    s = services()
    with storage():
        events, next_cursor = AuditLog(s.redis, s.keys).page(env, cursor, limit)
    return jsonify({"environment": env, "events": events, "nextCursor": next_cursor})
