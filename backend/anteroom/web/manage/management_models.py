"""Shapes of the management API (docs/management-api.md) for rooms: bodies and answers.

The room configuration fields are typed from :data:`rooms.FIELDS`, where each is stated once:
its bounds and pattern become the model's constraints (and so the document's), and its check
runs after them, so what is refused, and its wording, are the room rules' own.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, create_model

from anteroom.queue.rooms import room_config as rooms
from anteroom.sdk import bypass_rules, crawlers, signed_agents, tokens
from anteroom.store import keystore
from anteroom.web.api.api_models import (
    Answer,
    Body,
    Wording,
    checked,
    schema_extra,
    token_example,
    token_text,
)
from anteroom.web.pages.fairness_models import Draw
from anteroom.web.visitor.visitor_models import ROOM_STATUSES, VisitorText

ROOM_ID = re.compile(r"^q[0-9a-f]{16}$")
ROOM_ID_EXAMPLE = "q0123456789abcdef"
ACTIONS = ("open", "pause", "close", "reroll")
MAX_OPENS_AT = 253_402_300_799_999  # the last millisecond of year 9999

FIELD_DOCS = {
    "slug": "Public name, unique per environment; fixed once the room is created.",
    "name": "Shown on the hosted page (escaped).",
    "ratePerMinute": "Admissions a minute (the drain).",
    "capacity": "At most this many admitted visitors active at once; null: no bound.",
    "admissionTtlSec": "Life of an admission token, and of its active slot unless refreshed.",
    "holdScore": "Sessions scoring at or above it are held.",
    "noScriptScore": "The score of a visitor who enters without JavaScript (the hosted page's "
    "plain path, no proof of work); null: holdScore - 1, so they queue. Set it at or above "
    "holdScore to hold them instead.",
    "bindIp": "Admissions carry a keyed tag of the entering network.",
    "publicFairness": "The opening's fairness report is public at /queue/{slug}/fairness and "
    "its .json; false: both answer 404 (the management API always has it).",
    "sessionRenewal": "true: an admission is renewed (through /api/v1/admission/refresh, by the "
    "edge middleware every 15 s of activity) for another admissionTtlSec while its visitor stays "
    "active. false: it ends at its expiry and the edge sends the visitor back to the line; its "
    "token says so (claim nr), so the edge decides without calling the service, and a refresh "
    "answers 403 NotRenewable. A change applies to admissions dealt from then on, and refreshes "
    "are refused at once.",
    "notify": "true: a waiting visitor may leave an e-mail address (on the hosted page, or "
    "POST /api/v1/queue/notify) and stop polling; the spot is kept until its turn, then one "
    "e-mail is sent with a single-use return link (the operator sets ANTEROOM_SMTP_URL and "
    "ANTEROOM_SMTP_FROM). The address is deleted once sent or when the spot goes.",
    "returnWindowSec": "Seconds a notified visitor's return link admits them, from their turn; "
    "their admission is held that long for them, then lasts admissionTtlSec from the return.",
    "redirectUrl": "Where the hosted page sends admitted visitors: an absolute https URL "
    "(http only for localhost, 127.0.0.1 and [::1]).",
    "maxWaiting": "Longest line; beyond it entries get QueueFull.",
    "abandonAfterSec": "A waiting spot is dropped once it has missed about three of its own "
    "polls (its pollAfterMs), and never sooner than this after its last poll: by the drain when "
    "it reaches it, and anywhere in the line by the room's sweep (a pass a minute); at most "
    "min(abandonAfterSec / 2, 150 s) later, as last-seen is booked ahead.",
    "gracePeriodSec": "Seconds a quiet waiting spot is kept beyond its cadence's allowance (max("
    "abandonAfterSec, three of its polls) after its last poll), for visitors whose device cannot "
    "poll for a while: a phone asleep, an app in the background. 0 (the default): none. A "
    "visitor who polls again within it keeps the place; a change applies from each spot's next "
    "poll (a lower grace never drops a spot sooner than its last poll promised). The line's "
    "positions count such quiet spots meanwhile, and one the drain reaches is admitted, so its "
    "admission may expire unused.",
    "pollBudgetPerSecond": "Polls a second the whole line may make beyond its front (the first "
    "max(100, 10 s of admissions), which polls every 1-2 s): further back, pollAfterMs grows with "
    "the expected wait up to 5 minutes, and is stretched beyond when the line is so long that "
    "its polls would exceed this budget.",
    "failMode": "What visitors get while Redis is unreachable: open admits, closed answers 503.",
    "mode": "How the room queues: `fifo`, one line admitted at ratePerMinute; `passthrough`, "
    "everyone admitted at once whatever the rate (still within capacity, still counted; a "
    "switch admits those already waiting in their order at the next tick); `reject`, no new "
    "entries (403 RoomClosed with the closedMessage) while those already waiting keep their "
    "spots and are still admitted; `random`, each admission at ratePerMinute drawn at random "
    "among the eligible waiting with the opening's secret seed (answers carry `odds`, the "
    "chance of admission in the next minute, instead of a place). A switch never reorders "
    "the line: back to fifo, it is in its order less those admitted.",
    "notice": "News for the line, shown on every waiting page within one poll and announced to "
    "screen readers: plain text (up to 500 characters), or such texts by page language "
    '(`{"en": …, "de": …}`: a visitor gets theirs, else English, else the first); null: none.',
    "closedMessage": 'Shown instead of the idle state when the room closes ("Sold out — thank '
    'you for waiting"): plain text or texts by language, as `notice`; null: the default.',
    "theme": "The hosted page's branding; null: none. `logoUrl`: an https image shown at "
    "160 by 48 px with alt text (its origin is added to this room's CSP img-src, nothing else); "
    "`accentColor`, `backgroundColor`: #rgb or #rrggbb, refused unless the accent reaches a "
    "4.5:1 contrast on the background (defaults #2a5bd7 on #ffffff); `title`: shown instead of "
    "`name` (1 to 200 characters). A PATCH replaces the whole theme: fields left out go back "
    "to the defaults.",
    "drawBeacon": "A public randomness beacon the draw of an opening scheduled from now on "
    "takes (drand's HTTP API: `GET {url}/public/{round}`), or null: none. `url`: the beacon's "
    "base URL: https, no credentials, a port of 1-65535, no host that is or resolves to a "
    "private, loopback, link-local or otherwise internal address (checked again at each "
    "fetch; plain http to this machine only with the operator's development setting); "
    "fetched with one 5 s deadline, no redirect followed. `genesisTime` (epoch seconds) and "
    "`period` "
    "(seconds), as its /info gives them. Scheduling an opening names the first round emitted "
    "at or after opensAt in the commitment; at opensAt the draw waits for that round's value "
    "(nobody leaves the pre-queue meanwhile) and orders with it.",
    "bypass": "Requests that pass without queueing, an ordered list of at most 50 rules: "
    '`{"kind": "path-prefix", "value": "/static/"}` (the path or below it, matched on the '
    "edge's one reading of a plain path), "
    '`{"kind": "address-range", "value": "203.0.113.0/24"}` (the client address the edge '
    "trusts, IPv4 or IPv6), "
    '`{"kind": "header" | "cookie", "name": …, "secret": …}` (that header or cookie equal to '
    "the secret, 16 to 256 printable ASCII characters). Secrets are stored hashed and never "
    'shown again: an answer has `"secret": null` and a `secretId` that changes whenever the '
    "secret is set. A PATCH replaces the whole list: give each rule you keep either its secret "
    'or, to keep the stored one, `{"kind", "name", "secretId"}` as the answer showed it. The '
    "edge middleware is given the same rules, secrets in clear, in its own configuration.",
    "crawlers": "Search-engine crawlers, verified the way each engine documents (the client "
    "address's reverse DNS name in the engine's domain, and that name's forward DNS back to the "
    "same address; a User-Agent alone proves nothing). `queue` (the default): a verified "
    "crawler gets no page of the line: the hosted page answers it 503 with Retry-After, so the "
    "waiting page is never indexed; `pass`: verified crawlers of every engine known "
    f"({', '.join(crawlers.ENGINE_NAMES)}) go through to the site without a spot, counted "
    "nowhere (not in the line, the active sessions nor the rate); a list of engines "
    '(`["google", "bing"]`): those engines\' crawlers pass, the others are queued. A claim '
    "that fails verification is an ordinary visitor. The edge middleware is given the same "
    "choice in its own configuration (`crawlers=`). Cost: one reverse and one forward DNS "
    "question per new crawler address, kept for the records' TTL.",
    "agentLaneRatePerMinute": "Admissions a minute of the signed agents' lane (an `agents` "
    "policy `lane`), apart from `ratePerMinute`: agents admitted through it never take the "
    "visitors' rate and are not in their line (a burst of one second's worth).",
    "agents": "Signed agents (Web Bot Auth: requests signed per RFC 9421 with Ed25519, their "
    "key directory named by `Signature-Agent` and fetched over HTTPS): what a verified agent "
    'gets, by its key directory\'s host, `"*"` for any verified agent: `queue` (a place in '
    "the line as a visitor's, without proof of work), `lane` (a signed join is admitted at "
    "once through the agents' own lane at `agentLaneRatePerMinute`, or told 429 with "
    "Retry-After when the lane is spent; never in the visitors' line nor their rate; the "
    "admission is not renewable) or `refuse` (403 `AgentRefused`). A host "
    'not named, when there is no `"*"`, and every request while this is `{}` (the '
    "default: no signature is checked), is an ordinary visitor. A signature that does not hold "
    "(forged, expired, replayed, a key its directory does not list) is refused 401 "
    "`SignatureRefused` naming why, and takes nobody's place. At most 50 hosts. The edge "
    "middleware is given the same setting in its own configuration (`agents=`). Cost: one "
    "Ed25519 check per signed request without an admission (0.5 to 2 ms in the "
    "standard-library SDK, bench/signed_agents.py) and one directory fetch per host, kept "
    "for its max-age.",
    "safetyNet": "Queue only when the site needs it; null: always the room's `mode`. While "
    "`calm` the room admits everyone at once (passthrough, within capacity); it switches itself "
    "to `queueing` (its own `mode`) as soon as its active sessions reach `activeSessions` or "
    "its arrivals in the last minute reach `arrivalsPerMinute`, and back to `calm` once its line "
    "(held spots too) has been empty and both measures below their thresholds for "
    "`coolDownSec` (0 to 86,400). Nobody admitted loses the admission at a switch, nobody "
    "waiting loses the place. Answers add `state` (`calm` or `queueing`) and `since` (room "
    "clock ms of the last switch; null: never switched); a PATCH may send them back, they are "
    "ignored. Each switch is in the audit log (keyId `safety-net`) and the series.",
}
# What a room's settings look like, one example each (a new field must be added here too).
FIELD_EXAMPLES: dict[str, Any] = {
    "slug": "spring-drop",
    "name": "Spring sneaker drop",
    "ratePerMinute": 120,
    "capacity": 2_000,
    "admissionTtlSec": 600,
    "holdScore": 70,
    "noScriptScore": None,
    "bindIp": False,
    "publicFairness": True,
    "sessionRenewal": True,
    "notify": False,
    "returnWindowSec": 900,
    "redirectUrl": "https://shop.example.com/drop",
    "maxWaiting": 100_000,
    "abandonAfterSec": 300,
    "gracePeriodSec": 120,
    "pollBudgetPerSecond": 2_000,
    "failMode": "closed",
    "mode": "fifo",
    "notice": {"en": "Sizes 42 and 43 are sold out.", "de": "Größen 42 und 43 sind vergriffen."},
    "closedMessage": "Sold out. Thank you for waiting.",
    "theme": {"logoUrl": "https://shop.example.com/logo.png", "accentColor": "#2a5bd7"},
    "bypass": [{"kind": "path-prefix", "value": "/static/"}],
    "crawlers": "pass",
    "agentLaneRatePerMinute": 30,
    "agents": {"*": "queue", "agent.example": "lane", "scraper.example": "refuse"},
    "safetyNet": {"activeSessions": 500, "arrivalsPerMinute": 1_000, "coolDownSec": 600},
    "drawBeacon": {
        "url": "https://api.drand.sh",
        "genesisTime": 1_595_431_050,
        "period": 30,
    },
}
_RULE_KINDS = {
    "kind": {
        "enum": ["path-prefix", "address-range"],
        "description": "What the rule matches: a path and everything below it, or the client's "
        "address within a network range.",
        "examples": ["path-prefix"],
    }
}
_SECRET_KINDS = {
    "kind": {
        "enum": ["header", "cookie"],
        "description": "Where the request carries the secret: a header, or a cookie.",
        "examples": ["header"],
    }
}
_RULE_NAME = {
    "type": "string",
    "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$",
    "description": "The header's or the cookie's name.",
    "examples": ["X-Shop-Staff"],
}
_RULE_VALUE = {
    "type": "string",
    "minLength": 1,
    "maxLength": bypass_rules.MAX_VALUE_LENGTH,
    "description": "The path prefix (starting with a slash) or the address range (CIDR).",
    "examples": ["/static/"],
}


def _bypass_type(secret: dict[str, Any], secret_id: bool, keep: bool = False) -> Any:
    """The bypass list: rules with a ``value``, or a ``name`` and a ``secret`` (``keep``: or,
    in a PATCH, a ``name`` and the ``secretId`` of the secret to keep)."""
    secret_rule = {"name": _RULE_NAME, "secret": secret}
    if secret_id:
        secret_rule["secretId"] = {
            "type": ["string", "null"],
            "description": "Changes whenever the secret is set, so a change can be told without "
            "the secret ever being shown again.",
            "examples": ["b3f1c2d4"],
        }
    rules = [
        {"properties": _RULE_KINDS | {"value": _RULE_VALUE}, "required": ["kind", "value"]},
        {"properties": _SECRET_KINDS | secret_rule, "required": ["kind", *secret_rule]},
    ]
    if keep:
        kept = {
            "type": "string",
            "pattern": "^[A-Za-z0-9_-]{1,22}$",
            "description": "In a PATCH, instead of the secret: the secretId the room's answer "
            "shows for this rule, to keep the secret it stores (a new room keeps none).",
            "examples": ["b3f1c2d4"],
        }
        rules.append(
            {
                "properties": _SECRET_KINDS | {"name": _RULE_NAME, "secretId": kept},
                "required": ["kind", "name", "secretId"],
            }
        )
    items = {"oneOf": [r | {"type": "object", "additionalProperties": False} for r in rules]}
    extra = {"maxItems": bypass_rules.MAX_RULES, "items": items}
    return Annotated[list[Any], Field(json_schema_extra=extra)]


# The bypass rules as written (secrets in clear) and as answered (no secret).
BYPASS_IN = _bypass_type(
    {
        "description": "The value the header or cookie must carry to pass; stored hashed.",
        "examples": ["a-long-random-staff-secret"],
        "type": "string",
        "minLength": bypass_rules.MIN_SECRET_LENGTH,
        "maxLength": bypass_rules.MAX_SECRET_LENGTH,
    },
    secret_id=False,
    keep=True,
)
BYPASS_OUT = _bypass_type(
    {
        "type": "null",
        "description": "Never shown back: always null in an answer.",
        "examples": [None],
    },
    secret_id=True,
)
_NET_STATE = {
    "state": {
        "enum": ["calm", "queueing"],
        "readOnly": True,
        "description": "Whether the room lets everyone in now (calm) or queues them.",
        "examples": ["calm"],
    },
    "since": {
        "type": ["integer", "null"],
        "readOnly": True,
        "description": "When the room last switched, in epoch ms of its clock; null: never.",
        "examples": [1_765_112_400_000],
    },
}
_NET_WORDS = {
    "activeSessions": ("Admitted visitors active at once that start the queueing.", 500),
    "arrivalsPerMinute": ("Arrivals in the last minute that start the queueing.", 1_000),
    "coolDownSec": (
        "Seconds the line must stay empty and both measures below them before the room is "
        "calm again.",
        600,
    ),
}


def _safety_net_type(*, answer: bool) -> Any:
    """The safety net: its thresholds (rooms.SAFETY_NET_LIMITS), and its state when answered."""
    props: dict[str, Any] = {
        name: {"type": "integer", "minimum": rule.lo, "maximum": rule.hi}
        | {"description": _NET_WORDS[name][0], "examples": [_NET_WORDS[name][1]]}
        for name, rule in rooms.SAFETY_NET_LIMITS.items()
    }
    props |= _NET_STATE
    required = [*rooms.SAFETY_NET_LIMITS, *(_NET_STATE if answer else ())]
    extra = {"additionalProperties": False, "required": required, "properties": props}
    return Annotated[dict[str, Any], Field(json_schema_extra=extra)] | None


SAFETY_NET_OUT = _safety_net_type(answer=True)
# The shape of each room rule that is not an integer range (a new field must be added here).
FIELD_TYPES: dict[str, Any] = {
    "slug": Annotated[str, Field(pattern=rooms.SLUG_PATTERN.pattern)],
    "name": Annotated[str, Field(min_length=1, max_length=rooms.NAME_MAX_LENGTH, pattern=r"\S")],
    "bindIp": bool,
    "publicFairness": bool,
    "sessionRenewal": bool,
    "notify": bool,
    "redirectUrl": Annotated[
        str,
        Field(
            max_length=rooms.REDIRECT_URL_MAX_LENGTH,
            pattern=rooms.REDIRECT_URL_PATTERN.pattern,
            json_schema_extra={"format": "uri"},
        ),
    ],
    "failMode": Literal[rooms.FAIL_MODES],  # type: ignore[valid-type]
    "mode": Literal[rooms.MODES],  # type: ignore[valid-type]
    "notice": VisitorText,
    "closedMessage": VisitorText,
    # Checked by rooms.theme_problem (which names the key at fault); the schema documents it.
    "theme": Annotated[
        dict[str, str],
        Field(
            min_length=1,
            json_schema_extra={
                "additionalProperties": False,
                "properties": {
                    "logoUrl": {
                        "type": "string",
                        "format": "uri",
                        "pattern": "^https://",
                        "description": "The brand's logo, an https image.",
                        "examples": ["https://shop.example.com/logo.png"],
                    },
                    "accentColor": {
                        "type": "string",
                        "pattern": rooms.COLOR_PATTERN.pattern,
                        "description": "Buttons and the progress bar.",
                        "examples": ["#2a5bd7"],
                    },
                    "backgroundColor": {
                        "type": "string",
                        "pattern": rooms.COLOR_PATTERN.pattern,
                        "description": "The page's background.",
                        "examples": ["#ffffff"],
                    },
                    "title": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": rooms.NAME_MAX_LENGTH,
                        "description": "The page's heading, instead of the room's name.",
                        "examples": ["The spring drop"],
                    },
                },
            },
        ),
    ]
    | None,
    "bypass": BYPASS_IN,
    "crawlers": Literal[rooms.CRAWLER_CHOICES]  # type: ignore[valid-type]
    | Annotated[
        list[Literal[crawlers.ENGINE_NAMES]],  # type: ignore[valid-type]
        Field(min_length=1, json_schema_extra={"uniqueItems": True}),
    ],
    # Checked by signed_agents.agents_problem (host or "*" → policy).
    # (the policies' enum is the schema's only: a wrong one is named by agents_problem)
    "agents": Annotated[
        dict[str, str],
        Field(
            json_schema_extra={
                "maxProperties": signed_agents.MAX_AGENT_RULES,
                "additionalProperties": {"enum": list(signed_agents.AGENT_POLICIES)},
            }
        ),
    ],
    # Checked by rooms.safety_net_problems (which _RoomBody.cross_check names part by part).
    "safetyNet": _safety_net_type(answer=False),
    # Checked by rooms.draw_beacon_problems (which _RoomBody.cross_check names part by part);
    # the schema documents its shape, queue/draw/outbound_fetch.py what its URL may reach.
    "drawBeacon": Annotated[
        dict[str, Any],
        Field(
            json_schema_extra={
                "additionalProperties": False,
                "required": ["url", "genesisTime", "period"],
                "properties": {
                    "url": {
                        "type": "string",
                        "format": "uri",
                        "description": "The beacon's base address.",
                        "examples": ["https://api.drand.sh"],
                    },
                    "genesisTime": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "When the beacon's first round was emitted, epoch seconds.",
                        "examples": [1_595_431_050],
                    },
                    "period": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 3_600,
                        "description": "Seconds between two of its rounds.",
                        "examples": [30],
                    },
                },
            },
        ),
    ]
    | None,
}
# Fields answered in another shape than they are written.
ANSWER_TYPES: dict[str, Any] = {"bypass": BYPASS_OUT, "safetyNet": SAFETY_NET_OUT}


def field_type(field: rooms.Field) -> Any:
    """The type of one configuration field, with its constraints, read from its rule."""
    rule = field.check
    if isinstance(rule, rooms.IntRange):
        number = Annotated[int, Field(ge=rule.lo, le=rule.hi)]
        return number | None if rule.nullable else number
    return FIELD_TYPES[field.api]


def _room_fields(*, create: bool, answer: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in rooms.FIELDS:
        if f.api == "slug" and not (create or answer):
            continue  # fixed once the room is created: refused by RoomPatch.cross_check
        # A PATCH may keep a bypass rule's stored secret by its secretId (a new room keeps none).
        check = rooms.bypass_patch_problem if f.api == "bypass" and not create else f.check
        kind = (
            ANSWER_TYPES.get(f.api, field_type(f))
            if answer
            else Annotated[field_type(f), checked(check)]
        )
        if answer or (create and f.required):
            default: Any = ...
        else:
            default = f.default if create else None  # PATCH: None only stands for "not sent"
        words = {"description": FIELD_DOCS[f.api], "examples": [FIELD_EXAMPLES[f.api]]}
        out[f.api] = (kind, Field(default, **words))
    return out


class _RoomBody(Body):
    messages: ClassVar[dict[str, Wording]] = {f.api: f.check for f in rooms.FIELDS}

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        if "safetyNet" in problems and "safetyNet" in data:  # named part by part
            del problems["safetyNet"]
            problems.update(rooms.safety_net_problems(data["safetyNet"]))
        if "drawBeacon" in problems and "drawBeacon" in data:  # named part by part, too
            parts = rooms.draw_beacon_problems(data["drawBeacon"])
            if parts:
                del problems["drawBeacon"]
                problems.update(parts)


RoomCreate = create_model(
    "RoomCreate", __base__=_RoomBody, **_room_fields(create=True, answer=False)
)


def _opens_at(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be an integer (epoch milliseconds)"
    return "must be a positive epoch time in milliseconds"


class _PatchRules(_RoomBody):
    messages: ClassVar[dict[str, Wording]] = _RoomBody.messages | {
        "action": 'must be "open", "pause", "close" or "reroll"',
        "opensAt": _opens_at,
    }
    model_config = ConfigDict(
        json_schema_extra=schema_extra(
            minProperties=1,
            dependentSchemas={
                "opensAt": {"required": ["action"], "properties": {"action": {"const": "open"}}}
            },
        )
    )

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        super().cross_check(data, problems)
        if "slug" in data:
            problems["slug"] = "is fixed once the room is created"
        action = data.get("action")
        if data.get("opensAt") is not None and "opensAt" not in problems and action != "open":
            problems["opensAt"] = 'is only taken with "action": "open"'
        if not problems and action is None and not set(data) - {"action", "opensAt"}:
            problems["body"] = "names no configuration field and no action"


RoomPatch = create_model(
    "RoomPatch",
    __base__=_PatchRules,
    **_room_fields(create=False, answer=False),
    action=(
        Literal[ACTIONS] | None,  # type: ignore[valid-type]
        Field(
            None,
            description="open (resume a paused room), pause (only from open), close, reroll (a "
            "new seed and commitment for a draw not yet made; the old one is listed withdrawn).",
            examples=["pause"],
        ),
    ),
    opensAt=(
        int | None,
        Field(
            None,
            ge=1,
            le=MAX_OPENS_AT,
            description='Epoch ms, only with "action": "open" on an idle room; a past one is '
            "taken as given.",
            examples=[1_765_116_000_000],
        ),
    ),
)
Room = create_model(
    "Room",
    __base__=Answer,
    id=(
        str,
        Field(
            pattern=ROOM_ID.pattern,
            description="The room's id, for the calls on one room.",
            examples=[ROOM_ID_EXAMPLE],
        ),
    ),
    environment=(
        str,
        Field(
            pattern=keystore.ENV_PATTERN.pattern,
            description="The environment the room belongs to, as its keys do.",
            examples=["prod"],
        ),
    ),
    **_room_fields(create=False, answer=True),
    status=(
        Literal[ROOM_STATUSES],  # type: ignore[valid-type]
        Field(
            description="Whether the room is open, paused (nobody let in, the line kept) or "
            "idle (closed).",
            examples=["open"],
        ),
    ),
    opensAt=(
        int | None,
        Field(
            description="When the room opens, epoch ms; null: not set.",
            examples=[1_765_116_000_000],
        ),
    ),
    draw=(
        Draw | None,
        Field(
            None,
            description="The opening's draw when it has a pre-queue (opened at a future "
            "opensAt): its commitment at once, its seed, root and count once drawn.",
            examples=[None],
        ),
    ),
)


ROOM_EXAMPLE = {"id": ROOM_ID_EXAMPLE, "environment": "prod", "status": "open"} | {
    name: value for name, value in FIELD_EXAMPLES.items() if name != "bypass"
}


class Stats(Answer):
    waiting: int = Field(ge=0, description="Visitors in the line now.", examples=[2_400])
    held: int = Field(ge=0, description="Visitors held aside for their bot score.", examples=[12])
    active: int = Field(
        ge=0, description="Admitted visitors whose admission still runs.", examples=[1_850]
    )
    admittedLastMinute: int = Field(
        ge=0, description="Visitors let in during the last minute.", examples=[120]
    )
    dealtTotal: int = Field(
        ge=0, description="Spots given out since the room opened.", examples=[9_310]
    )
    opensAt: int | None = Field(
        description="When the room opens, epoch ms; null: not scheduled.",
        examples=[1_765_116_000_000],
    )


class LineEntry(Answer):
    ticket: int = Field(
        ge=1, description="The spot's number in the order of arrival.", examples=[4_812]
    )
    position: int = Field(ge=1, description="Places to the front, 1 being next.", examples=[1])
    visitor: str = Field(
        description="The visitor's id: the same across their sessions.", examples=["v8f3a91c2"]
    )
    score: int = Field(
        ge=0, le=100, description="The visitor's bot score, 0 to 100.", examples=[10]
    )


class InForce(Answer):
    """What the room acts on now: a running event's overrides laid over its own settings, and
    the mode under its safety net."""

    ratePerMinute: int = Field(ge=1, description="Admissions a minute now.", examples=[300])
    capacity: int | None = Field(
        description="Active sessions at most now; null: no limit.", examples=[2_000]
    )
    mode: str = Field(description="The queueing mode now.", examples=["fifo"])
    event: str | None = Field(
        description="The running event's id; null: none runs.", examples=["ev0123456789ab"]
    )


class MailFailure(Answer):
    at: int = Field(description="When, room clock epoch ms.", examples=[1_765_116_030_000])
    what: str = Field(
        description="What failed: its kind and SMTP code, never the address.",
        examples=["SMTPDataError 451"],
    )


class TurnMail(Answer):
    """The room's turn e-mails (its notify setting), counted since the room was created."""

    parked: int = Field(
        ge=0, description="Spots parked now, waiting for their turn.", examples=[40]
    )
    sent: int = Field(ge=0, description="E-mails sent.", examples=[310])
    failed: int = Field(ge=0, description="Tries that failed (each retried).", examples=[2])
    givenUp: int = Field(ge=0, description="E-mails given up after their last try.", examples=[0])
    lastFailure: MailFailure | None = Field(
        description="The last failed try; null: none.",
        examples=[{"at": 1_765_116_030_000, "what": "SMTPDataError 451"}],
    )


class RoomDetail(Room):  # type: ignore[valid-type, misc]
    stats: Stats = Field(
        description="The room's numbers now.",
        examples=[
            {
                "waiting": 2_400,
                "held": 12,
                "active": 1_850,
                "admittedLastMinute": 120,
                "dealtTotal": 9_310,
                "opensAt": None,
            }
        ],
    )
    inForce: InForce = Field(
        description="What the room acts on now, a running event's changes included.",
        examples=[{"ratePerMinute": 300, "capacity": 2_000, "mode": "fifo", "event": None}],
    )
    turnMail: TurnMail = Field(
        description="Its turn e-mails: parked spots, sent, failed tries and the last failure.",
        examples=[{"parked": 40, "sent": 310, "failed": 2, "givenUp": 0, "lastFailure": None}],
    )
    line: list[LineEntry] = Field(
        default_factory=list,
        max_length=200,
        examples=[[{"ticket": 4_812, "position": 1, "visitor": "v8f3a91c2", "score": 10}]],
        description="While open or paused: the first 200 waiting spots, in drain order (a "
        "paused room drains them in this order when it resumes).",
    )


MAX_INVITES = 1_000  # per call
MAX_INVITE_USES = 1_000_000


class InviteCreate(Body):
    """``POST /queues/{id}/invites``: how many invites, until when, for how many, which lane."""

    count: int = Field(
        ge=1, le=MAX_INVITES, description="Invites to sign (each its own id).", examples=[50]
    )
    expiresAt: int = Field(
        ge=1,
        le=MAX_OPENS_AT,
        description="Epoch ms, on the room's clock; in the future.",
        examples=[1_765_202_400_000],
    )
    uses: int = Field(
        ge=1,
        le=MAX_INVITE_USES,
        description="Visitor identities each invite lets in, in all.",
        examples=[1],
    )
    lane: Literal[tokens.INVITE_LANES] = Field(  # type: ignore[valid-type]
        description="skip: admitted at once, within capacity (waits at the head of the line "
        "while it is full); priority: ahead of the public line, in invite order.",
        examples=["priority"],
    )
    messages: ClassVar[dict[str, Wording]] = {
        "count": f"must be an integer from 1 to {MAX_INVITES}",
        "expiresAt": "must be an epoch time in milliseconds, in the future",
        "uses": f"must be an integer from 1 to {MAX_INVITE_USES}",
        "lane": 'must be "skip" or "priority"',
    }


class InviteList(Answer):
    invites: list[token_text(tokens.INVITE)] = Field(  # type: ignore[valid-type]
        min_length=1,
        max_length=MAX_INVITES,
        description="Signed iv1 invites of the room, for links: /queue/<slug>?invite=….",
        examples=[[token_example(tokens.INVITE)]],
    )
    ids: list[str] = Field(
        default_factory=list,
        description="Each invite's id, in the same order: what listing and withdrawing name.",
        examples=[["Zf3kP9qLw2xYt8Bv"]],
    )


class RoomList(Answer):
    environment: str = Field(description="The environment the rooms belong to.", examples=["prod"])
    queues: list[Room] = Field(  # type: ignore[valid-type]
        description="Every room of the environment, by slug.", examples=[[ROOM_EXAMPLE]]
    )
