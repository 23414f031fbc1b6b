"""The record of a room's issued invites (lua/issue_invites.lua, invites.lua, withdraw_invite.lua).

An invite is a signed token (sdk/tokens.py) checked offline; what is kept of it here is its terms,
so an operator can list what was issued, see how much of it was used and withdraw one. Its uses
and its withdrawal live in the room's ``inv`` hash, which the enter script reads (one round trip).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Invites an operator lists per page, at most.
MAX_PAGE = 500


@dataclass(frozen=True)
class InviteRecord:
    """One issued invite: its terms, its uses so far and when it was withdrawn (None: not)."""

    id: str
    lane: str  # "skip" or "priority"
    uses: int
    expires_at_ms: int
    issued_at_ms: int
    spent: int
    withdrawn_at_ms: int | None

    def state(self, now_ms: int) -> str:
        """withdrawn, expired, spent (used by as many as it lets in) or open, in that order."""
        if self.withdrawn_at_ms is not None:
            return "withdrawn"
        if now_ms >= self.expires_at_ms:
            return "expired"
        return "spent" if self.spent >= self.uses else "open"


@dataclass(frozen=True)
class InvitePage:
    """A page of a room's invites, newest first; ``next_cursor`` None after the oldest."""

    total: int
    invites: list[InviteRecord]
    next_cursor: int | None


def terms(lane: str, uses: int, expires_at_ms: int, issued_at_ms: int) -> str:
    """The terms a batch of invites is recorded with (their JSON in ``invs``)."""
    body = {"lane": lane, "uses": uses, "expiresAt": expires_at_ms, "issuedAt": issued_at_ms}
    return json.dumps(body, separators=(",", ":"))


def record(invite_id: str, raw_terms: str, spent: Any, withdrawn: Any) -> InviteRecord:
    """An invite from its stored parts (``withdrawn`` '' or None: not withdrawn)."""
    t = json.loads(raw_terms)
    return InviteRecord(
        id=invite_id,
        lane=t["lane"],
        uses=int(t["uses"]),
        expires_at_ms=int(t["expiresAt"]),
        issued_at_ms=int(t["issuedAt"]),
        spent=int(spent or 0),
        withdrawn_at_ms=int(withdrawn) if withdrawn not in (None, "") else None,
    )


def page(raw: list[Any]) -> InvitePage:
    """The reply of lua/invites.lua as a page."""
    total, cursor, rest = int(raw[0]), raw[1], raw[2:]
    invites = [
        record(rest[i], rest[i + 1], rest[i + 2], rest[i + 3])
        for i in range(0, len(rest), 4)
        if rest[i + 1]  # an id whose terms are missing (never: written together) is skipped
    ]
    return InvitePage(total, invites, int(cursor) if cursor not in ("", None) else None)
