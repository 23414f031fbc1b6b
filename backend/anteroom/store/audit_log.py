"""The audit log: one capped Redis Stream per environment, one entry per management mutation.

An entry names what happened (``queue.created``, ``queue.updated``, ``queue.deleted``), the room,
the key that did it, when, and what changed (before and after of each field, and the action);
``session.revoked`` names the session (``jti``) or visitor (``vid``) and the operator's reason;
``queue.invite.withdrawn`` the invite (id and terms); ``key.created`` and ``key.revoked`` the key
(its id, and a new key's scopes: never a secret).
Stream ids are the cursor: time-ordered, unique, and cheap to page through newest first.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from anteroom.queue.connection.redis_link import Client
from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.queue.rooms.key_layout import KeySpace

SAFETY_NET_ACTOR = "safety-net"  # the keyId of the safety net's own switches (no key made them)
MAX_EVENTS = 100_000  # per environment; older events are trimmed (approximately) on write
CURSOR_PATTERN = re.compile(r"^\d{1,20}-\d{1,20}$")


class AuditLog:
    """Writes and pages through the audit streams."""

    def __init__(self, client: Client, keys: KeySpace) -> None:
        self.redis = client
        self.keys = keys

    def record(
        self,
        environment: str,
        event: str,
        *,
        queue: dict[str, Any] | None = None,
        key_id: str,
        changes: dict[str, dict[str, Any]] | None = None,
        action: dict[str, Any] | None = None,
        session: dict[str, str] | None = None,
        reason: str | None = None,
        invites: dict[str, Any] | None = None,
        invite: dict[str, Any] | None = None,
        subject_key: dict[str, Any] | None = None,
    ) -> str:
        """Append one event (about a room, or about a ``session`` for revocations); its id."""
        body: dict[str, Any] = {"type": event}
        if queue is not None:
            body["queue"] = {"id": queue["id"], "slug": queue["slug"]}
        body |= {"keyId": key_id, "at": int(time.time() * 1000)}
        if changes is not None:
            body["changes"] = changes
        if action is not None:
            body["action"] = action
        if session is not None:
            body["session"] = session
            body["reason"] = reason
        if invites is not None:
            body["invites"] = invites
        if invite is not None:
            body["invite"] = invite
        if subject_key is not None:
            body["key"] = subject_key
        with storage_errors():
            return str(
                self.redis.xadd(
                    self.keys.env_audit(environment),
                    {"e": json.dumps(body, separators=(",", ":"))},
                    maxlen=MAX_EVENTS,
                    approximate=True,
                )
            )

    def record_switches(self, room: dict[str, Any], switches: Sequence[tuple[str, int]]) -> None:
        """Audit the safety net's switches of ``room`` ((state, room clock ms), oldest first):
        ``queue.updated`` by the actor ``safety-net``, its state before and after, and when."""
        for state, at_ms in switches:
            before = "calm" if state == "queueing" else "queueing"
            self.record(
                room["environment"],
                "queue.updated",
                queue=room,
                key_id=SAFETY_NET_ACTOR,
                changes={
                    "safetyNet.state": {"before": before, "after": state},
                    "safetyNet.since": {"before": None, "after": at_ms},
                },
            )

    def page(
        self, environment: str, cursor: str | None = None, limit: int = 50
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Events newest first, after ``cursor`` (exclusive); returns (events, next cursor)."""
        top = f"({cursor}" if cursor else "+"
        with storage_errors():
            raw = self.redis.xrevrange(self.keys.env_audit(environment), top, "-", count=limit + 1)
        events = []
        for entry_id, fields in raw[:limit]:
            event = json.loads(fields["e"])
            events.append({"id": entry_id} | event)
        more = len(raw) > limit
        return events, (events[-1]["id"] if more and events else None)


def diff(before: dict[str, Any], after: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Before/after of each of ``names`` whose value changed."""
    return {
        n: {"before": before.get(n), "after": after.get(n)}
        for n in names
        if before.get(n) != after.get(n)
    }
