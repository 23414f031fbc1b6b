"""Management API (docs/management-api.md): rooms of one environment, by secret key.

Every call names its scope; a key only ever sees its own environment (a room of another one
answers 403, not its contents). Each mutation is written to the environment's audit log and
forgotten by this instance's room cache, so the visitor API of this worker sees it at once
(other workers within the cache's few seconds).
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from flask import Blueprint, Response, current_app, g, request
from flask.typing import ResponseReturnValue

from anteroom.identity import revocation
from anteroom.queue.connection.storage_errors import StorageBusy, StorageUnavailable
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line.parking import mail_counts_of
from anteroom.queue.regions.etcd_kv import EtcdError, EtcdUnavailable
from anteroom.queue.rooms import invite_book, room_events
from anteroom.queue.rooms import room_config as rooms
from anteroom.queue.rooms.room_hash import stored as stored_name
from anteroom.queue.series.room_series import aggregate
from anteroom.sdk import bypass_rules, tokens
from anteroom.service_container import Services
from anteroom.store.audit_log import AuditLog, diff
from anteroom.store.keystore import KeyRecord
from anteroom.web.api import api_routes as routes
from anteroom.web.api.api_models import Body
from anteroom.web.manage.audit_models import AuditPage, AuditQuery, Revocation, RevokeRequest
from anteroom.web.manage.management_models import (
    ROOM_ID,
    InviteCreate,
    InviteList,
    Room,
    RoomDetail,
    RoomList,
)
from anteroom.web.manage.series_models import SeriesQuery, resolve
from anteroom.web.manage.series_models import answer as series_answer
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving.json_body import parse, parse_query

bp = Blueprint("management", __name__, url_prefix="/api/management/v1")

RETRY_SEC = 5
T = TypeVar("T")
B = TypeVar("B", bound=Body | None)


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
    """The caller's key record if it is live and has ``scope``; else 401 or 403.

    The console (web/manage/console.py) calls these views for a signed-in key it has checked itself
    and puts in ``g.console_key``; every other caller sends the secret key as a bearer token.
    """
    record: KeyRecord | None = g.get("console_key")
    if record is None:
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
    out |= {"status": room["status"], "opensAt": room["opensAt"], "draw": room.get("draw")}
    return out


@dataclass(frozen=True)
class Call(Generic[B]):
    """What every management view starts from: an authorized key and its checked input."""

    services: Services
    key: KeyRecord
    env: str  # the key's environment (the ``environment`` parameter may only name it)
    data: B  # the parsed body (or query string), or None


View = Callable[..., ResponseReturnValue]


def management_call(route: routes.Route) -> Callable[[View], View]:
    """Register a view for ``route``: the key authorized for its scope, then the environment,
    then its body or query string.

    A route on one room by id takes no ``environment`` parameter: the room's own environment
    is checked against the key's by :func:`load_room`.
    """
    assert route.scope is not None  # every management route needs a scope
    scope, body, query = route.scope, route.body, route.query

    def wrap(view: View) -> View:
        @functools.wraps(view)
        def run(**url: Any) -> ResponseReturnValue:
            key = authorize(scope)
            env = environment(key) if route.takes_environment else key.environment
            data = parse(body) if body else parse_query(query) if query else None
            return view(Call(services(), key, env, data), **url)

        return routes.view(bp, route)(run)

    return wrap


def forget(room: dict[str, Any]) -> None:
    """Drop this instance's cached copy so its visitor API sees the change now."""
    cache = services().rooms
    cache.forget(("id", room["id"]))
    cache.forget(("slug", room["environment"], room["slug"]))
    services().directory.outdated()


def engine_call(fn: Callable[[], T]) -> T:
    """Run an engine call with refusals and storage failures mapped to API errors."""
    with storage():
        try:
            return fn()
        except eng.RoomNotFound:
            raise errors.RoomNotFound("No such room (it was just deleted).") from None


@management_call(routes.LIST_QUEUES)
def list_queues(call: Call[None]) -> ResponseReturnValue:
    """Every room of the environment, by slug."""
    s = call.services
    out = []
    with storage():
        for _slug, room_id in sorted(s.engine.list_rooms(call.env).items()):
            try:
                out.append(public(s.engine.get_room(room_id)))
            except eng.RoomNotFound:
                continue  # deleted between the two reads
    return RoomList.model_validate({"environment": call.env, "queues": out})


@management_call(routes.CREATE_QUEUE)
def create_queue(call: Call[Any]) -> ResponseReturnValue:
    """Create a room from its configuration (every bad field named in one 400)."""
    s, key = call.services, call.key
    config = call.data.model_dump()  # every field, defaults filled in
    with storage():
        try:
            room = s.engine.create_room(call.env, config)
        except eng.SlugTaken:
            fields = {"slug": "is taken in this environment"}
            raise errors.BadRequest("Some fields are not valid.", fields=fields) from None
        AuditLog(s.redis, s.keys).record(
            call.env,
            "queue.created",
            queue=room,
            key_id=key.id,
            changes={n: {"before": None, "after": room[n]} for n in config},
        )
    forget(room)
    location = routes.GET_QUEUE.path.replace("{id}", room["id"])
    return Room.model_validate(public(room)), 201, {"Location": location}


@management_call(routes.GET_QUEUE)
def get_queue(call: Call[None], room_id: str) -> ResponseReturnValue:
    """A room's configuration, the settings in force now, status, live stats and, while open
    or paused, the head of its line."""
    room = load_room(call.key, room_id)
    s = call.services
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
    force = room_events.in_force_at(room, stats.now_ms)
    out["inForce"] = {
        "ratePerMinute": force["ratePerMinute"],
        "capacity": force.get("capacity"),
        "mode": force.get("mode") or "fifo",
        "event": force.get("activeEvent"),
    }
    mail = engine_call(lambda: mail_counts_of(s.engine, [room_id])[0])
    out["turnMail"] = mail | {"parked": engine_call(lambda: s.parking.parked(room_id))}
    # A paused room's line is still the line, in the order it will be drained on resume.
    if stats.status in ("open", "paused"):
        line = engine_call(lambda: s.engine.line(room_id))
        out["line"] = [
            {"ticket": e.ticket, "position": e.position, "visitor": e.visitor, "score": e.score}
            for e in line
        ]
    return RoomDetail.model_validate(out)


@management_call(routes.GET_QUEUE_SERIES)
def queue_series(call: Call[SeriesQuery], room_id: str) -> ResponseReturnValue:
    """The room's numbers over time (every 10 s for a day, every minute for 14 days)."""
    room = load_room(call.key, room_id)
    series = call.services.series
    with storage():
        now_ms = series.now_ms(room_id)
        rng = resolve(call.data, now_ms)
        samples = series.samples(room_id, rng.from_ms, rng.to_ms, rng.coarse)
    window = aggregate(samples, rng.from_ms, rng.to_ms, rng.step_ms)
    return series_answer(room_id, window, rng, now_ms, room["events"])


def _act(room: dict[str, Any], action: str, opens_at: int | None) -> None:
    """Run ``action`` on ``room``, refusing with a 400 what the room's state forbids."""
    s = services()
    status = room["status"]
    if action == "pause" and status != "open":
        fields = {"action": f"pause needs an open room (this one is {status})"}
        raise errors.BadRequest("The room cannot do that now.", fields=fields)
    if action == "open" and opens_at is not None and status != "idle":
        fields = {"opensAt": f"is only taken by an idle room (this one is {status})"}
        raise errors.BadRequest("The room cannot do that now.", fields=fields)
    if action == "reroll" and (room.get("draw") is None or room["draw"].get("seed")):
        fields = {"action": "reroll needs a draw committed and not yet made"}
        raise errors.BadRequest("The room cannot do that now.", fields=fields)
    if action == "reroll" and room["draw"].get("region"):
        # a new seed in one region would split the one commitment (docs/regions-policies.md)
        fields = {
            "action": "a draw shared across regions is not re-rolled; schedule another opening"
        }
        raise errors.BadRequest("The room cannot do that now.", fields=fields)
    with storage():
        try:
            if action == "open":
                _open(s, room["id"], opens_at)
            elif action == "reroll":
                s.engine.reroll_draw(room["id"])
            elif action == "pause":
                s.engine.pause(room["id"])
            else:
                s.engine.close(room["id"])
        except eng.NoDraw:
            # Drawn (or closed) between our read and this call, or waiting for its beacon
            # with none named now.
            fields = {
                "action": "reroll needs a draw committed and not yet made (past opensAt, one "
                "waiting for its beacon takes a new round of drawBeacon, which must be set)"
            }
            raise errors.BadRequest("The room cannot do that now.", fields=fields) from None
        except eng.NotOpen:
            # Another call changed the status between our read and this one.
            fields = {"action": "pause needs an open room"}
            raise errors.BadRequest("The room cannot do that now.", fields=fields) from None
        except eng.RoomNotFound:
            raise errors.RoomNotFound("No such room (it was just deleted).") from None


def _open(s: Services, room_id: str, opens_at: int | None) -> None:
    """Open the room; a room across regions scheduled to open takes the draw every region of it
    shares (committed once in etcd: docs/regions-policies.md)."""
    cell = s.region_cell
    if opens_at is not None and cell is not None:
        try:
            if cell.schedule(room_id, opens_at):
                return
        except (EtcdError, EtcdUnavailable) as exc:
            raise errors.Unavailable(
                "The coordination store (etcd) cannot be reached to commit the opening's draw "
                "across regions; try again.",
                retry_after=1,
            ) from exc
    s.engine.open(room_id, opens_at)


@management_call(routes.UPDATE_QUEUE)
def update_queue(call: Call[Any], room_id: str) -> ResponseReturnValue:
    """Change configuration fields (not ``slug``) and/or run an action, at once for the line."""
    key, patch = call.key, call.data
    changes = patch.model_dump(exclude_unset=True, exclude={"action", "opensAt"})
    action, opens_at = patch.action, patch.opensAt
    before = load_room(key, room_id)
    s = call.services
    if "bypass" in changes:
        changes["bypass"] = _kept_secrets(s, room_id, changes["bypass"])
    # The action first: it is the part that can be refused, and then nothing has changed.
    if action:
        _act(before, action, opens_at)
    after = engine_call(lambda: s.engine.update_room(room_id, changes))
    # The draw's commitment goes on record when made, and a re-roll's before and after.
    names = [*changes, "status", "opensAt", "draw"]
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
    return Room.model_validate(public(after))


def _kept_secrets(s: Services, room_id: str, rules: Any) -> Any:
    """The PATCH's bypass rules, those given by ``secretId`` keeping their stored secrets."""
    with storage():
        stored = s.redis.hget(s.keys.room(room_id), stored_name("bypass")) or ""
    try:
        return rooms.keep_bypass_secrets(rules, stored)
    except bypass_rules.RuleError as exc:
        name, _, why = str(exc).partition(": ")
        raise errors.BadRequest("Some fields are not valid.", fields={name: why}) from None


@management_call(routes.DELETE_QUEUE)
def delete_queue(call: Call[None], room_id: str) -> ResponseReturnValue:
    """Delete the room and every key of it; its tickets answer 410, its slug is free."""
    key = call.key
    room = load_room(key, room_id)
    s = call.services
    engine_call(lambda: s.engine.delete_room(room_id))
    with storage():
        AuditLog(s.redis, s.keys).record(
            key.environment, "queue.deleted", queue=room, key_id=key.id
        )
    forget(room)
    return Response(status=204)


@management_call(routes.CREATE_INVITES)
def create_invites(call: Call[InviteCreate], room_id: str) -> ResponseReturnValue:
    """Sign ``count`` invites of the room; audited as how many, which lane, until when."""
    s, body = call.services, call.data
    room = load_room(call.key, room_id)
    with storage():
        now_ms = s.series.now_ms(room_id)  # the room's clock, which the enter script reads
    if body.expiresAt <= now_ms:
        # Said both ways: the instant for a person, the epoch ms the field takes for a script.
        now = datetime.datetime.fromtimestamp(now_ms / 1000, datetime.UTC)
        said = f"{now:%Y-%m-%d %H:%M:%S} UTC, {now_ms} ms"
        fields = {"expiresAt": f"must be in the future (the room's clock reads {said})"}
        raise errors.BadRequest("Some fields are not valid.", fields=fields)
    issued = int(now_ms // 1000)
    env, lane, uses, expires = room["environment"], body.lane, body.uses, body.expiresAt
    invites, ids = [], []
    for _ in range(body.count):
        claims = tokens.InviteClaims(room_id, env, tokens.new_id(), expires, uses, lane, issued)
        invites.append(tokens.issue(s.keyring, claims))
        ids.append(claims.invite_id)
    summary = {"count": body.count, "lane": body.lane, "uses": body.uses}
    # On record before anyone sees them, so every invite given out can be listed and withdrawn.
    terms = invite_book.terms(lane, uses, expires, int(now_ms))
    engine_call(lambda: s.engine.record_invites(room_id, ids, terms))
    with storage():
        AuditLog(s.redis, s.keys).record(
            call.key.environment,
            "queue.invites",
            queue=room,
            key_id=call.key.id,
            invites=summary | {"expiresAt": body.expiresAt},
        )
    return InviteList.model_validate({"invites": invites, "ids": ids}), 201


@management_call(routes.REVOKE_SESSION)
def revoke_session(call: Call[RevokeRequest]) -> ResponseReturnValue:
    """Revoke a session (``jti``) or visitor (``vid``) in every room of the environment.

    Its spots answer ``SessionRevoked`` at their next poll, its admissions cannot be refreshed,
    it cannot enter again; the revocation expires by itself after the longest token life.
    """
    s, env, body = call.services, call.env, call.data
    kind = body.kind
    value = getattr(body, kind)
    with storage():
        done = revocation.revoke(s.identity, env, kind, value)
        AuditLog(s.redis, s.keys).record(
            env, "session.revoked", key_id=call.key.id, session={kind: value}, reason=body.reason
        )
    answer = {"environment": env, kind: value, "reason": body.reason, "rooms": done.rooms}
    answer |= {"droppedNow": done.dropped_now, "expiresAt": done.expires_at_ms}
    return Revocation.model_validate(answer)


@management_call(routes.LIST_AUDIT_EVENTS)
def audit(call: Call[AuditQuery]) -> ResponseReturnValue:
    """The environment's audit events, newest first, ``limit`` at a time after ``cursor``."""
    s, query = call.services, call.data
    with storage():
        page = AuditLog(s.redis, s.keys).page(call.env, query.cursor or None, query.limit)
    events, next_cursor = page
    return AuditPage.model_validate(
        {"environment": call.env, "events": events, "nextCursor": next_cursor}
    )
