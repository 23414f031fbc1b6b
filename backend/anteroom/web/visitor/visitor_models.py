"""Shapes of the visitor API (docs/visitor-api.md): its request bodies and its answers."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from anteroom.identity import signal_rules as signals
from anteroom.identity.proof_of_work import MAX_PUZZLES, MAX_SOLUTION_LENGTH
from anteroom.queue.rooms import room_config as rooms
from anteroom.sdk import tokens
from anteroom.web.api.api_models import (
    MAX_STRING_LENGTH,
    Answer,
    Body,
    schema_extra,
    token_example,
    token_text,
)

ROOM_STATUSES = ("idle", "open", "paused")
QUEUE_STATUSES = ("idle", "waiting", "held", "admitted")

Text = Annotated[str, Field(max_length=MAX_STRING_LENGTH)]
# Only described: a key that is not a public one answers 401, as an unknown one does.
ApiKey = Annotated[
    str,
    Field(
        max_length=MAX_STRING_LENGTH,
        description="A public key.",
        json_schema_extra={"pattern": "^pk_"},
    ),
]
SIGNALS = {"webdriver": {"type": "boolean"}, "languages": {"type": "integer", "minimum": 0}}
EXAMPLE_TICKET = token_example(tokens.TICKET)
EXAMPLE_ADMISSION = token_example(tokens.ADMISSION)
EpochMs = Annotated[int, Field(description="Epoch ms.")]


Solution = Annotated[str, Field(min_length=1, max_length=MAX_SOLUTION_LENGTH)]
Solutions = Annotated[
    list[Solution],
    Field(min_length=1, max_length=MAX_PUZZLES, description="One per puzzle, in order."),
]


class Measurement(Body):
    challenge: Annotated[Text, Field(description="The measurement challenge (pc1), solved.")]
    solutions: Solutions
    hashesPerSecond: Annotated[
        float, Field(gt=0, le=1e12, description="The rate the device solved it at.")
    ]


class ChallengeRequest(Body):
    apiKey: ApiKey
    room: Annotated[Text | None, Field(description="The room the visitor is entering.")] = None
    maxPuzzles: Annotated[
        int,
        Field(
            ge=1,
            le=MAX_PUZZLES,
            description="Puzzles the client can take (1: one puzzle whose prefix is the token).",
        ),
    ] = 1
    measure: Annotated[bool, Field(description="Ask for the tiny measurement challenge first.")] = (
        False
    )
    measurement: Measurement | None = None
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent observed (as for identify): weighs on the work asked.",
        json_schema_extra={"properties": SIGNALS},
    )
    model_config = ConfigDict(json_schema_extra=schema_extra())

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        if data.get("measure") is True and data.get("measurement") is not None:
            problems.setdefault("measure", "cannot be asked together with a measurement")


class IdentifyRequest(Body):
    apiKey: ApiKey
    challenge: Annotated[Text, Field(description="The pc1 token of /challenge.")]
    solution: Annotated[
        Solution | None, Field(description="The one solution of a one-puzzle challenge.")
    ] = None
    solutions: Solutions | None = None
    # Read by the signal rules as sent (odd values weigh too): only its known names described.
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent observed, e.g. webdriver, languages.",
        json_schema_extra={"properties": SIGNALS},
    )
    previousSession: Text | None = None
    model_config = ConfigDict(json_schema_extra=schema_extra())

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        given = [name for name in ("solution", "solutions") if data.get(name) is not None]
        if not given:
            problems.setdefault("solutions", "is required (or `solution` for one puzzle)")
        elif len(given) == 2:
            problems.setdefault("solution", "cannot be sent together with `solutions`")


class ArriveRequest(Body):
    apiKey: ApiKey
    room: Annotated[Text, Field(description="The room the visitor is entering (its slug).")]
    maxPuzzles: Annotated[
        int, Field(ge=1, le=MAX_PUZZLES, description="Puzzles the client can take.")
    ] = MAX_PUZZLES
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent observed: weighs on the work asked.",
        json_schema_extra={"properties": SIGNALS},
    )


class JoinRequest(Body):
    apiKey: ApiKey
    room: Annotated[Text, Field(description="The room's slug, as asked of /arrive.")]
    challenge: Annotated[Text, Field(description="The pc1 token of /arrive (or /challenge).")]
    solutions: Solutions | None = None
    solution: Annotated[
        Solution | None, Field(description="The one solution of a one-puzzle challenge.")
    ] = None
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent observed, e.g. webdriver, languages.",
        json_schema_extra={"properties": SIGNALS},
    )
    previousSession: Annotated[
        Text | None, Field(description="An earlier st1 session: its visitor id is kept.")
    ] = None
    invite: Annotated[
        Text | None,
        Field(description="An iv1 invite of this room (the hosted page's &invite=): its lane."),
    ] = None
    model_config = ConfigDict(json_schema_extra=schema_extra())

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        IdentifyRequest.cross_check(data, problems)


class EnterRequest(Body):
    apiKey: ApiKey
    room: Text
    sessionToken: Text
    invite: Annotated[
        Text | None,
        Field(description="An iv1 invite of this room (the hosted page's &invite=): its lane."),
    ] = None


def _one_of(data: dict[str, Any], problems: dict[str, str], name: str, older: str) -> None:
    """A token sent under exactly one of its two names: ``name``, or the ``older`` one."""
    given = [n for n in (name, older) if data.get(n) is not None]
    if not given:
        problems.setdefault(name, f"is required (the older name `{older}` is still taken)")
    elif len(given) == 2:
        problems.setdefault(older, f"cannot be sent together with `{name}` (send only `{name}`)")


def _older_name(of: str) -> Any:
    """The field's first name, still taken: marked deprecated in the document."""
    return Field(
        description=f"The same token under its older name; send {of} instead. Still taken, "
        "for clients written before it was renamed; never together with the new name.",
        examples=[EXAMPLE_TICKET if of == "queueToken" else EXAMPLE_ADMISSION],
        json_schema_extra={"deprecated": True},
    )


class TicketRequest(Body):
    """A spot's token: sent to poll the line or to leave it."""

    apiKey: ApiKey
    queueToken: Annotated[
        Text | None,
        Field(
            description="The spot's token, as the last queue answer gave it (it starts qt1.). "
            "Required; also taken under its older name.",
            examples=[EXAMPLE_TICKET],
        ),
    ] = None
    ticket: Annotated[Text | None, _older_name("queueToken")] = None
    model_config = ConfigDict(json_schema_extra=schema_extra())

    @property
    def token_value(self) -> str:
        """The token, under whichever name it came."""
        return str(self.queueToken if self.queueToken is not None else self.ticket)

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        _one_of(data, problems, "queueToken", "ticket")


class RefreshRequest(Body):
    """An admission to renew."""

    apiKey: ApiKey
    admissionToken: Annotated[
        Text | None,
        Field(
            description="The admission to renew, as the last queue answer gave it (it starts "
            "ab1.). Required; also taken under its older name.",
            examples=[EXAMPLE_ADMISSION],
        ),
    ] = None
    token: Annotated[Text | None, _older_name("admissionToken")] = None
    model_config = ConfigDict(json_schema_extra=schema_extra())

    @property
    def token_value(self) -> str:
        """The admission, under whichever name it came."""
        return str(self.admissionToken if self.admissionToken is not None else self.token)

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        _one_of(data, problems, "admissionToken", "token")


class Puzzle(Answer):
    prefix: str
    difficulty: int = Field(ge=0, le=256)


class Challenge(Answer):
    challenge: token_text(tokens.CHALLENGE)  # type: ignore[valid-type]
    difficulty: int = Field(ge=0, le=256, description="Leading zero bits of each puzzle.")
    puzzles: list[Puzzle] = Field(min_length=1, max_length=MAX_PUZZLES)
    expectedHashes: int = Field(ge=1, description="Hashes the puzzles take on average.")
    tier: str = Field(description="The work rule's tier, e.g. low-calm, or measure, pinned.")
    expiresAt: EpochMs


class Arrival(Challenge):
    minPuzzles: int = Field(
        ge=1,
        le=MAX_PUZZLES,
        description=(
            "Solve at least this many of the puzzles, in order (the floor of the work). Time "
            "them: they are the device's measurement; then solve as many more, in order, as "
            "keep the whole within fitMs. Any count from minPuzzles to all of them is accepted."
        ),
    )
    fitMs: int = Field(ge=1, description="The solve time the client sizes its count to.")


SIGNAL_NAMES = tuple(sorted({rule.name for rule in signals.RULES} | {"bot"}))


class Session(Answer):
    sessionToken: token_text(tokens.SESSION)  # type: ignore[valid-type]
    expiresAt: EpochMs
    score: int = Field(ge=0, le=100)
    sig: list[Literal[SIGNAL_NAMES]]  # type: ignore[valid-type]


_Text = Annotated[str, Field(min_length=1, max_length=rooms.TEXT_MAX_LENGTH)]
# A room's text for visitors: plain text, or texts by page language ("*": every language not
# named), or null.
_TEXT_KEYS = (*rooms.PAGE_LANGUAGES, rooms.EVERY_OTHER_LANGUAGE)
VisitorText = _Text | dict[Literal[_TEXT_KEYS], _Text] | None  # type: ignore[valid-type]


class QueueAnswer(Answer):
    """The state of a spot; Retry-After is set while it asks the client to wait."""

    # Built as a plain dict by anteroom.visit.answers.answer_body only, and written as it is
    # (web/visitor/visitor_calls.py): this model documents it and checks the older calls' views.

    status: Literal[QUEUE_STATUSES]  # type: ignore[valid-type]
    room: str
    roomName: str
    redirectUrl: str
    ticket: int | None = Field(ge=1)
    position: int | None = Field(ge=1)
    etaSeconds: int | None = Field(ge=0)
    odds: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "Only while waiting in a room in mode random (position and etaSeconds are null): "
            "the chance of admission in the next minute, the admissions the room can make in "
            "a minute (its rate, within free capacity) over the eligible waiting, at most 1."
        ),
    )
    opensAt: int | None = Field(description="Epoch ms.")
    pollAfterMs: int | None = Field(ge=1)
    queueToken: token_text(tokens.TICKET, "Poll with it.") | None  # type: ignore[valid-type]
    token: token_text(tokens.ADMISSION, "The admission.") | None  # type: ignore[valid-type]
    roomStatus: Literal[ROOM_STATUSES]  # type: ignore[valid-type]
    notice: VisitorText = Field(description="The room's news for the line (see Room.notice).")
    closedMessage: VisitorText = Field(description="Shown when the room is closed (idle).")
    failOpen: Literal[True] = Field(
        default=True, description="Only on admissions given while Redis was unreachable."
    )
    receipt: str = Field(
        default="",
        pattern=r"^rc1\.[A-Za-z0-9_-]{1,32}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$",
        description=(
            "Only for a pre-queue entrant, once the draw is made: the signed receipt of their "
            "drawn rank (rc1.<kid>.<payload>.<signature>), which `anteroom verify-draw "
            "--receipt` checks against the room's fairness document."
        ),
    )
    model_config = ConfigDict(json_schema_extra=schema_extra())


class Joined(Answer):
    """An arrival's second answer: the session opened and the spot it took, together."""

    session: Session
    queue: QueueAnswer
