"""API errors: one exception class per error code, turned into JSON by one handler."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from anteroom.identity import sessions
from anteroom.queue.connection.storage_errors import StorageBusy, StorageError, StorageUnavailable
from anteroom.queue.line import room_engine as eng
from anteroom.visit.refusals import Refusal

log = logging.getLogger("anteroom")
# The Retry-After of every answer Redis's trouble gives (Unavailable, Busy), wherever raised.
STORAGE_RETRY_SEC = 5


class ApiError(HTTPException):
    """Base of every API error: ``error`` is the API's error code, ``code`` the HTTP status."""

    code = 400
    error = "BadRequest"
    description = "The request is not valid."

    def __init__(
        self,
        message: str | None = None,
        *,
        retry_after: int | None = None,
        fields: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message or self.description)
        self.retry_after = retry_after
        self.fields = fields
        self.extra_headers = headers or {}

    def body(self) -> dict[str, Any]:
        """The JSON body of this error."""
        out: dict[str, Any] = {"error": self.error, "message": self.description}
        if self.fields:
            out["fields"] = self.fields
        if self.retry_after is not None:
            out["retryAfter"] = self.retry_after
        return out


class BadRequest(ApiError):
    code, error, description = 400, "BadRequest", "The request is not valid."


class Unauthorized(ApiError):
    code, error, description = 401, "Unauthorized", "A valid key is required."


class TokenInvalid(ApiError):
    code, error, description = 401, "TokenInvalid", "The token is not valid."


class TokenExpired(ApiError):
    code, error, description = 401, "TokenExpired", "The token has expired."


class SignatureRefused(ApiError):
    """A signed agent's signature that does not hold; ``fields.signature`` says why."""

    code, error, description = 401, "SignatureRefused", "The request's signature is refused."


class AgentRefused(ApiError):
    code, error = 403, "AgentRefused"
    description = "This room does not admit automated agents signed by this key directory."


class Forbidden(ApiError):
    code, error, description = 403, "Forbidden", "This key may not do that."


class QueueDenied(ApiError):
    code, error, description = 403, "QueueDenied", "This session may not enter the line."


class RoomClosed(ApiError):
    """A room in mode reject refuses new entries; the body carries its ``closedMessage``."""

    code, error, description = 403, "RoomClosed", "This room takes no new entries."

    def __init__(self, message: str | None = None, *, closed_message: Any = None) -> None:
        super().__init__(message)
        self.closed_message = closed_message

    def body(self) -> dict[str, Any]:
        """The error's JSON body, with the room's closedMessage (null: the page's default)."""
        return super().body() | {"closedMessage": self.closed_message}


class SessionRevoked(ApiError):
    code, error, description = 403, "SessionRevoked", "This session has been revoked."


class AddressRequired(ApiError):
    code, error = 403, "AddressRequired"
    description = "This room needs the client's network address, and none is visible."


class NotRenewable(ApiError):
    code, error = 403, "NotRenewable"
    description = "This room's admissions end at their expiry (sessionRenewal is off); queue again."


class NotifyOff(ApiError):
    code, error = 403, "NotifyOff"
    description = "This room does not offer an e-mail at the visitor's turn."


class NotFound(ApiError):
    code, error, description = 404, "NotFound", "Nothing here."


class RoomNotFound(ApiError):
    code, error, description = 404, "RoomNotFound", "No such room."


class EventNotFound(ApiError):
    code, error, description = 404, "EventNotFound", "No such event in this room."


class KeyNotFound(ApiError):
    code, error, description = 404, "KeyNotFound", "No such key in this environment."


class InviteNotFound(ApiError):
    code, error, description = 404, "InviteNotFound", "No such invite on record in this room."


class KeyInUse(ApiError):
    """A key may not revoke itself: the operator would lock themselves out by accident."""

    code, error = 409, "KeyInUse"
    description = "This is the key making the call; sign in with another key to revoke it."


class EventOverlap(ApiError):
    code, error = 409, "EventOverlap"
    description = "The event's window meets another event's; events of a room never overlap."


class EventEnded(ApiError):
    code, error = 409, "EventEnded"
    description = "The event has ended: it stays on record and cannot be changed."


class NotWaiting(ApiError):
    code, error = 409, "NotWaiting"
    description = "The spot is not waiting in the line: admitted already (poll it), or held."


class MethodNotAllowed(ApiError):
    code, error, description = 405, "MethodNotAllowed", "That method is not allowed here."


class InviteSpent(ApiError):
    code, error = 409, "InviteSpent"
    description = "This invite has been used by as many visitors as it allows."


class InviteExpired(ApiError):
    code, error, description = 410, "InviteExpired", "This invite has expired."


class InviteWithdrawn(ApiError):
    code, error, description = 410, "InviteWithdrawn", "This invite has been withdrawn."


class WrongRegion(ApiError):
    """A ticket of a room across regions, sent to another region than the one that issued it."""

    code, error = 421, "WrongRegion"
    description = "This ticket belongs to another region; send its calls there."


class TicketGone(ApiError):
    code, error = 410, "TicketGone"
    description = "This ticket is no longer in the line; enter again."


class RequestTimeout(ApiError):
    """The request's headers and body did not all arrive within the server's deadline."""

    code, error = 408, "RequestTimeout"
    description = "The request did not arrive in time; send it again, whole."


class PayloadTooLarge(ApiError):
    code, error, description = 413, "PayloadTooLarge", "The request body is too large."


class RateLimited(ApiError):
    code, error, description = 429, "RateLimited", "Too many requests; wait and try again."


class TooManyConnections(ApiError):
    """One address has more requests in progress than the server lets it keep open."""

    code, error = 429, "TooManyConnections"
    description = "Too many requests in progress from this address; finish some first."


class QueueFull(ApiError):
    code, error, description = 429, "QueueFull", "The line is full; try again later."


class Busy(ApiError):
    code, error, description = 429, "Busy", "The service is busy; try again shortly."


class Unavailable(ApiError):
    code, error, description = 503, "Unavailable", "The service is unavailable; try again soon."


class InternalError(ApiError):
    code, error, description = 500, "InternalError", "Something went wrong on our side."


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    413: PayloadTooLarge,
    429: RateLimited,
}


def from_domain(exc: Exception) -> ApiError:
    """The API error a visitor gets for a refusal raised below the web layer (one place).

    Engine refusals are read as a visitor's: a room that no longer exists means the ticket is
    gone. The management API answers its own (a missing room is its 404) where it calls.
    """
    match exc:
        case sessions.TokenExpired():
            return TokenExpired(exc.message)
        case sessions.WrongSolution():
            return BadRequest(exc.message, fields={exc.field: "does not solve the challenge"})
        case sessions.IdentityRefused():
            return TokenInvalid(exc.message)
        case eng.TicketGone():
            return TicketGone()
        case eng.RoomNotFound():
            return TicketGone("This room no longer exists.")
        case eng.RateLimited() | eng.QueueFull():
            cls = RateLimited if isinstance(exc, eng.RateLimited) else QueueFull
            return cls(retry_after=exc.retry_after or 60)
        case eng.SessionRevoked():
            return SessionRevoked()
        case eng.RoomClosed():
            return RoomClosed()
        case eng.InviteSpent():
            return InviteSpent()
        case eng.InviteExpired():
            return InviteExpired()
        case eng.InviteWithdrawn():
            return InviteWithdrawn()
        case StorageBusy():
            return Busy(retry_after=STORAGE_RETRY_SEC)
        case Refusal():  # a use case's refusal raised to its caller (visit/room_lookup.py)
            refused = exc.refused
            return by_code(
                refused.code,
                refused.message,
                retry_after=refused.retry_after,
                fields=refused.fields,
                closed_message=refused.closed_message,
            )
    raise TypeError(f"no API error for {type(exc).__name__}") from exc


def by_code(
    code: str,
    message: str | None = None,
    *,
    retry_after: int | None = None,
    fields: dict[str, str] | None = None,
    closed_message: Any = None,
) -> ApiError:
    """The API error whose code is ``code`` (a use case's Refused, anteroom.visit.outcomes)."""
    for cls in _all_errors(ApiError):
        if cls.error == code:
            if cls is RoomClosed:
                return RoomClosed(message, closed_message=closed_message)
            return cls(message, retry_after=retry_after, fields=fields)
    raise ValueError(f"no API error {code!r}")


def _all_errors(base: type[ApiError]) -> list[type[ApiError]]:
    found = []
    for sub in base.__subclasses__():
        found += [sub, *_all_errors(sub)]
    return found


def to_response(exc: ApiError) -> Response:
    """JSON response for ``exc`` with ``Retry-After`` when it asks the client to wait."""
    response = jsonify(exc.body())
    response.status_code = exc.code or 400
    if exc.retry_after is not None:
        response.headers["Retry-After"] = str(exc.retry_after)
    for name, value in exc.extra_headers.items():
        response.headers[name] = value
    return response


def http_error(exc: HTTPException) -> Response:
    """Any HTTP error as its JSON answer."""
    if isinstance(exc, ApiError):
        return to_response(exc)
    retry = None
    if exc.code == 429:
        retry = getattr(exc, "retry_after", None) or 60
    cls = _BY_STATUS.get(exc.code or 500, InternalError)
    api = cls(retry_after=retry)
    if exc.code == 405 and exc.valid_methods:  # type: ignore[attr-defined]
        api.extra_headers["Allow"] = ", ".join(exc.valid_methods)  # type: ignore[attr-defined]
    return to_response(api)


def storage_refusal(exc: StorageError) -> ApiError:
    """Redis trouble a view did not map itself: the documented 503 or 429, never a 500 (an
    unknown kind is logged and answered as an internal error)."""
    if isinstance(exc, StorageUnavailable):
        return Unavailable(retry_after=STORAGE_RETRY_SEC)
    if isinstance(exc, StorageBusy):
        return Busy(retry_after=STORAGE_RETRY_SEC)
    log.exception("unexpected error", exc_info=exc)
    return InternalError()


def _storage(exc: StorageError) -> Response:
    return to_response(storage_refusal(exc))


def _identity(exc: sessions.IdentityRefused | Refusal) -> Response:
    return to_response(from_domain(exc))


def _unexpected(exc: Exception) -> Response:
    log.exception("unexpected error", exc_info=exc)
    return to_response(InternalError())


def init_app(app: Flask) -> None:
    """Every error, including werkzeug's own and unexpected ones, answers JSON."""
    app.register_error_handler(HTTPException, http_error)
    app.register_error_handler(StorageError, _storage)
    app.register_error_handler(sessions.IdentityRefused, _identity)
    app.register_error_handler(Refusal, _identity)
    app.register_error_handler(Exception, _unexpected)
