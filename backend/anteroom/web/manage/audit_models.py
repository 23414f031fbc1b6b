"""Shapes of the management API's sessions and audit log: revocations, audit queries, events."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, ConfigDict, Field

from anteroom.identity import revocation
from anteroom.store.audit_log import CURSOR_PATTERN
from anteroom.web.api.api_models import Answer, Body, Wording, problem, schema_extra
from anteroom.web.manage.management_models import ACTIONS

SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a token's jti / vid (ours are 16 chars)
REASON_MAX_LENGTH = 500
AUDIT_EVENTS = (
    "queue.created", "queue.updated", "queue.deleted", "queue.invites", "queue.invite.withdrawn",
    "session.revoked", "key.created", "key.revoked",
)  # fmt: skip


SessionId = Annotated[str, Field(pattern=SESSION_ID.pattern)]
ONE_OF_JTI_VID = [{"required": ["jti"]}, {"required": ["vid"]}]


class RevokeRequest(Body):
    jti: SessionId = Field(
        "", examples=["Zf3kP9qLw2xYt8Bv"], description="A session's jti (from its st1 token)."
    )
    vid: SessionId = Field(
        "", examples=["v8f3a91c2d4e5f60"], description="A visitor's vid: every session of it."
    )
    reason: str | None = Field(
        None,
        examples=["Scripted checkout from one network"],
        max_length=REASON_MAX_LENGTH,
        description="Kept in the audit log.",
    )
    messages: ClassVar[dict[str, Wording]] = {
        kind: "must be 1 to 64 letters, digits, '-' or '_' (a token's id)"
        for kind in ("jti", "vid")
    } | {"reason": f"must be a string of at most {REASON_MAX_LENGTH} characters"}
    model_config = ConfigDict(json_schema_extra=schema_extra(oneOf=ONE_OF_JTI_VID))

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        named = [k for k in revocation.KINDS if k in data]
        if len(named) != 1:
            why = "give jti or vid" if not named else "give jti or vid, not both"
            problems.setdefault("jti", why)
            problems.setdefault("vid", why)

    @property
    def kind(self) -> str:
        """``jti`` or ``vid``: the one that was given."""
        return "jti" if "jti" in self.model_fields_set else "vid"


class Revocation(Answer):
    environment: str = Field(
        examples=["prod"], description="The environment the revocation holds in."
    )
    jti: str = Field(
        "",
        examples=["Zf3kP9qLw2xYt8Bv"],
        description="The session revoked, if one was named (empty otherwise).",
    )
    vid: str = Field(
        "",
        examples=["v8f3a91c2d4e5f60"],
        description="The visitor revoked, if one was named (empty otherwise).",
    )
    reason: str | None = Field(
        examples=["Scripted checkout from one network"],
        description="The reason given, kept in the audit log; null: none.",
    )
    rooms: int = Field(
        examples=[3], ge=0, description="Rooms of the environment now holding the revocation."
    )
    droppedNow: int = Field(
        examples=[0],
        ge=0,
        description="Spots dropped at once (a vid's); a jti's go at their next poll.",
    )
    expiresAt: int = Field(
        examples=[1765134000000],
        description="Epoch ms when it stops counting: after the longest token life.",
    )
    model_config = ConfigDict(json_schema_extra=schema_extra(oneOf=ONE_OF_JTI_VID))


def _is_cursor(value: Any) -> str:
    """A stream id Redis takes as an exclusive end: ASCII, 64-bit parts, not 0-0."""
    if isinstance(value, str) and value.isascii() and CURSOR_PATTERN.fullmatch(value):
        ms, seq = (int(part) for part in value.split("-"))
        if max(ms, seq) < 2**64 and (ms, seq) != (0, 0):
            return value
    raise problem("must be a nextCursor from an earlier answer")


def _cursor_schema(schema: dict[str, Any]) -> None:
    """Checked in full by :func:`_is_cursor`; the pattern says its shape, no text is its default."""
    del schema["default"]
    schema["pattern"] = CURSOR_PATTERN.pattern


def _digits(value: Any) -> Any:
    """Query text to an integer: ASCII digits only (``int`` also takes ``²``, ``_`` or spaces)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 5:
        return int(value)
    raise problem("must be an integer from 1 to 500")


class AuditQuery(Body):
    """The query of ``GET /audit`` (texts, as a query string has them)."""

    cursor: Annotated[str, BeforeValidator(lambda v: _is_cursor(v) if v else "")] = Field(
        "",
        examples=["1765112400000-0"],
        description="The nextCursor of the previous page.",
        json_schema_extra=_cursor_schema,
    )
    limit: Annotated[int, BeforeValidator(_digits)] = Field(
        50, examples=[50], description="Events per page, from 1 to 500.", ge=1, le=500
    )
    messages: ClassVar[dict[str, Wording]] = {"limit": "must be an integer from 1 to 500"}
    model_config = ConfigDict(extra="ignore")


class Change(Answer):
    before: Any = Field(examples=[120], description="The value before the change (null: not set).")
    after: Any = Field(examples=[300], description="The value after it (null: removed).")


class AuditQueue(Answer):
    id: str = Field(examples=["q0123456789abcdef"], description="The room's id.")
    slug: str = Field(examples=["spring-drop"], description="The room's slug at the time.")


class AuditAction(Answer):
    name: Literal[ACTIONS] = Field(  # type: ignore[valid-type]
        examples=["pause"], description="The action run: open, pause, close or reroll."
    )
    opensAt: int | None = Field(
        examples=[None], description="The opening time it set, epoch ms; null: none."
    )


class AuditSession(Answer):
    """session.revoked: the session (jti) or visitor (vid) revoked."""

    jti: str = Field(
        "",
        examples=["Zf3kP9qLw2xYt8Bv"],
        description="The session revoked (empty when a visitor was).",
    )
    vid: str = Field(
        "",
        examples=["v8f3a91c2d4e5f60"],
        description="The visitor revoked (empty when a session was).",
    )
    model_config = ConfigDict(json_schema_extra=schema_extra(minProperties=1, maxProperties=1))


class AuditInvites(Answer):
    """queue.invites: what was signed (never the tokens)."""

    count: int = Field(examples=[50], description="How many invites were signed.")
    lane: str = Field(examples=["priority"], description="Their lane: skip or priority.")
    uses: int = Field(examples=[1], description="Visitors each lets in.")
    expiresAt: int = Field(examples=[1765198800000], description="When they expire, epoch ms.")


class AuditInvite(Answer):
    """queue.invite.withdrawn: the invite withdrawn, and its terms."""

    id: str = Field(examples=["Zf3kP9qLw2xYt8Bv"], description="The invite's id (its jti).")
    lane: str = Field(examples=["skip"], description="Its lane: skip or priority.")
    uses: int = Field(examples=[1], description="Visitors it let in, in all.")
    expiresAt: int = Field(examples=[1765198800000], description="When it would have expired.")


class AuditKey(Answer):
    """key.created and key.revoked: the key acted on (never its secret)."""

    id: str = Field(examples=["3f9a0c7d21be"], description="The key's id.")
    scopes: list[str] | None = Field(
        None,
        examples=[["queues:read"]],
        description="key.created: the scopes it was given.",
    )


class AuditEvent(Answer):
    """queue.* events name the queue; session.revoked names the session."""

    id: str = Field(
        examples=["1765112400000-0"],
        description="The event's id; also what a page's cursor points at.",
        pattern=CURSOR_PATTERN.pattern,
    )
    type: Literal[AUDIT_EVENTS] = Field(  # type: ignore[valid-type]
        examples=["queue.updated"],
        description="What happened: a room created, changed or deleted, invites signed or one "
        "withdrawn, a session revoked, or a key created or revoked.",
    )
    queue: AuditQueue | None = Field(
        None,
        examples=[{"id": "q0123456789abcdef", "slug": "spring-drop"}],
        description="The room it happened to (room events only).",
    )
    keyId: str = Field(
        examples=["k7d2e9"],
        description="Who did it: the id of the key used (safety-net for the room's own switches).",
    )
    at: int = Field(examples=[1765112400000], description="When, epoch ms.")
    changes: dict[str, Change] = Field(
        examples=[{"ratePerMinute": {"before": 120, "after": 300}}],
        description="Each setting changed, its value before and after.",
        default_factory=dict,
    )
    action: AuditAction | None = Field(
        None, examples=[None], description="The action run on the room, if any."
    )
    session: AuditSession | None = Field(
        None, examples=[None], description="The session or visitor revoked (revocations only)."
    )
    reason: str | None = Field(None, examples=[None], description="session.revoked: as given.")
    invites: AuditInvites | None = Field(
        None,
        examples=[None],
        description="What was signed (invites only; never the invites themselves).",
    )
    invite: AuditInvite | None = Field(
        None, examples=[None], description="The invite withdrawn (queue.invite.withdrawn only)."
    )
    key: AuditKey | None = Field(
        None,
        examples=[None],
        description="The key created or revoked (key.* only; keyId is the one that did it).",
    )
    model_config = ConfigDict(json_schema_extra=schema_extra())


class AuditPage(Answer):
    environment: str = Field(examples=["prod"], description="The environment the events belong to.")
    events: list[AuditEvent] = Field(
        examples=[
            [
                {
                    "id": "1765112400000-0",
                    "type": "queue.updated",
                    "queue": {"id": "q0123456789abcdef", "slug": "spring-drop"},
                    "keyId": "k7d2e9",
                    "at": 1765112400000,
                    "changes": {"ratePerMinute": {"before": 120, "after": 300}},
                }
            ]
        ],
        description="The events, newest first.",
    )
    nextCursor: str | None = Field(
        examples=["1765112399000-3"], description="Null on the last page."
    )
