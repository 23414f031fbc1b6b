"""Room configuration: the fields of a room (docs/operators.md), their checks and storage names.

One table defines every field once: its API name, its default and its check; its short name
in the room's Redis hash (the Lua scripts read those) is declared in room_hash.py. Validation
reports every bad field at once, so an operator fixes a request in one round.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from anteroom.queue.draw import outbound_fetch
from anteroom.queue.draw.draw_beacon import beacon_problems
from anteroom.queue.line.poll_cadence import DEFAULT_POLL_BUDGET, longest_unpolled_ms
from anteroom.queue.rooms import room_hash
from anteroom.sdk import bypass_rules, crawlers, signed_agents

SLUG_PATTERN = re.compile(r"^[a-z0-9-]{3,64}$")
NAME_MAX_LENGTH = 200
REDIRECT_URL_MAX_LENGTH = 2000
FAIL_MODES = ("open", "closed")
# Queueing modes (docs/operators.md), as the scripts read them (lua/enter.lua, _drain.lua):
# fifo, today's line; passthrough, everyone admitted at once whatever the rate (within
# capacity); reject, no new entries (RoomClosed) while those already waiting keep their spots;
# random, each admission drawn among the eligible waiting (lua/_draw_random.lua).
MODES = ("fifo", "random", "passthrough", "reject")
# The hosted page's languages (its catalogs are translations/<code>.json): a room's texts for
# visitors (notice, closedMessage) may be given per language in these.
PAGE_LANGUAGES: tuple[str, ...] = (
    "en", "es", "fr", "de", "it", "pt-BR", "nl", "pl", "tr", "ja", "ko", "zh-CN", "ar",
)  # fmt: skip
TEXT_MAX_LENGTH = 500
# Plain text: any character but the control ones (a line break or a tab is fine).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class ValidationError(ValueError):
    """Some fields are invalid; ``fields`` maps each to what is wrong with it."""

    def __init__(self, fields: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in fields.items()))
        self.fields = dict(fields)


@dataclass(frozen=True)
class IntRange:
    """Check of an integer field from ``lo`` to ``hi`` (``None`` too when ``nullable``).

    A value, not a closure, so the OpenAPI document reads its bounds from here.
    """

    lo: int
    hi: int
    nullable: bool = False

    def __call__(self, value: Any) -> str | None:
        if value is None and self.nullable:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            tail = " or null" if self.nullable else ""
            return f"must be an integer from {self.lo:,} to {self.hi:,}{tail}"
        if not self.lo <= value <= self.hi:
            return f"must be from {self.lo:,} to {self.hi:,}"
        return None


def _slug(value: Any) -> str | None:
    if not isinstance(value, str) or not SLUG_PATTERN.fullmatch(value):
        return "must match ^[a-z0-9-]{3,64}$"
    return None


def _name(value: Any) -> str | None:
    if not isinstance(value, str) or not 1 <= len(value) <= NAME_MAX_LENGTH or not value.strip():
        return f"must be a string of 1 to {NAME_MAX_LENGTH} characters"
    return None


def _bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _mode(value: Any) -> str | None:
    if value in MODES:
        return None
    listed = ", ".join(f'"{m}"' for m in MODES)
    return f"must be one of {listed}"


def _fail_mode(value: Any) -> str | None:
    return None if value in FAIL_MODES else 'must be "open" or "closed"'


def _any_case(word: str) -> str:
    """A regex of ``word`` in any ASCII case (JSON Schema patterns have no flags)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)


# The redirect URL rule: https anywhere, plain http only to this machine. One pattern, so the
# OpenAPI document states the very rule :func:`redirect_url_problem` applies.
_LOCAL = "|".join(_any_case(re.escape(host)) for host in ("localhost", "127.0.0.1", "[::1]"))
REDIRECT_URL_PATTERN = re.compile(
    f"^({_any_case('https://')}|{_any_case('http://')}([^/?#@]*@)?({_LOCAL})([:/?#]|$))"
)


def redirect_url_problem(value: Any) -> str | None:
    """Why ``value`` is not an acceptable redirect URL (absolute, :data:`REDIRECT_URL_PATTERN`)."""
    if not isinstance(value, str) or len(value) > REDIRECT_URL_MAX_LENGTH:
        return "must be an absolute URL"
    if value != value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "must be an absolute URL"  # urlsplit would quietly drop these, the store would not
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        return "must be an absolute URL"
    if not host or not parts.netloc or not parts.scheme:
        return "must be an absolute URL"
    if not REDIRECT_URL_PATTERN.match(value):
        return "must use https (http only for localhost, 127.0.0.1 or [::1])"
    return None


def beacon_url_problem(value: Any) -> str | None:
    """Why the service may not fetch ``value`` (an outbound URL, queue/draw/outbound_fetch.py)."""
    if not isinstance(value, str) or len(value) > REDIRECT_URL_MAX_LENGTH:
        return "must be an absolute URL"
    if value != value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "must be an absolute URL"
    return outbound_fetch.policy().url_problem(value)


def draw_beacon_problems(value: Any) -> dict[str, str]:
    """Each bad part of a ``drawBeacon`` value by its name (``drawBeacon.url``)."""
    return beacon_problems(value, beacon_url_problem)


def draw_beacon_problem(value: Any) -> str | None:
    """Why ``value`` is not a ``drawBeacon`` (queue/draw/draw_beacon.py), or None; the parts are
    named by validate (draw_beacon_problems)."""
    problems = draw_beacon_problems(value)
    return "; ".join(f"{k}: {v}" for k, v in problems.items()) or None


def _plain_text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip() or len(value) > TEXT_MAX_LENGTH:
        return f"must be plain text of 1 to {TEXT_MAX_LENGTH} characters"
    if _CONTROL.search(value):
        return "must be plain text (no control characters)"
    return None


# The key of a text shown in every language that has none of its own.
EVERY_OTHER_LANGUAGE = "*"


def visitor_text_problem(value: Any) -> str | None:
    """Why ``value`` is not a text for the waiting page: null, plain text of up to 500
    characters, or an object of such texts by language (``{"en": …, "de": …}``), ``"*"``
    naming the text for every language not named."""
    if value is None:
        return None
    if isinstance(value, dict):
        if not value:
            return "must name at least one language"
        for lang, text in value.items():
            if lang not in PAGE_LANGUAGES and lang != EVERY_OTHER_LANGUAGE:
                named = ", ".join(PAGE_LANGUAGES)
                return f"{lang!r} is not a language of the page ({named}, or * for the others)"
            if why := _plain_text(text):
                return f"{lang}: {why}"
        return None
    why = _plain_text(value)
    return why and f"{why}, or an object of such texts by language, or null"


THEME_KEYS = ("logoUrl", "accentColor", "backgroundColor", "title")
COLOR_PATTERN = re.compile(r"^#(?:[0-9a-fA-F]{3}){1,2}$")
# What the page uses when a theme leaves a colour out: its own accent on a white card.
DEFAULT_ACCENT, DEFAULT_BACKGROUND = "#2a5bd7", "#ffffff"
MIN_CONTRAST = 4.5  # WCAG 2 AA for body text: the accent is used for text on the background
_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")


def _rgb(color: str) -> tuple[int, int, int]:
    digits = color[1:]
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)


def luminance(color: str) -> float:
    """Relative luminance of a ``#rgb``/``#rrggbb`` colour (WCAG 2)."""

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in _rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(one: str, other: str) -> float:
    """WCAG 2 contrast ratio of two colours, from 1 to 21."""
    a, b = sorted((luminance(one), luminance(other)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def logo_origin(url: str) -> str:
    """The origin (``https://host[:port]``) of a checked ``logoUrl``, as a CSP source."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"https://{parts.hostname}{port}"


def _logo_url(value: Any) -> str | None:
    why = "must be an absolute https URL of an image"
    if not isinstance(value, str) or len(value) > REDIRECT_URL_MAX_LENGTH:
        return why
    if value != value.strip() or any(ord(c) <= 32 or ord(c) == 127 for c in value):
        return why
    try:
        parts = urlsplit(value)
        host, _ = parts.hostname, parts.port  # a bad port raises here
    except ValueError:
        return why
    if parts.scheme.lower() != "https" or not host or parts.username or parts.password:
        return why
    if parts.port == 0:
        return "must be an https URL with a port from 1 to 65535 (port 0 never loads)"
    if not _HOST.fullmatch(host) or any(c in value for c in "\"'<>`"):
        return "must be an https URL with a plain host name (IDN as punycode)"
    return None


def theme_problem(value: Any) -> str | None:
    """Why ``value`` is not a room theme: null, or an object of ``logoUrl`` (https),
    ``accentColor`` and ``backgroundColor`` (``#rrggbb``, readable together) and ``title``."""
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        return "must be an object of " + ", ".join(THEME_KEYS) + ", or null"
    for key, item in value.items():
        if key not in THEME_KEYS:
            return f"{key}: unknown field (known: {', '.join(THEME_KEYS)})"
        if key == "logoUrl":
            why = _logo_url(item)
        elif key == "title":
            why = _name(item) or (_CONTROL.search(item) and "must be plain text") or None
        else:
            ok = isinstance(item, str) and COLOR_PATTERN.fullmatch(item)
            why = None if ok else "must be a colour #rgb or #rrggbb"
        if why:
            return f"{key}: {why}"
    accent = value.get("accentColor", DEFAULT_ACCENT)
    background = value.get("backgroundColor", DEFAULT_BACKGROUND)
    ratio = contrast(accent, background)
    if ratio < MIN_CONTRAST:
        return (
            f"accentColor {accent} on backgroundColor {background} has a contrast of "
            f"{ratio:.2f}:1; at least {MIN_CONTRAST}:1 is needed to be readable"
        )
    return None


def _json_or_empty(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _from_json_or_empty(stored: str) -> Any:
    return json.loads(stored) if stored else None


def bypass_problem(value: Any) -> str | None:
    """Why ``value`` is not a list of bypass rules (``bypass[2].value: not a CIDR``), or None."""
    try:
        bypass_rules.parse_rules(value)
    except bypass_rules.RuleError as exc:
        return str(exc)
    return None


def bypass_patch_problem(value: Any) -> str | None:
    """As :func:`bypass_problem`, a rule with a secret also given by its ``secretId`` alone (to
    keep its stored secret: a PATCH replaces the whole list, and secrets are never shown)."""
    try:
        bypass_rules.parse_rules(value, keep=True)
    except bypass_rules.RuleError as exc:
        return str(exc)
    return None


def keep_bypass_secrets(value: Any, stored: str) -> Any:
    """``value`` (a PATCH's rules) with each rule given by its ``secretId`` replaced by the
    stored rule it names (``stored``: the room hash's field); RuleError for one it names not."""
    return bypass_rules.keep_secrets(value, stored_bypass(stored))


def _bypass_stored(value: Any) -> str:
    """The rules as the room hash keeps them: secrets hashed (scrypt), '' for none."""
    rules = [rule.stored() for rule in bypass_rules.parse_rules(value)]
    return _json_or_empty(rules or None)


def _bypass_shown(stored: str) -> list[dict[str, Any]]:
    """The rules as the API shows them: never a secret nor its hash (``Rule.public``)."""
    return [rule.public() for rule in stored_bypass(stored)]


def stored_bypass(stored: str) -> list[bypass_rules.Rule]:
    """The rules of a room hash's ``bypass`` field, secrets as hashes (to match requests)."""
    return bypass_rules.parse_rules(json.loads(stored), stored=True) if stored else []


# Search crawlers (docs/operators.md, "Search crawlers"): "queue" (the default: a verified
# crawler is answered 503 on the hosted page, as the line is no page to index), "pass" (every
# engine of sdk/crawlers.ENGINES goes through without a spot, uncounted), or the engines that pass.
CRAWLER_CHOICES = ("queue", "pass")


def crawlers_problem(value: Any) -> str | None:
    """Why ``value`` is not a ``crawlers`` setting: "queue", "pass" or a list of engines."""
    engines = ", ".join(f'"{name}"' for name in crawlers.ENGINE_NAMES)
    why = f'must be "queue", "pass" or a list of engines among {engines}'
    if value in CRAWLER_CHOICES:
        return None
    if not isinstance(value, list) or not value:
        return why
    for i, name in enumerate(value):
        if name not in crawlers.ENGINE_NAMES:
            return f"[{i}]: {name!r} is not an engine ({engines})"
    if len(set(value)) != len(value):
        return "names an engine twice"
    return None


def _crawlers_stored(value: Any) -> str:
    return value if isinstance(value, str) else ",".join(value)


def _crawlers_shown(stored: str) -> str | list[str]:
    if stored in CRAWLER_CHOICES or not stored:
        return stored or "queue"
    return stored.split(",")


def agent_rules(room: Mapping[str, Any]) -> dict[str, str]:
    """The room's ``agents`` setting (signed agents' policies by key directory host; {}: none)."""
    rules = room.get("agents")
    return rules if isinstance(rules, dict) else {}


def passed_engines(room: Mapping[str, Any]) -> tuple[crawlers.Engine, ...]:
    """The engines whose verified crawlers ``room`` lets through (none when it queues them)."""
    chosen = room.get("crawlers") or "queue"
    if chosen == "queue":
        return ()
    if chosen == "pass":
        return crawlers.ENGINES
    return tuple(e for e in crawlers.ENGINES if e.name in chosen)


# The safety net (docs/operators.md; lua/_safety_net.lua): null, or thresholds from which a
# calm room (passthrough) starts queueing in its own mode, and the quiet it needs to turn back.
# `state` and `since` are what the room's GET adds (room_engine.room_from_stored): taken back
# in a PATCH, and ignored, so a GET's room can be sent as it is.
SAFETY_NET_LIMITS: dict[str, IntRange] = {
    "activeSessions": IntRange(1, 10_000_000),
    "arrivalsPerMinute": IntRange(1, 10_000_000),
    "coolDownSec": IntRange(0, 86_400),
}
SAFETY_NET_SHOWN = ("state", "since")


def safety_net_problems(value: Any) -> dict[str, str]:
    """Each bad part of a ``safetyNet`` value, by its name (``safetyNet.coolDownSec``)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        return {"safetyNet": "must be an object of " + ", ".join(SAFETY_NET_LIMITS) + ", or null"}
    problems = {
        f"safetyNet.{key}": "unknown field (known: " + ", ".join(SAFETY_NET_LIMITS) + ")"
        for key in value
        if key not in SAFETY_NET_LIMITS and key not in SAFETY_NET_SHOWN
    }
    for key, check in SAFETY_NET_LIMITS.items():
        why = check(value[key]) if key in value else "is required"
        if why:
            problems[f"safetyNet.{key}"] = why
    return problems


def _safety_net(value: Any) -> str | None:
    # The parts are named by validate (safety_net_problems); this only says that one is bad.
    return "is invalid" if safety_net_problems(value) else None


def _safety_net_stored(value: Any) -> str:
    """The room hash's ``snc``: "activeSessions:arrivalsPerMinute:coolDownSec", '' for none."""
    if value is None:
        return ""
    return ":".join(str(int(value[key])) for key in SAFETY_NET_LIMITS)


def _safety_net_shown(stored: str) -> dict[str, int] | None:
    if not stored:
        return None
    return dict(zip(SAFETY_NET_LIMITS, (int(x) for x in stored.split(":")), strict=True))


@dataclass(frozen=True)
class Field:
    """One configuration field; ``encode``/``decode`` store a value that is not a scalar.

    Its name in the room hash (``stored``) is room_hash.py's, under the same API name.
    """

    api: str
    default: Any
    check: Callable[[Any], str | None]
    required: bool = False
    encode: Callable[[Any], str] | None = None
    decode: Callable[[str], Any] | None = None
    stored: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stored", room_hash.stored(self.api))


FIELDS: tuple[Field, ...] = (
    Field("slug", None, _slug, required=True),
    Field("name", None, _name, required=True),
    Field("ratePerMinute", 60, IntRange(1, 100_000)),
    Field("capacity", None, IntRange(1, 10_000_000, nullable=True)),
    Field("admissionTtlSec", 300, IntRange(30, 3_600)),
    Field("holdScore", 70, IntRange(1, 100)),
    # The score of a visitor who comes without JavaScript (no proof of work): null stands for
    # just below holdScore, so they queue; at or above it, the operator holds them instead.
    Field(
        "noScriptScore",
        None,
        IntRange(0, 100, nullable=True),
        False,
        lambda v: "" if v is None else str(v),
        lambda stored: int(stored) if stored else None,
    ),
    Field("bindIp", False, _bool),
    # The opening's fairness report at /queue/<slug>/fairness(.json); the management API has it
    # whatever this says.
    Field("publicFairness", True, _bool),
    # false: admissions say they are not renewable (tokens.NOT_RENEWABLE) and end at their
    # expiry; read by the web tier only (the refresh is refused before the engine is called).
    Field("sessionRenewal", True, _bool),
    Field("redirectUrl", None, redirect_url_problem, required=True),
    Field("maxWaiting", 100_000, IntRange(1, 10_000_000)),
    Field("abandonAfterSec", 300, IntRange(60, 86_400)),
    # Seconds a quiet spot (a phone asleep) is kept beyond what its own cadence allows; 0: none.
    Field("gracePeriodSec", 0, IntRange(0, 86_400)),
    Field("pollBudgetPerSecond", DEFAULT_POLL_BUDGET, IntRange(100, 1_000_000)),
    Field("failMode", "closed", _fail_mode),
    Field("mode", "fifo", _mode),
    # Texts for the waiting page, stored as JSON ("" for none); read by the web tier only.
    Field("notice", None, visitor_text_problem, False, _json_or_empty, _from_json_or_empty),
    Field(
        "closedMessage",
        None,
        visitor_text_problem,
        False,
        _json_or_empty,
        _from_json_or_empty,
    ),
    Field("theme", None, theme_problem, False, _json_or_empty, _from_json_or_empty),
    # Stored with the secrets hashed; read back as the API shows them (web tier and edge only).
    Field("bypass", [], bypass_problem, False, _bypass_stored, _bypass_shown),
    # A public randomness beacon the next scheduled opening's draw names at commitment.
    Field("drawBeacon", None, draw_beacon_problem, False, _json_or_empty, _from_json_or_empty),
    Field("safetyNet", None, _safety_net, False, _safety_net_stored, _safety_net_shown),
    # "Tell me when it's my turn" (queue/rooms/turn_mail.py): a waiting visitor may leave an
    # e-mail address and stop polling; at its turn it is sent a return link honoured for
    # returnWindowSec (its admission is held that long for it).
    Field("notify", False, _bool),
    Field("returnWindowSec", 900, IntRange(60, 86_400)),
    # Verified search crawlers: queued (answered 503 by the hosted page) or let through uncounted.
    Field("crawlers", "queue", crawlers_problem, False, _crawlers_stored, _crawlers_shown),
    # The signed agents' lane (agents policy "lane"): admissions a minute apart from the rate.
    Field("agentLaneRatePerMinute", 60, IntRange(1, 100_000)),
    # Signed agents (Web Bot Auth): a policy by key directory host; {} checks no signature.
    Field(
        "agents",
        {},
        signed_agents.agents_problem,
        False,
        lambda v: _json_or_empty(v or None),
        lambda stored: _from_json_or_empty(stored) or {},
    ),
)
BY_API = {f.api: f for f in FIELDS}
MUTABLE = frozenset(f.api for f in FIELDS if f.api != "slug")


def validate(data: Mapping[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """Check configuration ``data``; return it with defaults filled in (unless ``partial``).

    Raises :class:`ValidationError` naming every unknown, missing or bad field.
    """
    problems: dict[str, str] = {}
    for name in data:
        if name not in BY_API:
            problems[name] = "unknown field"
        elif partial and name == "slug":
            problems[name] = "is fixed once the room is created"
    out: dict[str, Any] = {}
    for f in FIELDS:
        if f.api in data:
            why = f.check(data[f.api])
            if why and f.api == "safetyNet":
                problems.update(safety_net_problems(data[f.api]))
            elif why and f.api == "drawBeacon":
                problems.update(draw_beacon_problems(data[f.api]))
            elif why:
                problems.setdefault(f.api, why)
            else:
                out[f.api] = data[f.api]
        elif not partial:
            if f.required:
                problems[f.api] = "is required"
            else:
                out[f.api] = f.default
    if problems:
        raise ValidationError(problems)
    return out


def to_stored(config: Mapping[str, Any]) -> dict[str, str]:
    """API-named configuration → the room hash's fields (strings, as Redis keeps them)."""
    out: dict[str, str] = {}
    for api, value in config.items():
        f = BY_API[api]
        if f.encode is not None:
            out[f.stored] = f.encode(value)
        elif value is None:
            out[f.stored] = "0"
        elif isinstance(value, bool):
            out[f.stored] = "1" if value else "0"
        else:
            out[f.stored] = str(value)
    return out


def from_stored(raw: Mapping[str, str]) -> dict[str, Any]:
    """The room hash's fields → API-named configuration."""
    out: dict[str, Any] = {}
    for f in FIELDS:
        value = raw.get(f.stored)
        if value is None:
            out[f.api] = f.default
        elif f.decode is not None:
            out[f.api] = f.decode(value)
        elif isinstance(f.default, bool):
            out[f.api] = value == "1"
        elif f.api == "capacity":
            out[f.api] = int(value) or None
        elif isinstance(f.default, int) and not isinstance(f.default, bool):
            out[f.api] = int(value)
        else:
            out[f.api] = value
    return out


def quiet_spot_kept_sec(room: Mapping[str, Any]) -> int:
    """The least a waiting spot of ``room`` is kept after its last poll, whatever its cadence:
    ``abandonAfterSec`` and the room's ``gracePeriodSec`` beyond."""
    return int(room.get("abandonAfterSec") or 300) + int(room.get("gracePeriodSec") or 0)


QUEUE_TOKEN_GRACE_SEC = 60  # a slow poller at the edge of abandonAfterSec keeps a valid ticket
QUEUE_TOKEN_MAX_SEC = 86_400


def queue_token_life(room: dict[str, Any]) -> int:
    """Seconds a queue token lives: as long as its spot can go unpolled, plus a minute.

    A spot is dropped once it has missed about three of its own polls, never sooner than
    ``abandonAfterSec``, and kept ``gracePeriodSec`` beyond that (queue/line/poll_cadence.py);
    every poll hands out a token with at least half this life left (visit/answers.queue_token),
    so a waiting visitor never holds an expired one; a stolen or kept ticket cannot be replayed
    for ever (above all into an outage admission). Never more than a day: a visitor whose spot
    outlives its ticket finds it again by entering with its session (the same visitor id).
    """
    unpolled = max(int(room["abandonAfterSec"]), -(-longest_unpolled_ms(room) // 1000))
    unpolled += int(room.get("gracePeriodSec") or 0)
    return min(QUEUE_TOKEN_MAX_SEC, unpolled + QUEUE_TOKEN_GRACE_SEC)


def no_script_score(room: Mapping[str, Any]) -> int:
    """The score a visitor without JavaScript enters ``room`` at (``noScriptScore``, else just
    below ``holdScore``)."""
    chosen = room.get("noScriptScore")
    return int(chosen) if chosen is not None else max(0, int(room["holdScore"]) - 1)
