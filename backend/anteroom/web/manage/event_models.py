"""Shapes of the scheduled events' calls (docs/operators.md, "Scheduled events")."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from anteroom.queue.rooms import room_config as rooms
from anteroom.queue.rooms import room_events
from anteroom.web.api.api_models import Answer, Body, Wording, schema_extra
from anteroom.web.manage.management_models import FIELD_DOCS, FIELD_EXAMPLES, field_type

EVENT_ID = r"^ev[0-9a-f]{12}$"
EVENT_STATES = ("scheduled", "prequeue", "running", "ended")
TIME = {"ge": 1, "le": room_events.MAX_TIME_MS}


def _overrides_schema() -> dict[str, Any]:
    """The overrides object as the document shows it: each setting typed as the room's own."""
    from pydantic import TypeAdapter

    properties = {}
    for name in room_events.OVERRIDES:
        schema = TypeAdapter(field_type(rooms.BY_API[name])).json_schema()
        words = {"description": FIELD_DOCS[name], "examples": [FIELD_EXAMPLES[name]]}
        properties[name] = schema | words
    return {"additionalProperties": False, "minProperties": 1, "properties": properties}


def _document_overrides(schema: dict[str, Any], **extra: Any) -> None:
    """Document ``overrides`` setting by setting (the body's model takes any object and
    checks it with room_events, naming ``overrides.mode`` and so on)."""
    schema_extra(**extra)(schema)
    prop = schema["properties"]["overrides"]
    shape = _overrides_schema()
    if "anyOf" in prop:  # optional in a PATCH: the object or null
        prop["anyOf"] = [shape | {"type": "object"}, {"type": "null"}]
    else:
        prop.update(shape)


PREQUEUE_DOC = (
    "Epoch ms before startsAt: from here newcomers join the event's own pre-queue (no place yet, "
    "and nobody of it or after it admitted) and at startsAt their places are drawn among "
    "themselves, behind those already in line, ahead of later arrivals. Fixed once the "
    "pre-queue has opened."
)
OVERRIDES_DOC = (
    "The room's settings this event replaces from startsAt to endsAt, each checked as the "
    "room's own field (" + ", ".join(room_events.OVERRIDES) + "); the rest stay the room's."
)


def _time(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be an integer (epoch milliseconds)"
    return "must be a positive epoch time in milliseconds"


class _EventRules(Body):
    messages: ClassVar[dict[str, Wording]] = {
        "startsAt": _time,
        "endsAt": _time,
        "preQueueOpensAt": _time,
        "overrides": "must be an object",
    }

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        if "overrides" in data and "overrides" not in problems:
            problems.update(room_events.overrides_problems(data["overrides"]))


class EventCreate(_EventRules):
    startsAt: int = Field(
        examples=[1765112400000],
        description="Epoch ms (room clock): the overrides apply from here.",
        **TIME,
    )
    endsAt: int = Field(
        examples=[1765116000000],
        description="Epoch ms: the room's own settings apply again from here.",
        **TIME,
    )
    preQueueOpensAt: int | None = Field(
        None, examples=[1765111500000], description=PREQUEUE_DOC, **TIME
    )
    overrides: dict[str, Any] = Field(
        examples=[{"ratePerMinute": 300, "mode": "random"}], description=OVERRIDES_DOC
    )
    model_config = ConfigDict(json_schema_extra=lambda schema: _document_overrides(schema))


class EventPatch(_EventRules):
    startsAt: int | None = Field(
        None, examples=[1765112400000], description="Only while the event is scheduled.", **TIME
    )
    endsAt: int | None = Field(
        None, examples=[1765119600000], description="Not into the past.", **TIME
    )
    preQueueOpensAt: int | None = Field(None, examples=[None], description=PREQUEUE_DOC, **TIME)
    overrides: dict[str, Any] | None = Field(
        None, examples=[{"ratePerMinute": 600}], description="Replaces the event's overrides."
    )
    model_config = ConfigDict(
        json_schema_extra=lambda schema: _document_overrides(schema, minProperties=1)
    )

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        super().cross_check(data, problems)
        if not data and not problems:
            problems["body"] = "names nothing to change"


class Event(Answer):
    id: str = Field(
        examples=["ev0123456789ab"],
        description="The event's id, for changing or cancelling it.",
        pattern=EVENT_ID,
    )
    startsAt: int = Field(
        examples=[1765112400000],
        description="When its overrides start to apply, epoch ms of the room's clock.",
    )
    endsAt: int = Field(
        examples=[1765116000000], description="When the room's own settings apply again, epoch ms."
    )
    preQueueOpensAt: int | None = Field(
        None, examples=[None], description="Its own pre-queue's opening, if any."
    )
    overrides: dict[str, Any] = Field(
        examples=[{"ratePerMinute": 300}],
        description="The room's settings it replaces while it runs.",
    )
    state: Literal[EVENT_STATES] = Field(
        examples=["scheduled"],  # type: ignore[valid-type]
        description="At the answer's time on the room's clock.",
    )


class EventList(Answer):
    queue: str = Field(examples=["q0123456789abcdef"], description="The room's id.")
    now: int = Field(
        examples=[1765112340000], description="The room's clock (epoch ms) the states are given at."
    )
    clockAheadMs: int = Field(
        description="How far the room's clock is ahead of the server's real time, in ms: 0 "
        "unless the room's clock was moved for a rehearsal. A wall time meant for an event is "
        "this much later on the room's clock.",
        examples=[0],
    )
    activeEvent: str | None = Field(
        examples=[None], description="The id of the event running now, or null."
    )
    events: list[Event] = Field(
        examples=[
            [
                {
                    "id": "ev0123456789ab",
                    "startsAt": 1765112400000,
                    "endsAt": 1765116000000,
                    "overrides": {"ratePerMinute": 300},
                    "state": "scheduled",
                }
            ]
        ],
        description="Sorted by startsAt; ended events stay listed for 14 days.",
    )
