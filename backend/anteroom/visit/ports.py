"""What a use case asks of the entrance that calls it (the request's facts and the web's parts).

The entrance (web/visitor/visit_door.py) builds both per request: ``Caller`` from the request, a
``Door`` over the parts still kept in web/ (the per-address limits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from anteroom.identity.signal_rules import Evidence
from anteroom.sdk.message_signatures import SignedRequest


@dataclass(frozen=True)
class Caller:
    """The request as the service judges it: the client's address (the peer, or the trusted
    proxies' word) and what it sent."""

    address: str | None
    user_agent: str = ""
    accept_language: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    cookie: str = ""
    # The request as a signature covers it, when it carries one (a signed agent's).
    signed: SignedRequest | None = None

    def evidence(self, signals: Mapping[str, Any], network_identifies: int) -> Evidence:
        """What the signal rules read of this request and the agent's signals."""
        return Evidence(
            signals=dict(signals),
            user_agent=self.user_agent,
            accept_language=self.accept_language,
            identifies_from_network=network_identifies,
        )


class Door(Protocol):
    """The entrance's parts a use case calls (each may raise the entrance's own refusal)."""

    def charge(self, limit: str) -> None:
        """Count this request against the per-address limit ``limit``, or refuse."""
        ...

    def enter_counters(self) -> Sequence[tuple[str, int, int]] | None:
        """The enter limit's counters for the enter script (None: charged already)."""
        ...

    def identify_counters(self) -> Sequence[tuple[str, int, int]] | None:
        """The identify limit's counters for the join script (None: a Redis Cluster, where
        identify and enter are calls apart), after refusing an address known to be over."""
        ...

    def over_limit(self, limit: str, retry_after: float) -> NoReturn:
        """The script found the address over ``limit``: remember it and refuse."""
        ...
