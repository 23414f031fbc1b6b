"""What the room scripts answer, decoded into named fields here and nowhere else.

Each script's header (``lua/<name>.lua``) gives its reply as a flat array. The long ones, a
queue answer and a room's snapshot, are built by name in Lua (``@ANSWER{status = …}``): the
assembler (queue/connection/lua_scripts.py) writes the array in the order of their slots here, and
Python
reads each slot by the same name (``raw[ANSWER_AT.status]``), so the two sides cannot disagree
on a position.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

# The slots of a queue answer (lua/_answer.lua; enter.lua's idle answer), in reply order.
ANSWER = (
    "status",
    "ticket",
    "position",
    "eta",
    "opensAt",
    "pollAfterMs",
    "roomStatus",
    "generation",
    "admittedAt",
    "expiresAt",
    "admissionJti",
    "sessionJti",
    "networkTag",
    "dealNumber",
    "score",
    "now",
    "orderKey",
    "keptUntil",
    "odds",
)
# The slots of a room's snapshot (lua/snapshot.lua; decoded by room_snapshot.decode).
SNAPSHOT = (
    "now",
    "pinned",
    "generation",
    "status",
    "opensAt",
    "rate",
    "capacity",
    "holdScore",
    "abandonAfterSec",
    "pollBudget",
    "regrouping",
    "counted",
    "revocationCount",
    "line",
    "active",
    "admittedLastMinute",
    "blocks",
    "revocations",
    "mode",
    "boundary",
    "gracePeriodSec",
)
# The slots of a room's live figures (lua/stats.lua; decoded by room_stats).
STATS = (
    "status",
    "waiting",
    "held",
    "active",
    "admittedLastMinute",
    "dealtTotal",
    "opensAt",
    "tickets",
    "peakActive",
    "now",
)
# The slots of a tick's reply (lua/tick.lua; decoded by tick_result).
TICK = ("ran", "now", "dealt", "swept", "drawDue", "switches", "prequeueDue")
# The slots of a region's summary of a room's line (lua/region_summary.lua; Engine.region_summary).
REGION_SUMMARY = (
    "now", "admitted", "active", "waiting", "rate", "capacity", "buckets", "tail",
)  # fmt: skip
# Replies a script builds by name (``@NAME{…}``, ``reply[@NAME.slot]``), for the assembler.
REPLIES = {
    "ANSWER": ANSWER,
    "SNAPSHOT": SNAPSHOT,
    "STATS": STATS,
    "TICK": TICK,
    "REGION_SUMMARY": REGION_SUMMARY,
}


def positions(slots: tuple[str, ...]) -> Any:
    """Each slot's index in the reply (0-based), as attributes: ``positions(ANSWER).status``."""
    return SimpleNamespace(**{name: i for i, name in enumerate(slots)})


ANSWER_AT = positions(ANSWER)
SNAPSHOT_AT = positions(SNAPSHOT)
STATS_AT = positions(STATS)
TICK_AT = positions(TICK)
REGION_SUMMARY_AT = positions(REGION_SUMMARY)


@dataclass(frozen=True)
class Admission:
    """An admission dealt to a spot (times in epoch ms of the room's clock)."""

    jti: str
    issued_ms: int
    expires_ms: int
    session_jti: str
    network_tag: str
    deal_number: int


@dataclass(frozen=True)
class QueueAnswer:
    """One answer of enter/poll/refresh."""

    status: str
    ticket: int | None
    position: int | None
    eta_seconds: int | None
    opens_at_ms: int | None
    poll_after_ms: int
    room_status: str
    generation: int
    admission: Admission | None
    session_jti: str
    network_tag: str = ""
    score: int = 0
    # A waiting spot's order key in the line and when it is kept until if unpolled (ms, room
    # clock): its ticket carries them (TicketClaims.order_key, kept_until) for the far poll.
    order_key: int | None = None
    kept_until_ms: int | None = None
    # A waiting spot of a random room: its chance of admission in the next minute (0..1),
    # given instead of a place (position and ETA are None).
    odds: float | None = None


@dataclass(frozen=True)
class RoomStats:
    """Live figures of a room."""

    status: str
    waiting: int
    held: int
    active: int
    admitted_last_minute: int
    dealt_total: int
    opens_at_ms: int | None
    tickets: int
    peak_active: int
    now_ms: int


@dataclass(frozen=True)
class LineEntry:
    """One spot of the line, as the drain sees it."""

    position: int
    ticket: int
    visitor: str
    score: int


@dataclass(frozen=True)
class TickResult:
    """What one call of :meth:`Engine.tick` did (``now_ms`` on the room's clock)."""

    ran: bool
    now_ms: int
    dealt: int
    swept: int
    draw_due: bool = False  # opensAt has come and the pool waits for its draw
    # The safety net's switches since the last tick that worked: (state, room clock ms), oldest
    # first; state "queueing" or "calm" (lua/_safety_net.lua).
    switches: tuple[tuple[str, int], ...] = ()
    prequeue_due: bool = False  # an event's pre-queue has closed and waits for its draw


def _none(value: Any) -> int | None:
    number = int(value)
    return None if number < 0 else number


def _slot(raw: list[Any], at: int) -> Any:
    """Slot ``at`` of a reply, None when empty or absent (a script older than the slot)."""
    value = raw[at] if len(raw) > at else None
    return None if value == "" else value


def queue_answer(raw: list[Any]) -> tuple[QueueAnswer, int]:
    """An enter/poll/refresh answer (see ``answer`` in lua/_answer.lua) and the room's clock
    when it was given (ms)."""
    a = ANSWER_AT
    status = raw[a.status]
    admission = None
    if status == "admitted":
        admission = Admission(
            jti=raw[a.admissionJti],
            issued_ms=int(raw[a.admittedAt]),
            expires_ms=int(raw[a.expiresAt]),
            session_jti=raw[a.sessionJti],
            network_tag=raw[a.networkTag],
            deal_number=int(raw[a.dealNumber]),
        )
    position = _none(raw[a.position])
    order_key, kept_until, odds = _slot(raw, a.orderKey), _slot(raw, a.keptUntil), None
    if status == "waiting" and position is None:  # only a waiting answer without a place
        odds = _slot(raw, a.odds)
    answer = QueueAnswer(
        status=status,
        ticket=_none(raw[a.ticket]),
        position=position,
        eta_seconds=_none(raw[a.eta]),
        opens_at_ms=int(raw[a.opensAt]) or None,
        poll_after_ms=int(raw[a.pollAfterMs]),
        room_status=raw[a.roomStatus],
        generation=int(raw[a.generation]),
        admission=admission,
        session_jti=raw[a.sessionJti],
        network_tag=raw[a.networkTag],
        score=int(raw[a.score]),
        order_key=int(float(order_key)) if order_key is not None else None,
        kept_until_ms=int(kept_until) if kept_until is not None else None,
        odds=float(odds) if odds is not None else None,
    )
    return answer, int(raw[a.now])


def room_stats(raw: list[Any]) -> RoomStats:
    """The reply of lua/stats.lua."""
    s = STATS_AT
    return RoomStats(
        status=raw[s.status],
        waiting=int(raw[s.waiting]),
        held=int(raw[s.held]),
        active=int(raw[s.active]),
        admitted_last_minute=int(raw[s.admittedLastMinute]),
        dealt_total=int(raw[s.dealtTotal]),
        opens_at_ms=int(raw[s.opensAt]) or None,
        tickets=int(raw[s.tickets]),
        peak_active=int(raw[s.peakActive]),
        now_ms=int(raw[s.now]),
    )


def line_entries(raw: list[Any]) -> list[LineEntry]:
    """The reply of lua/line.lua: (vid, ticket, score) triples in drain order."""
    return [
        LineEntry(
            position=i // 3 + 1, ticket=int(raw[i + 1]), visitor=raw[i], score=int(raw[i + 2])
        )
        for i in range(0, len(raw), 3)
    ]


NET_STATES = {"q": "queueing", "c": "calm"}  # the safety net's states as the scripts write them


def tick_result(raw: list[Any]) -> TickResult:
    """The reply of lua/tick.lua (one of an older tree may lack its last slots: benchmarks)."""
    k = TICK_AT
    switched = _slot(raw, k.switches) or ""
    return TickResult(
        ran=bool(int(raw[k.ran])),
        now_ms=int(raw[k.now]),
        dealt=int(raw[k.dealt]),
        swept=int(raw[k.swept]),
        draw_due=bool(int(raw[k.drawDue])),
        switches=tuple(
            (NET_STATES[entry[0]], int(entry[2:])) for entry in switched.split(";") if entry
        ),
        prequeue_due=bool(int(_slot(raw, k.prequeueDue) or 0)),
    )


def sweep_result(raw: list[Any]) -> tuple[int, bool]:
    """The reply of lua/sweep.lua: (spots dropped, pass finished)."""
    dropped, finished = raw
    return int(dropped), bool(int(finished))
