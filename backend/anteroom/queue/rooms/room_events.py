"""Scheduled events (docs/operators.md, "Scheduled events"): windows that override some of a room's
settings.

An event is ``{id, startsAt, endsAt, overrides}`` (epoch ms of the room's clock). The list is
kept in the room hash as JSON (``evs``), sorted by ``startsAt``; the scripts cross its
boundaries themselves on the room's clock (lua/_events.lua), so a boundary is never missed
when nobody polls and is crossed once across instances. This module holds the rules: what an
event may override, that events of a room never overlap, and what is in force at an instant
(for the web tier: texts, theme and mode, read from the same list; in_force).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from anteroom.queue.line import revocations
from anteroom.queue.rooms import room_config as rooms

# What an event may override, each checked as the room's own field is.
OVERRIDES = (
    "mode",
    "ratePerMinute",
    "capacity",
    "admissionTtlSec",
    "notice",
    "closedMessage",
    "theme",
)
MAX_EVENTS = 50  # per room, ended ones included until they are pruned
# Ended events stay listed this long (the series marks their boundaries, the console shows
# them on its timeline), then a write of the list prunes them.
KEEP_ENDED_MS = 14 * 86_400_000  # the series' coarse window
MAX_TIME_MS = 253_402_300_799_999  # the last millisecond of year 9999
EVENT_ID_PREFIX = "ev"


class EventProblem(ValueError):
    """An event cannot be written; ``fields`` names what is wrong (a 400)."""

    def __init__(self, fields: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in fields.items()))
        self.fields = dict(fields)


class EventOverlap(ValueError):
    """The event's window meets another event's (a 409 naming it)."""

    def __init__(self, other: Mapping[str, Any]) -> None:
        super().__init__(f"overlaps event {other['id']}")
        self.other = dict(other)


class EventEnded(ValueError):
    """The event has ended: it stays on record and can no longer be changed (a 409)."""


def new_id() -> str:
    """A fresh event id (``ev`` + 12 hex digits)."""
    return EVENT_ID_PREFIX + secrets.token_hex(6)


def _time(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be an integer (epoch milliseconds)"
    if not 1 <= value <= MAX_TIME_MS:
        return "must be a positive epoch time in milliseconds"
    return None


def overrides_problems(value: Any) -> dict[str, str]:
    """What is wrong with an ``overrides`` object, each setting named (``overrides.mode``)."""
    if not isinstance(value, dict):
        return {"overrides": "must be an object of " + ", ".join(OVERRIDES)}
    if not value:
        return {"overrides": "must override at least one of " + ", ".join(OVERRIDES)}
    problems: dict[str, str] = {}
    for name, setting in value.items():
        if name not in OVERRIDES:
            problems[f"overrides.{name}"] = "cannot be overridden (only " + ", ".join(OVERRIDES)
            problems[f"overrides.{name}"] += ")"
        elif why := rooms.BY_API[name].check(setting):
            problems[f"overrides.{name}"] = why
    return problems


def check_window(event: Mapping[str, Any], now_ms: int, *, started: bool) -> dict[str, str]:
    """Problems of an event's times at ``now_ms`` (room clock); ``started``: it runs already,
    so only its end may move (and not into the past)."""
    problems = {k: why for k in ("startsAt", "endsAt") if (why := _time(event.get(k)))}
    if problems:
        return problems
    if event["endsAt"] <= event["startsAt"]:
        problems["endsAt"] = "must be after startsAt"
    elif event["endsAt"] <= now_ms:
        problems["endsAt"] = "is in the past (room clock)"
    opens = event.get("preQueueOpensAt")
    if opens is not None:
        if why := _time(opens):
            problems["preQueueOpensAt"] = why
        elif opens >= event["startsAt"]:
            problems["preQueueOpensAt"] = "must be before startsAt"
    return problems


def window_start(event: Mapping[str, Any]) -> int:
    """Where an event's hold on the room begins: its pre-queue's opening, else its start."""
    opens = event.get("preQueueOpensAt")
    return int(opens) if opens is not None else int(event["startsAt"])


def overlapping(
    events: Sequence[Mapping[str, Any]], candidate: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The first event of ``events`` (other than the candidate itself) whose window meets
    the candidate's; windows are half-open, so one may end when the next starts."""
    for other in events:
        if other["id"] == candidate["id"]:
            continue
        if window_start(other) < candidate["endsAt"] and window_start(candidate) < other["endsAt"]:
            return other
    return None


def running(events: Sequence[Mapping[str, Any]], now_ms: int) -> Mapping[str, Any] | None:
    """The event in force at ``now_ms`` (startsAt <= now < endsAt), or None."""
    for event in events:
        if event["startsAt"] <= now_ms < event["endsAt"]:
            return event
    return None


def state(event: Mapping[str, Any], now_ms: int) -> str:
    """``scheduled``, ``prequeue`` (its own pre-queue collects entries), ``running`` or
    ``ended`` at ``now_ms``."""
    if now_ms < window_start(event):
        return "scheduled"
    if now_ms < event["startsAt"]:
        return "prequeue"
    return "running" if now_ms < event["endsAt"] else "ended"


def with_change(
    events: Sequence[Mapping[str, Any]], event: Mapping[str, Any], now_ms: int
) -> list[dict[str, Any]]:
    """``events`` with ``event`` added or replaced (by id), sorted, pruned of events ended
    longer than :data:`KEEP_ENDED_MS` ago; EventOverlap or EventProblem when it cannot be."""
    other = overlapping(events, event)
    if other is not None:
        raise EventOverlap(other)
    out = [dict(e) for e in events if e["id"] != event["id"]] + [dict(event)]
    out = [e for e in out if e["endsAt"] > now_ms - KEEP_ENDED_MS]
    out.sort(key=lambda e: (e["startsAt"], e["id"]))
    if len(out) > MAX_EVENTS:
        raise EventProblem({"body": f"a room keeps at most {MAX_EVENTS} events"})
    return out


def encode(events: Sequence[Mapping[str, Any]]) -> str:
    """The list as the room hash keeps it (lua/_events.lua reads it): '' for none."""
    if not events:
        return ""
    return json.dumps(list(events), ensure_ascii=False, separators=(",", ":"))


def decode(stored: str | None) -> list[dict[str, Any]]:
    """The room hash's ``evs`` field back as a list ([] for none)."""
    return list(json.loads(stored)) if stored else []


def net_mode(safety_net: Mapping[str, Any] | None, mode: str) -> str:
    """The mode in force under a room's safety net: passthrough while calm, unless ``mode``
    (the room's own or its running event's) is reject, which takes nobody new either way."""
    if safety_net is not None and safety_net.get("state") != "queueing" and mode != "reject":
        return "passthrough"
    return mode


def in_force(room: dict[str, Any], server_ms: int) -> dict[str, Any]:
    """``room`` as it stands at ``server_ms`` (the server's clock; the room's own is read from
    its ``clock``): the running event's overrides laid over its own settings (its texts and
    theme among them, ``activeEvent`` its id) and ``mode`` the mode in force under its safety
    net. lua/_in_force.lua is the same rule for the scripts. The same room when nothing changes
    it, so a room without events or safety net costs two lookups."""
    if not room.get("events") and room.get("safetyNet") is None:
        return room
    offset, pinned = room.get("clock") or (0, 0)
    return in_force_at(room, revocations.room_now_ms(server_ms, offset, pinned))


def in_force_at(room: dict[str, Any], room_ms: int) -> dict[str, Any]:
    """:func:`in_force` at ``room_ms`` of the room's own clock (as the engine's stats read it)."""
    events, net = room.get("events"), room.get("safetyNet")
    out = room
    if events:
        event = running(events, room_ms)
        if event is not None:
            out = room | dict(event["overrides"]) | {"activeEvent": event["id"]}
    own = out.get("mode") or "fifo"
    mode = net_mode(net, own)
    return out if mode == own else out | {"mode": mode}
