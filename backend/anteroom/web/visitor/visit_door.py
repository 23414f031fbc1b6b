"""What the HTTP entrances hand the visitor's use cases (anteroom.visit): the request's facts
(``caller``), the parts still kept in web/ (``WebDoor``: the per-address limits), and a
refusal as the API's error."""

from __future__ import annotations

from typing import Any, NoReturn

from flask import request
from werkzeug.datastructures import EnvironHeaders

from anteroom.sdk.message_signatures import signed_request_of
from anteroom.service_container import Services
from anteroom.visit import outcomes
from anteroom.visit.ports import Caller
from anteroom.web.serving import http_errors as errors
from anteroom.web.visitor import address_limits as limits


class WebDoor:
    """The parts of web/ a use case calls (anteroom.visit.ports.Door), for this request
    (``address_limits``: the limits of the request's address, when it is not Flask's current
    request: web/visitor/hot_path.py)."""

    def __init__(self, services: Services, address_limits: limits.Limits | None = None) -> None:
        self.services = services
        self.limits = address_limits

    def charge(self, limit: str) -> None:
        if self.limits is None:
            limits.charge(limit)
        else:
            self.limits.charge(limit)

    def enter_counters(self) -> list[tuple[str, int, int]] | None:
        return limits.enter_counters() if self.limits is None else self.limits.counters()

    def identify_counters(self) -> list[tuple[str, int, int]] | None:
        if self.limits is None:
            return limits.identify_counters()
        return self.limits.identify_counters()

    def over_limit(self, limit: str, retry_after: float) -> NoReturn:
        if self.limits is None:
            limits.refused_by_script(limit, retry_after)
        else:
            self.limits.refused_by_script(limit, retry_after)


def caller_of(environ: dict[str, Any]) -> Caller:
    """A WSGI request's facts, as the use cases read them (outside Flask's request context)."""
    return Caller(
        address=environ.get("REMOTE_ADDR"),
        user_agent=environ.get("HTTP_USER_AGENT", ""),
        accept_language=environ.get("HTTP_ACCEPT_LANGUAGE", ""),
        headers=EnvironHeaders(environ),
        cookie=environ.get("HTTP_COOKIE", ""),
        signed=signed_request_of(environ),
    )


def caller() -> Caller:
    """This request's facts, as the use cases read them."""
    return Caller(
        address=request.remote_addr,
        user_agent=request.headers.get("User-Agent", ""),
        accept_language=request.headers.get("Accept-Language", ""),
        headers=request.headers,
        cookie=request.headers.get("Cookie", ""),
        signed=signed_request_of(request.environ),
    )


def refused(answer: outcomes.Refused) -> NoReturn:
    """A use case's refusal as the API's error."""
    raise errors.by_code(
        answer.code,
        answer.message,
        retry_after=answer.retry_after,
        fields=answer.fields,
        closed_message=answer.closed_message,
    )
