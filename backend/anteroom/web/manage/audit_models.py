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
    "queue.created", "queue.updated", "queue.deleted", "queue.invites", "session.revoked"
)  # fmt: skip


SessionId = Annotated[str, Field(pattern=SESSION_ID.pattern)]
ONE_OF_JTI_VID = [{"required": ["jti"]}, {"required": ["vid"]}]


class RevokeRequest(Body):
    jti: SessionId = Field("", description="A session's jti (from its st1 token).")
    vid: SessionId = Field("", description="A visitor's vid: every session of it.")
    reason: str | None = Field(
        None, max_length=REASON_MAX_LENGTH, description="Kept in the audit log."
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
    environment: str
    jti: str = ""
    vid: str = ""
    reason: str | None
    rooms: int = Field(ge=0, description="Rooms of the environment now holding the revocation.")
    droppedNow: int = Field(
        ge=0, description="Spots dropped at once (a vid's); a jti's go at their next poll."
    )
    expiresAt: int = Field(
        description="Epoch ms when it stops counting: after the longest token life."
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
        description="The nextCursor of the previous page.",
        json_schema_extra=_cursor_schema,
    )
    limit: Annotated[int, BeforeValidator(_digits)] = Field(50, ge=1, le=500)
    messages: ClassVar[dict[str, Wording]] = {"limit": "must be an integer from 1 to 500"}
    model_config = ConfigDict(extra="ignore")


class Change(Answer):
    before: Any
    after: Any


class AuditQueue(Answer):
    id: str
    slug: str


class AuditAction(Answer):
    name: Literal[ACTIONS]  # type: ignore[valid-type]
    opensAt: int | None


class AuditSession(Answer):
    """session.revoked: the session (jti) or visitor (vid) revoked."""

    jti: str = ""
    vid: str = ""
    model_config = ConfigDict(json_schema_extra=schema_extra(minProperties=1, maxProperties=1))


class AuditInvites(Answer):
    """queue.invites: what was signed (never the tokens)."""

    count: int
    lane: str
    uses: int
    expiresAt: int


class AuditEvent(Answer):
    """queue.* events name the queue; session.revoked names the session."""

    id: str = Field(pattern=CURSOR_PATTERN.pattern)
    type: Literal[AUDIT_EVENTS]  # type: ignore[valid-type]
    queue: AuditQueue | None = None
    keyId: str
    at: int = Field(description="Epoch ms.")
    changes: dict[str, Change] = Field(default_factory=dict)
    action: AuditAction | None = None
    session: AuditSession | None = None
    reason: str | None = Field(None, description="session.revoked: as given.")
    invites: AuditInvites | None = None
    model_config = ConfigDict(json_schema_extra=schema_extra())


class AuditPage(Answer):
    environment: str
    events: list[AuditEvent]
    nextCursor: str | None = Field(description="Null on the last page.")
