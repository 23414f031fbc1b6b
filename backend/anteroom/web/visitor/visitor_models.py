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
        description="The site's public key: it names the environment the call belongs to.",
        examples=["pk_prod_4f8a1c2e9b7d"],
        json_schema_extra={"pattern": "^pk_"},
    ),
]
SIGNALS = {
    "webdriver": {
        "type": "boolean",
        "description": "Whether the browser says it is driven by automation.",
        "examples": [False],
    },
    "languages": {
        "type": "integer",
        "minimum": 0,
        "description": "How many languages the browser prefers.",
        "examples": [2],
    },
}
SIGNALS_EXAMPLE = {"webdriver": False, "languages": 2}
EXAMPLE_TICKET = token_example(tokens.TICKET)
EXAMPLE_ADMISSION = token_example(tokens.ADMISSION)
EXAMPLE_SESSION = token_example(tokens.SESSION)
EXAMPLE_CHALLENGE = token_example(tokens.CHALLENGE)
EXAMPLE_INVITE = token_example(tokens.INVITE)
SOLUTION_EXAMPLE = "4f1a2b"
EpochMs = Annotated[
    int, Field(description="When, in epoch milliseconds.", examples=[1_765_116_000_000])
]


Solution = Annotated[str, Field(min_length=1, max_length=MAX_SOLUTION_LENGTH)]
ROOM_SLUG = "spring-drop"
SOLUTIONS = Field(
    description="The solutions found, one per puzzle, in the puzzles' order.",
    examples=[[SOLUTION_EXAMPLE, "9c03e7"]],
)
ONE_SOLUTION = Field(
    description="The one solution of a one-puzzle challenge (instead of the list).",
    examples=[SOLUTION_EXAMPLE],
)
PREVIOUS_SESSION = Field(
    description="An earlier session of this visitor: the visitor keeps the same identity.",
    examples=[EXAMPLE_SESSION],
)
INVITE = Field(
    description="An invite of this room (the hosted page's invite parameter): the visitor "
    "enters in its lane.",
    examples=[EXAMPLE_INVITE],
)
Solutions = Annotated[
    list[Solution],
    Field(
        min_length=1,
        max_length=MAX_PUZZLES,
        description="The solutions found, one per puzzle, in the puzzles' order.",
        examples=[[SOLUTION_EXAMPLE, "9c03e7"]],
    ),
]


class Measurement(Body):
    challenge: Annotated[
        Text,
        Field(description="The measurement challenge, solved.", examples=[EXAMPLE_CHALLENGE]),
    ]
    solutions: Solutions
    hashesPerSecond: Annotated[
        float,
        Field(gt=0, le=1e12, description="The rate the device solved it at.", examples=[250_000.0]),
    ]


class ChallengeRequest(Body):
    apiKey: ApiKey
    room: Annotated[
        Text | None,
        Field(description="The room the visitor is entering (its slug).", examples=[ROOM_SLUG]),
    ] = None
    maxPuzzles: Annotated[
        int,
        Field(
            ge=1,
            le=MAX_PUZZLES,
            description="Puzzles the client can take (1: one puzzle whose prefix is the token).",
            examples=[8],
        ),
    ] = 1
    measure: Annotated[
        bool,
        Field(description="Ask for the tiny measurement challenge first.", examples=[False]),
    ] = False
    measurement: Annotated[
        Measurement | None,
        Field(
            description="The measurement challenge, solved and timed: the work asked is sized "
            "to the device.",
            examples=[
                {
                    "challenge": EXAMPLE_CHALLENGE,
                    "solutions": [SOLUTION_EXAMPLE],
                    "hashesPerSecond": 250_000.0,
                }
            ],
        ),
    ] = None
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent observed (as for identify): weighs on the work asked.",
        examples=[SIGNALS_EXAMPLE],
        json_schema_extra={"properties": SIGNALS},
    )
    model_config = ConfigDict(json_schema_extra=schema_extra())

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        if data.get("measure") is True and data.get("measurement") is not None:
            problems.setdefault("measure", "cannot be asked together with a measurement")


class IdentifyRequest(Body):
    apiKey: ApiKey
    challenge: Annotated[
        Text,
        Field(
            description="The challenge /challenge answered, solved.", examples=[EXAMPLE_CHALLENGE]
        ),
    ]
    solution: Annotated[Solution | None, ONE_SOLUTION] = None
    solutions: Annotated[Solutions | None, SOLUTIONS] = None
    # Read by the signal rules as sent (odd values weigh too): only its known names described.
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent observed in the browser: weighs on the visitor's score.",
        examples=[SIGNALS_EXAMPLE],
        json_schema_extra={"properties": SIGNALS},
    )
    previousSession: Annotated[Text | None, PREVIOUS_SESSION] = None
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
    room: Annotated[
        Text,
        Field(description="The room the visitor is entering (its slug).", examples=[ROOM_SLUG]),
    ]
    maxPuzzles: Annotated[
        int,
        Field(ge=1, le=MAX_PUZZLES, description="Puzzles the client can take.", examples=[16]),
    ] = MAX_PUZZLES
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent observed: weighs on the work asked.",
        examples=[SIGNALS_EXAMPLE],
        json_schema_extra={"properties": SIGNALS},
    )


class JoinRequest(Body):
    apiKey: ApiKey
    room: Annotated[
        Text, Field(description="The room's slug, as asked of /arrive.", examples=[ROOM_SLUG])
    ]
    challenge: Annotated[
        Text,
        Field(
            description="The challenge /arrive (or /challenge) answered, solved.",
            examples=[EXAMPLE_CHALLENGE],
        ),
    ]
    solutions: Annotated[Solutions | None, SOLUTIONS] = None
    solution: Annotated[Solution | None, ONE_SOLUTION] = None
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent observed in the browser: weighs on the visitor's score.",
        examples=[SIGNALS_EXAMPLE],
        json_schema_extra={"properties": SIGNALS},
    )
    previousSession: Annotated[Text | None, PREVIOUS_SESSION] = None
    invite: Annotated[Text | None, INVITE] = None
    model_config = ConfigDict(json_schema_extra=schema_extra())

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        IdentifyRequest.cross_check(data, problems)


class EnterRequest(Body):
    apiKey: ApiKey
    room: Annotated[Text, Field(description="The room to enter (its slug).", examples=[ROOM_SLUG])]
    sessionToken: Annotated[
        Text,
        Field(description="The session identify answered.", examples=[EXAMPLE_SESSION]),
    ]
    invite: Annotated[Text | None, INVITE] = None


def _one_of(data: dict[str, Any], problems: dict[str, str], name: str, older: str) -> None:
    """A token sent under exactly one of its two names: ``name``, or the ``older`` one."""
    given = [n for n in (name, older) if data.get(n) is not None]
    if not given:
        problems.setdefault(name, f"is required (the older name `{older}` is still taken)")
    elif len(given) == 2:
        problems.setdefault(older, f"cannot be sent together with `{name}` (send only `{name}`)")


def _either(name: str, older: str) -> list[dict[str, Any]]:
    """The document's rule: one name or the other, never both."""
    return [{"required": [name]}, {"required": [older]}]


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
    model_config = ConfigDict(json_schema_extra=schema_extra(oneOf=_either("queueToken", "ticket")))

    @property
    def token_value(self) -> str:
        """The token, under whichever name it came."""
        return str(self.queueToken if self.queueToken is not None else self.ticket)

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        _one_of(data, problems, "queueToken", "ticket")


class NotifyRequest(TicketRequest):
    """A spot's token and the address to e-mail at its turn (a room with notify on)."""

    email: Annotated[
        str,
        Field(
            description="Where to send the e-mail at the spot's turn; kept only until it is "
            "sent or the spot goes, and never shown in any answer.",
            max_length=254,
            examples=["ada@example.com"],
        ),
    ]
    lang: Annotated[
        Literal[rooms.PAGE_LANGUAGES] | None,  # type: ignore[valid-type]
        Field(
            description="The e-mail's language (one of the hosted page's); absent: English.",
            examples=["de"],
        ),
    ] = None


class Parked(Answer):
    """The spot is parked: it keeps its place without polling until its turn."""

    status: Literal["parked"] = Field(
        description="Always parked: polling is no longer needed.", examples=["parked"]
    )
    room: str = Field(description="The room's slug.", examples=["spring-drop"])
    returnWindowSec: int = Field(
        description="How long the e-mail's link admits the visitor, from their turn (s).",
        examples=[900],
    )


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
    model_config = ConfigDict(
        json_schema_extra=schema_extra(oneOf=_either("admissionToken", "token"))
    )

    @property
    def token_value(self) -> str:
        """The admission, under whichever name it came."""
        return str(self.admissionToken if self.admissionToken is not None else self.token)

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        _one_of(data, problems, "admissionToken", "token")


class Puzzle(Answer):
    prefix: str = Field(
        description="Find a text that, appended to this one, hashes (SHA-256) to the leading "
        "zero bits asked.",
        examples=["pz.3fa9c1"],
    )
    difficulty: int = Field(
        ge=0, le=256, description="Leading zero bits the hash must have.", examples=[18]
    )


class Challenge(Answer):
    challenge: token_text(  # type: ignore[valid-type]
        tokens.CHALLENGE, "The signed challenge, sent back with its solutions."
    )
    difficulty: int = Field(
        ge=0, le=256, description="Leading zero bits of each puzzle.", examples=[18]
    )
    puzzles: list[Puzzle] = Field(
        min_length=1,
        max_length=MAX_PUZZLES,
        description="The puzzles to solve, in order.",
        examples=[[{"prefix": "pz.3fa9c1", "difficulty": 18}]],
    )
    expectedHashes: int = Field(
        ge=1, description="Hashes the puzzles take on average.", examples=[262_144]
    )
    tier: str = Field(
        description="The work rule's tier, e.g. low-calm, or measure, pinned.",
        examples=["low-calm"],
    )
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
        examples=[2],
    )
    fitMs: int = Field(
        ge=1, description="The solve time the client sizes its count to.", examples=[1_500]
    )


SIGNAL_NAMES = tuple(sorted({rule.name for rule in signals.RULES} | {"bot"}))


class Session(Answer):
    sessionToken: token_text(  # type: ignore[valid-type]
        tokens.SESSION, "The visitor's session: what entering a room takes."
    )
    expiresAt: EpochMs
    score: int = Field(
        ge=0,
        le=100,
        description="How likely the visitor is a bot, from 0 (a person) to 100; rooms hold "
        "those at or above their hold score.",
        examples=[10],
    )
    sig: list[Literal[SIGNAL_NAMES]] = Field(  # type: ignore[valid-type]
        description="The signals that raised the score, by name; empty: none.",
        examples=[["webdriver"]],
    )


_Text = Annotated[str, Field(min_length=1, max_length=rooms.TEXT_MAX_LENGTH)]
# A room's text for visitors: plain text, or texts by page language ("*": every language not
# named), or null.
_TEXT_KEYS = (*rooms.PAGE_LANGUAGES, rooms.EVERY_OTHER_LANGUAGE)
VisitorText = _Text | dict[Literal[_TEXT_KEYS], _Text] | None  # type: ignore[valid-type]


class QueueAnswer(Answer):
    """The state of a spot; Retry-After is set while it asks the client to wait."""

    # Built as a plain dict by anteroom.visit.answers.answer_body only, and written as it is
    # (web/visitor/visitor_calls.py): this model documents it and checks the older calls' views.

    status: Literal[QUEUE_STATUSES] = Field(  # type: ignore[valid-type]
        description="Where the visitor stands: waiting in the line, held for a closer look, "
        "admitted, or idle (the room is not open).",
        examples=["waiting"],
    )
    room: str = Field(description="The room's slug.", examples=[ROOM_SLUG])
    roomName: str = Field(description="The room's name, for the page.", examples=["Spring drop"])
    redirectUrl: str = Field(
        description="Where an admitted visitor is sent.",
        examples=["https://shop.example.com/drop"],
    )
    ticket: int | None = Field(
        ge=1,
        description="The spot's number in the order of arrival (not a token); null: no spot.",
        examples=[4_812],
    )
    position: int | None = Field(
        ge=1,
        description="Places to the front of the line, 1 being next; null: not waiting, or a "
        "random room.",
        examples=[37],
    )
    etaSeconds: int | None = Field(
        ge=0, description="The expected wait in seconds; null: not known.", examples=[90]
    )
    odds: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "Only while waiting in a room in mode random (position and etaSeconds are null): "
            "the chance of admission in the next minute, the admissions the room can make in "
            "a minute (its rate, within free capacity) over the eligible waiting, at most 1."
        ),
        examples=[0.25],
    )
    opensAt: int | None = Field(
        description="When the room opens, epoch ms; null: not scheduled.",
        examples=[1_765_116_000_000],
    )
    pollAfterMs: int | None = Field(
        ge=1,
        description="Milliseconds to wait before the next poll; null: no need to poll.",
        examples=[5_000],
    )
    queueToken: token_text(tokens.TICKET) | None = Field(  # type: ignore[valid-type]
        description="The spot's token: send it with the next poll (or leave); each answer may "
        "carry a fresh one, which replaces the last. Null once admitted.",
        examples=[EXAMPLE_TICKET],
    )
    token: token_text(tokens.ADMISSION) | None = Field(  # type: ignore[valid-type]
        description="The admission: the site lets the visitor in with it, and renews it with "
        "/admission/refresh. Null until admitted.",
        examples=[EXAMPLE_ADMISSION],
    )
    roomStatus: Literal[ROOM_STATUSES] = Field(  # type: ignore[valid-type]
        description="Whether the room is open, paused (the line holds still) or idle.",
        examples=["open"],
    )
    notice: VisitorText = Field(
        description="The room's news for the line (see Room.notice).",
        examples=["Sizes 42 and 43 are sold out."],
    )
    closedMessage: VisitorText = Field(
        description="Shown when the room is closed (idle).",
        examples=["Sold out. Thank you for waiting."],
    )
    failOpen: Literal[True] = Field(
        default=True,
        description="Only on admissions given while Redis was unreachable.",
        examples=[True],
    )
    receipt: str = Field(
        default="",
        pattern=r"^rc1\.[A-Za-z0-9_-]{1,32}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$",
        description=(
            "Only for a pre-queue entrant, once the draw is made: the signed receipt of their "
            "drawn rank (rc1.<kid>.<payload>.<signature>), which `anteroom verify-draw "
            "--receipt` checks against the room's fairness document."
        ),
        examples=["rc1.k2026a.eyJyYW5rIjo0Mn0.c2lnbmF0dXJl"],
    )
    model_config = ConfigDict(json_schema_extra=schema_extra())


QUEUE_EXAMPLE = {
    "status": "waiting",
    "room": ROOM_SLUG,
    "roomName": "Spring drop",
    "redirectUrl": "https://shop.example.com/drop",
    "ticket": 4_812,
    "position": 37,
    "etaSeconds": 90,
    "opensAt": None,
    "pollAfterMs": 5_000,
    "queueToken": EXAMPLE_TICKET,
    "token": None,
    "roomStatus": "open",
    "notice": None,
    "closedMessage": None,
}


class Joined(Answer):
    """An arrival's second answer: the session opened and the spot it took, together."""

    session: Session = Field(
        description="The session opened: keep it to enter again later as the same visitor.",
        examples=[
            {
                "sessionToken": EXAMPLE_SESSION,
                "expiresAt": 1_765_137_600_000,
                "score": 10,
                "sig": [],
            }
        ],
    )
    queue: QueueAnswer = Field(
        description="The spot taken: the first queue answer, as a poll gives it.",
        examples=[QUEUE_EXAMPLE],
    )
