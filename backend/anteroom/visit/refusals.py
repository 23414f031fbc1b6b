"""How the visitor's use cases refuse: a ``Refused`` answer, raised from a nested step as
``Refusal`` and returned by the use case; the engine's and Redis's refusals as the visitor's."""

from __future__ import annotations

from typing import Any

from anteroom.queue.connection.storage_errors import StorageBusy, StorageUnavailable
from anteroom.queue.line import room_engine as eng
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit.outcomes import Refused

# Retry-After of an answer Redis's trouble gives (the web's STORAGE_RETRY_SEC, the same value).
STORAGE_RETRY_SEC = 5
# The engine's refusals, as the API names them.
ENGINE_REFUSALS: tuple[tuple[type[Exception], str], ...] = (
    (eng.TicketGone, "TicketGone"),
    (eng.RoomNotFound, "TicketGone"),
    (eng.RateLimited, "RateLimited"),
    (eng.QueueFull, "QueueFull"),
    (eng.SessionRevoked, "SessionRevoked"),
    (eng.RoomClosed, "RoomClosed"),
    (eng.InviteSpent, "InviteSpent"),
    (eng.InviteExpired, "InviteExpired"),
    (eng.InviteWithdrawn, "InviteWithdrawn"),
)


class Refusal(Exception):
    """Carries a Refused out of a nested step to the use case, which returns it."""

    def __init__(self, refused: Refused) -> None:
        super().__init__(refused.code)
        self.refused = refused


def unavailable() -> Refused:
    """Redis is unreachable and nothing may be answered without it: retry soon (503)."""
    return Refused("Unavailable", retry_after=STORAGE_RETRY_SEC)


def storage_refusal(exc: StorageUnavailable | StorageBusy) -> Refused:
    """Redis unreachable (503) or out of memory (429): the visitor is told to retry soon."""
    code = "Unavailable" if isinstance(exc, StorageUnavailable) else "Busy"
    return Refused(code, retry_after=STORAGE_RETRY_SEC)


def engine_refusal(exc: eng.EngineError, room: dict[str, Any] | None = None) -> Refused:
    """The engine's refusal as the visitor's; a closed room's page shows what the operator
    wrote (given ``room``), as for an idle room."""
    if isinstance(exc, eng.RoomClosed) and room is not None:
        return Refused("RoomClosed", closed_message=room.get("closedMessage"))
    for kind, code in ENGINE_REFUSALS:
        if isinstance(exc, kind):
            retry = exc.retry_after or 60 if code in ("RateLimited", "QueueFull") else None
            message = "This room no longer exists." if isinstance(exc, eng.RoomNotFound) else None
            return Refused(code, message, retry_after=retry)
    raise exc


def network_tag(s: Services, room: dict[str, Any], address: str | None) -> str:
    """The tag of the caller's network in a bindIp room ('' elsewhere); no address, no entry."""
    if not room.get("bindIp"):
        return ""
    if not address:
        raise Refusal(Refused("AddressRequired"))
    try:
        return tokens.network_tag(s.keyring, address)
    except ValueError:
        raise Refusal(Refused("AddressRequired")) from None
