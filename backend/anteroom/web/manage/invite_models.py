"""Shapes of the management API's record of issued invites: the list's query and answers."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, ConfigDict, Field

from anteroom.queue.rooms import invite_book
from anteroom.sdk import tokens
from anteroom.web.api.api_models import Answer, Body, Wording, problem, schema_extra

# An invite's id is its token's jti: 16 base64url characters (tokens.new_id).
INVITE_ID = re.compile(r"^[A-Za-z0-9_-]{16}$")
INVITE_ID_EXAMPLE = "Zf3kP9qLw2xYt8Bv"
INVITE_STATES = ("open", "spent", "expired", "withdrawn")
LIMIT_WORDING = f"must be an integer from 1 to {invite_book.MAX_PAGE}"


def _digits(most: int, why: str) -> Any:
    """Query text to an integer: ASCII digits only (``int`` also takes ``²``, ``_`` or spaces)."""

    def read(value: Any) -> Any:
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= most:
            return int(value)
        raise problem(why)

    return BeforeValidator(read)


class InviteQuery(Body):
    """The query of ``GET /queues/{id}/invites`` (texts, as a query string has them)."""

    cursor: Annotated[int, _digits(12, "must be a nextCursor from an earlier answer")] = Field(
        0,
        ge=1,
        description="The nextCursor of the previous page (older invites); none: the newest.",
        examples=[150],
    )
    limit: Annotated[int, _digits(4, LIMIT_WORDING)] = Field(
        100,
        ge=1,
        le=invite_book.MAX_PAGE,
        description=f"Invites per page, from 1 to {invite_book.MAX_PAGE} (default 100).",
        examples=[100],
    )
    messages: ClassVar[dict[str, Wording]] = {
        "limit": LIMIT_WORDING,
        "cursor": "must be a nextCursor from an earlier answer",
    }
    model_config = ConfigDict(extra="ignore", json_schema_extra=schema_extra())


class IssuedInvite(Answer):
    """An invite on record: its terms, how much of it was used, and its state now."""

    id: str = Field(
        pattern=INVITE_ID.pattern,
        description="The invite's id (its token's jti): what withdrawing names.",
        examples=[INVITE_ID_EXAMPLE],
    )
    lane: Literal[tokens.INVITE_LANES] = Field(  # type: ignore[valid-type]
        description="skip: straight in, within capacity; priority: ahead of the public line.",
        examples=["priority"],
    )
    uses: int = Field(ge=1, description="Visitors it lets in, in all.", examples=[1])
    spent: int = Field(ge=0, description="Visitors it has let in so far.", examples=[0])
    expiresAt: int = Field(description="When it expires, epoch ms (room clock).",
                           examples=[1765198800000])  # fmt: skip
    issuedAt: int = Field(description="When it was signed, epoch ms (room clock).",
                          examples=[1765112400000])  # fmt: skip
    withdrawnAt: int | None = Field(
        description="When it was withdrawn, epoch ms (room clock); null: it was not.",
        examples=[None],
    )
    state: Literal[INVITE_STATES] = Field(  # type: ignore[valid-type]
        description="Now: open (it still lets newcomers in), spent (by as many visitors as it "
        "allows), expired, or withdrawn.",
        examples=["open"],
    )


INVITE_EXAMPLE = {
    "id": INVITE_ID_EXAMPLE, "lane": "priority", "uses": 1, "spent": 0,
    "expiresAt": 1765198800000, "issuedAt": 1765112400000, "withdrawnAt": None, "state": "open",
}  # fmt: skip


class InvitePage(Answer):
    queue: str = Field(description="The room's id.", examples=["q0123456789abcdef"])
    now: int = Field(
        description="The room's clock now, epoch ms: what each state was read at.",
        examples=[1765112460000],
    )
    total: int = Field(ge=0, description="Invites on record in the room.", examples=[1])
    invites: list[IssuedInvite] = Field(
        description="Up to limit invites, newest first.", examples=[[INVITE_EXAMPLE]]
    )
    nextCursor: str | None = Field(
        description="Pass it as cursor for the next, older page; null on the last page.",
        examples=[None],
    )


def shown(invite: invite_book.InviteRecord, now_ms: int) -> dict[str, Any]:
    """An invite on record as :class:`IssuedInvite`."""
    return {
        "id": invite.id,
        "lane": invite.lane,
        "uses": invite.uses,
        "spent": invite.spent,
        "expiresAt": invite.expires_at_ms,
        "issuedAt": invite.issued_at_ms,
        "withdrawnAt": invite.withdrawn_at_ms,
        "state": invite.state(now_ms),
    }
