"""Shapes of ``GET /queues/{id}/series``: its query, the range rules, and its answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, ConfigDict, Field

from anteroom.queue.series import room_series as rs
from anteroom.web.api.api_models import Answer, Body, Wording, problem
from anteroom.web.serving import http_errors as errors

MAX_POINTS = 1440
DEFAULT_SPAN_MS = 3_600_000
EPOCH_MS_DIGITS = 15


def _epoch_ms(value: Any) -> Any:
    """Query text to epoch ms: ASCII digits only."""
    digits = isinstance(value, str) and value.isascii() and value.isdigit()
    if digits and len(value) <= EPOCH_MS_DIGITS:
        return int(value)
    raise problem("must be a time in epoch milliseconds (digits only)")


def _step_ms(value: Any) -> Any:
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 10:
        number = int(value)
        if number >= rs.FINE_MS and number % rs.FINE_MS == 0:
            return number
    raise problem(f"must be a multiple of {rs.FINE_MS} ms (10 s)")


def _integer(minimum: int, example: int, multiple_of: int | None = None) -> Any:
    """A parameter's schema as a query string carries it (absent: the default described)."""

    def edit(schema: dict[str, Any]) -> None:
        described = schema.get("description", "")
        schema.clear()
        schema.update(type="integer", minimum=minimum, description=described, examples=[example])
        if multiple_of:
            schema["multipleOf"] = multiple_of

    return edit


class SeriesQuery(Body):
    """The query of ``GET /queues/{id}/series`` (texts, as a query string has them)."""

    from_: Annotated[int | None, BeforeValidator(_epoch_ms)] = Field(
        None,
        alias="from",
        description="Epoch ms (default: an hour before `to`).",
        json_schema_extra=_integer(0, 1_765_112_400_000),
    )
    to: Annotated[int | None, BeforeValidator(_epoch_ms)] = Field(
        None,
        description="Epoch ms, exclusive (default: now, by the room's clock).",
        json_schema_extra=_integer(0, 1_765_116_000_000),
    )
    step: Annotated[int | None, BeforeValidator(_step_ms)] = Field(
        None,
        description="Ms per point, a multiple of 10000 (60000 for ranges older than 24 h); "
        f"default: the smallest giving at most {MAX_POINTS} points.",
        json_schema_extra=_integer(rs.FINE_MS, 60_000, rs.FINE_MS),
    )
    messages: ClassVar[dict[str, Wording]] = {}
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


@dataclass(frozen=True)
class SeriesRange:
    """A checked range: which stored series answers it, and in what steps."""

    from_ms: int
    to_ms: int
    step_ms: int
    coarse: bool


def resolve(query: SeriesQuery, now_ms: int) -> SeriesRange:
    """Defaults filled in and the range checked against what is kept; else a 400 naming why."""
    to = query.to if query.to is not None else now_ms + 1
    start = query.from_ if query.from_ is not None else to - DEFAULT_SPAN_MS
    if start >= to:
        raise errors.BadRequest(
            "The range is empty.", fields={"from": "must be before to"}
        )  # fmt: skip
    if to - start > rs.COARSE_KEEP_MS:
        raise errors.BadRequest(
            "The range is too long.", fields={"from": "must be at most 14 days before to"}
        )
    coarse = start < now_ms - rs.FINE_KEEP_MS
    resolution = rs.COARSE_MS if coarse else rs.FINE_MS
    step = query.step
    if step is None:
        wanted = -(-(to - start) // MAX_POINTS)
        step = max(resolution, -(-wanted // resolution) * resolution)
    elif step % resolution:
        why = "must be a multiple of 60000 ms (1 min) for a range older than 24 h"
        raise errors.BadRequest("The step is finer than what is kept.", fields={"step": why})
    if -(-(to - start) // step) > MAX_POINTS:
        why = f"gives more than {MAX_POINTS} points for this range; take a larger one"
        raise errors.BadRequest("Too many points.", fields={"step": why})
    return SeriesRange(start, to, step, coarse)


Ints = list[int | None]
Floats = list[float | None]


def _said(description: str, example: Any) -> Any:
    """A field's description and example."""
    return Field(description=description, examples=[example])


def _column(description: str, *example: Any) -> Any:
    """A column: one value per point (null: no sample in that window)."""
    return Field(description=description + " Null: no sample.", examples=[list(example)])


class SeriesMark(Answer):
    """A moment the charts mark: a scheduled event's start or end (room_events)."""

    at: int = _said("When, epoch ms of the room's clock.", 1_765_114_200_000)
    kind: Literal["eventStarts", "eventEnds"] = _said(
        "Whether an event starts or ends then.", "eventStarts"
    )
    event: str = _said("The event's id.", "ev0123456789ab")


class Series(Answer):
    """Column-wise (ready for a chart): the n-th value of each list belongs to ``times[n]``."""

    id: str = _said("The room's id.", "q0123456789abcdef")
    from_: int = Field(
        alias="from", description="Epoch ms, as resolved.", examples=[1_765_112_400_000]
    )
    to: int = _said("Epoch ms, exclusive.", 1_765_116_000_000)
    step: int = _said("Milliseconds per point.", 60_000)
    resolution: int = _said("Milliseconds between stored samples: 10000 or 60000.", 10_000)
    now: int = _said("The room's clock when read, epoch ms.", 1_765_115_990_000)
    times: list[int] = _said(
        "The start of each point's window, epoch ms.", [1_765_112_400_000, 1_765_112_460_000]
    )
    status: Ints = _column("The room's state: 0 idle, 1 open, 2 paused.", 1, 1)
    waiting: Ints = _column("Visitors in the line at the window's last sample.", 2_400, 2_310)
    held: Ints = _column("Visitors held aside at the window's last sample.", 12, 11)
    active: Ints = _column("Admitted visitors active at the window's last sample.", 1_850, 1_900)
    rate: Ints = _column("Admissions a minute the room dealt at.", 120, 120)
    capacity: Ints = _column("The most active visitors allowed at once.", 2_000, 2_000)
    admitted: Ints = _column("Admissions dealt in the window.", 120, 118)
    entries: Ints = _column("Visitors who took a spot in the window.", 300, 280)
    refusedFull: Ints = _column("Entries refused in the window as the line was full.", 0, 0)
    refusedDenied: Ints = _column("Entries refused in the window as bots.", 3, 1)
    refusedBusy: Ints = _column("Entries refused in the window as Redis was full.", 0, 0)
    leaves: Ints = _column("Visitors who left the line in the window.", 4, 6)
    abandoned: Ints = _column("Spots dropped in the window as their visitor went quiet.", 2, 5)
    unusedAdmissions: Ints = _column(
        "Admissions that ran out in the window with no renewal seen: let in, never seen using"
        " the site (the edge and the agent renew an admission while its visitor browses).",
        1,
        0,
    )
    agentsQueued: Ints = _column(
        "Signed agents (Web Bot Auth) verified and queued without proof of work in the window.",
        4,
        2,
    )
    agentsRefused: Ints = _column(
        "Signed agents the room's agents setting refused (403) in the window.", 0, 1
    )
    agentsLane: Ints = _column(
        "Signed agents admitted through the agents' lane in the window (apart from the rate).",
        2,
        3,
    )
    agentsInvalid: Ints = _column(
        "Signed arrivals refused in the window as their signature did not hold (401).", 1, 0
    )
    waitP50: Floats = _column(
        "Seconds from taking a spot to admission, of those admitted: the median.", 540.0, 560.0
    )
    waitP90: Floats = _column("The same wait: nine in ten were admitted within it.", 900.0, 930.0)
    waitP99: Floats = _column("The same wait: 99 in 100 were admitted within it.", 1_150.0, 1_200.0)
    waitBuckets: list[str] = _said(
        "Upper bounds of the wait histogram, in seconds.", ["30", "60", "300", "900", "+Inf"]
    )
    waits: list[list[int] | None] = _said(
        "Admissions per wait bucket, per window (null: no sample).",
        [[0, 10, 60, 40, 10], None],
    )
    abandonedWaits: list[list[int] | None] = _said(
        "Spots that left the line before their turn (their visitor left, or went quiet and was"
        " dropped) per bucket of how long they had waited (waitBuckets), per window (null: no"
        " sample).",
        [[3, 2, 1, 0, 0], None],
    )
    marks: list[SeriesMark] = Field(
        default_factory=list,
        description="Scheduled events' starts and ends within the range, in time order.",
        examples=[[{"at": 1_765_114_200_000, "kind": "eventStarts", "event": "ev0123456789ab"}]],
    )
    safetyNet: list[Literal["calm", "queueing"] | None] = Field(
        description="The safety net's state at the window's last sample; null: no safety net "
        "(or no sample). A change from one window to the next is a switch.",
        examples=[["calm", "queueing"]],
    )
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def marks_of(events: list[dict[str, Any]], rng: SeriesRange) -> list[dict[str, Any]]:
    """The events' boundaries within ``rng``, in time order."""
    out = [
        {"at": event[edge], "kind": kind, "event": event["id"]}
        for event in events
        for edge, kind in (("startsAt", "eventStarts"), ("endsAt", "eventEnds"))
        if rng.from_ms <= event[edge] < rng.to_ms
    ]
    return sorted(out, key=lambda m: (m["at"], m["kind"] == "eventStarts"))


def answer(
    room_id: str,
    window: rs.SeriesWindow,
    rng: SeriesRange,
    now_ms: int,
    events: list[dict[str, Any]] | None = None,
) -> Series:
    """The room's :class:`Series` over ``rng``, its scheduled events' boundaries marked."""
    out: dict[str, Any] = {"id": room_id, "from": rng.from_ms, "to": rng.to_ms}
    out |= {"step": rng.step_ms, "resolution": rs.COARSE_MS if rng.coarse else rs.FINE_MS}
    out |= {"now": now_ms, "times": window.times, "status": window.status}
    out |= window.gauges | window.counters | window.quantiles
    out |= {"waitBuckets": list(rs.WAIT_BUCKETS), "waits": window.waits}
    out["abandonedWaits"] = window.abandoned
    out["marks"] = marks_of(events or [], rng)
    out["safetyNet"] = window.safety_net
    return Series.model_validate(out)
