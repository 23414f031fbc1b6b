"""The tagged answers of the visitor's use cases: one frozen dataclass per outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anteroom.sdk.tokens import SessionClaims


@dataclass(frozen=True)
class Refused:
    """The call is refused: ``code`` is the API's error code (e.g. ``QueueDenied``)."""

    code: str
    message: str | None = None
    retry_after: int | None = None
    fields: dict[str, str] | None = None
    closed_message: Any = None  # RoomClosed: the room's text for the page


@dataclass(frozen=True)
class Challenge:
    """A signed challenge and its puzzles, in the shape the API answers (``body``)."""

    body: dict[str, Any]


@dataclass(frozen=True)
class Session:
    """A session opened (or, for a retried proof, the one it opened before)."""

    token: str
    expires_at_ms: int
    score: int
    signals: tuple[str, ...]
    claims: SessionClaims

    def body(self) -> dict[str, Any]:
        """As the API answers a session."""
        return {
            "sessionToken": self.token,
            "expiresAt": self.expires_at_ms,
            "score": self.score,
            "sig": list(self.signals),
        }


@dataclass(frozen=True)
class Waiting:
    """In line with a place; ``body`` is the queue answer, ``retry_after`` its poll delay."""

    body: dict[str, Any]
    retry_after: int | None


@dataclass(frozen=True)
class InDraw:
    """Waiting without a place: a random room's draw (the answer carries its odds)."""

    body: dict[str, Any]
    retry_after: int | None


@dataclass(frozen=True)
class Held:
    """Kept in line but not drained: the session's score reaches the room's holdScore."""

    body: dict[str, Any]
    retry_after: int | None


@dataclass(frozen=True)
class Admitted:
    """Let in: the answer carries the admission (``failOpen`` when dealt during an outage)."""

    body: dict[str, Any]
    retry_after: int | None = None


@dataclass(frozen=True)
class Idle:
    """The room is not open (not yet, or closed)."""

    body: dict[str, Any]
    retry_after: int | None = None


Spot = Waiting | InDraw | Held | Admitted | Idle


@dataclass(frozen=True)
class Left:
    """The spot was given up (or was gone already: leaving twice is no error)."""


@dataclass(frozen=True)
class Entered:
    """An arrival's second call: the session opened and the spot it took, together."""

    session: Session
    spot: Spot
