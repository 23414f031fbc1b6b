"""The management API's scheduled events (docs/operators.md, "Scheduled events"): list, create,
change, cancel. The rules are room_events'; the list is written compare-and-set (set_events.lua), so
two operators scheduling at once never both pass the overlap check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Response
from flask.typing import ResponseReturnValue

from anteroom.queue.line import room_engine as eng
from anteroom.queue.rooms import room_events
from anteroom.store.audit_log import AuditLog
from anteroom.web.api import api_routes as routes
from anteroom.web.manage.event_models import Event, EventList
from anteroom.web.manage.management_api import Call, forget, load_room, management_call, storage
from anteroom.web.serving import http_errors as errors

# A write raced by another one reads the list again; this many times before giving up (503).
WRITE_ATTEMPTS = 8
# What a call does to the list read at the room's now: the event (before, after); after None
# removes it. It raises the API's refusals itself.
Change = Callable[[list[dict[str, Any]], int], tuple[dict[str, Any] | None, dict[str, Any] | None]]


def shown(event: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """An event as the API shows it, with its state at ``now_ms``."""
    return dict(event) | {"state": room_events.state(event, now_ms)}


def _find(events: list[dict[str, Any]], event_id: str) -> dict[str, Any]:
    for event in events:
        if event["id"] == event_id:
            return event
    raise errors.EventNotFound(f"No event {event_id!r} in this room.")


def _write(call: Call[Any], room_id: str, change: Change) -> tuple[dict[str, Any] | None, int]:
    """Apply ``change`` to the list and write it, again from a fresh read when another write
    came first; audit it. The event written (None: removed) and the room's now."""
    s = call.services
    for _ in range(WRITE_ATTEMPTS):
        room = load_room(call.key, room_id)
        with storage():
            now = s.series.now_ms(room_id)
        events = room["events"]
        before, after = change(events, now)
        if after is None:
            listed = [e for e in events if before is None or e["id"] != before["id"]]
        else:
            try:
                listed = room_events.with_change(events, after, now)
            except room_events.EventOverlap as exc:
                other = exc.other
                start = room_events.window_start(other)  # its pre-queue's opening, if any
                raise errors.EventOverlap(
                    f"Overlaps event {other['id']} ({start} to {other['endsAt']})."
                ) from None
            except room_events.EventProblem as exc:
                raise errors.BadRequest("The event is not valid.", fields=exc.fields) from None
        try:
            with storage():
                s.engine.set_events(room_id, room["eventsVersion"], listed)
        except eng.EventsChanged:
            continue
        except eng.RoomNotFound:
            raise errors.RoomNotFound("No such room (it was just deleted).") from None
        event_id = (after or before or {}).get("id", "")
        with storage():
            AuditLog(s.redis, s.keys).record(
                call.key.environment,
                "queue.updated",
                queue=room,
                key_id=call.key.id,
                changes={f"events.{event_id}": {"before": before, "after": after}},
            )
        forget(room)
        return after, now
    raise errors.Unavailable("The room's events kept changing under this write; try again.")


def _problems(event: dict[str, Any], now: int, *, started: bool) -> None:
    problems = room_events.check_window(event, now, started=started)
    if problems:
        raise errors.BadRequest("The event is not valid.", fields=problems)


@management_call(routes.LIST_EVENTS)
def list_events(call: Call[None], room_id: str) -> ResponseReturnValue:
    """The room's events, sorted by startsAt, each with its state now (room clock)."""
    room = load_room(call.key, room_id)
    with storage():
        now, real = call.services.series.clock(room_id)
    active = room_events.running(room["events"], now)
    return EventList.model_validate(
        {
            "queue": room_id,
            "now": now,
            "clockAheadMs": now - real,
            "activeEvent": active["id"] if active else None,
            "events": [shown(e, now) for e in room["events"]],
        }
    )


@management_call(routes.CREATE_EVENT)
def create_event(call: Call[Any], room_id: str) -> ResponseReturnValue:
    """Schedule an event (400 naming the field, 409 EventOverlap naming the other event)."""
    body = call.data.model_dump(exclude_unset=True)
    event = {
        "id": room_events.new_id(),
        "startsAt": body["startsAt"],
        "endsAt": body["endsAt"],
        "overrides": body["overrides"],
    }
    if body.get("preQueueOpensAt") is not None:
        event["preQueueOpensAt"] = body["preQueueOpensAt"]

    def change(events: list[dict[str, Any]], now: int) -> tuple[None, dict[str, Any]]:
        _problems(event, now, started=False)
        return None, event

    written, now = _write(call, room_id, change)
    assert written is not None
    location = routes.UPDATE_EVENT.path.replace("{id}", room_id).replace("{eventId}", event["id"])
    return Event.model_validate(shown(written, now)), 201, {"Location": location}


@management_call(routes.UPDATE_EVENT)
def update_event(call: Call[Any], room_id: str, event_id: str) -> ResponseReturnValue:
    """Change an event: a scheduled one freely, a running one only its end and overrides."""
    body = call.data.model_dump(exclude_unset=True)

    def change(events: list[dict[str, Any]], now: int) -> tuple[dict[str, Any], dict[str, Any]]:
        event = _find(events, event_id)
        state = room_events.state(event, now)
        if state == "ended":
            raise errors.EventEnded(f"Event {event_id} has ended; it stays on record unchanged.")
        started = state == "running"
        if state != "scheduled":
            # its pre-queue (collecting, or drawn at startsAt) is tied to both times
            for name in ("startsAt", "preQueueOpensAt"):
                if name in body and body[name] != event.get(name):
                    why = "the event has started" if started else "its pre-queue is open"
                    fields = {name: f"{why}: only endsAt and overrides may change"}
                    raise errors.BadRequest("The event is not valid.", fields=fields)
        changed = event | {
            k: v for k, v in body.items() if k in ("startsAt", "endsAt", "overrides")
        }
        if "preQueueOpensAt" in body:
            changed.pop("preQueueOpensAt", None)
            if body["preQueueOpensAt"] is not None:
                changed["preQueueOpensAt"] = body["preQueueOpensAt"]
        _problems(changed, now, started=started)
        return event, changed

    written, now = _write(call, room_id, change)
    assert written is not None
    return Event.model_validate(shown(written, now))


@management_call(routes.DELETE_EVENT)
def cancel_event(call: Call[None], room_id: str, event_id: str) -> ResponseReturnValue:
    """Cancel an event: a scheduled one goes, a running one ends now and stays on record."""

    def change(
        events: list[dict[str, Any]], now: int
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        event = _find(events, event_id)
        state = room_events.state(event, now)
        if state == "ended":
            raise errors.EventEnded(f"Event {event_id} has ended; it stays on record unchanged.")
        return event, (event | {"endsAt": now} if state == "running" else None)

    _write(call, room_id, change)
    return Response(status=204)
