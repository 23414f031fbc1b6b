"""Signed agents at the visitor API (docs/operators.md, "Signed agents"; Web Bot Auth).

A room whose ``agents`` setting names a policy checks the signature of a request that carries
one (``Caller.signed``: RFC 9421, Ed25519, the key from the directory its ``Signature-Agent``
names, fetched over HTTPS by the service's bounded outbound fetch and kept for its max-age; the
nonce booked in Redis, so a replay to another worker is one too). What the room's policy for
the agent's directory host says, it gets: ``queue`` (a challenge with no work: it joins the line
as a visitor does, without proof of work), ``lane`` (the same challenge; its signed join is
admitted through the room's agents' lane, visit/arrival.py) or ``refuse`` (403
``AgentRefused``). A signature that does not hold is 401 ``SignatureRefused`` naming why,
never a place; a request without one, a room without the setting, or an agent the setting does
not name, is anyone's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from anteroom.queue.draw import outbound_fetch
from anteroom.queue.rooms import room_config
from anteroom.queue.series.room_series import AGENT_COUNTS
from anteroom.sdk.message_signatures import SignatureError
from anteroom.sdk.signed_agents import SignedAgent, policy_for
from anteroom.service_container import Services
from anteroom.visit.outcomes import Refused
from anteroom.visit.ports import Caller

DIRECTORY_ACCEPT = "application/http-message-signatures-directory+json"

# What happened to a signed request, as the metrics count it.
Outcome = Literal["queued", "lane", "refused", "visitor", "invalid"]


@dataclass(frozen=True)
class AgentVerdict:
    """A signed request's verdict: ``outcome``, the verified agent (None when invalid) and,
    for ``refused`` and ``invalid``, the refusal to answer."""

    outcome: Outcome
    agent: SignedAgent | None = None
    refusal: Refused | None = None


def directory_fetch(url: str) -> tuple[int, str, bytes]:
    """A key directory's (status, Cache-Control, body) through the service's outbound fetch
    (https only, public addresses, one deadline, 64 kB); (0, "", b"") when it cannot be had."""
    try:
        headers, body = outbound_fetch.policy().get_document(url, DIRECTORY_ACCEPT)
    except outbound_fetch.FetchFailed:
        return 0, "", b""
    return 200, headers.get("cache-control", ""), body


def agent_verdict(
    s: Services, room: Mapping[str, Any] | None, caller: Caller, *, count: bool = True
) -> AgentVerdict | None:
    """The verdict on ``caller``'s signature for ``room``, or None: not checked (no setting, no
    signature, no verifier) or not a Web Bot Auth signature: an ordinary visitor. Counted in
    the room's series (queued, refused, invalid), tallied in memory as the web tier's
    refusals are (unless ``count`` is False: the join of an arrival counted). A lane agent is
    counted when the lane admits it."""
    verdict = _verdict(s, room, caller)
    counted = count and verdict is not None and verdict.outcome != "lane"
    if counted and room is not None and verdict is not None and verdict.outcome in AGENT_COUNTS:
        s.series.tally(str(room["id"]), AGENT_COUNTS[verdict.outcome])
    return verdict


def _verdict(s: Services, room: Mapping[str, Any] | None, caller: Caller) -> AgentVerdict | None:
    rules = room_config.agent_rules(room or {})
    if not rules or caller.signed is None or s.agent_verifier is None:
        return None  # the common case: nothing read
    try:
        agent = s.agent_verifier.verify(
            caller.signed, lambda directory: policy_for(rules, directory) is not None
        )
    except SignatureError as exc:
        message = f"The request's signature is refused ({exc.reason}): {exc}."
        refusal = Refused("SignatureRefused", message, fields={"signature": exc.reason})
        return AgentVerdict("invalid", None, refusal)
    if agent is None:
        return None
    policy = policy_for(rules, agent.directory)
    if policy == "refuse":
        message = "This room does not admit automated agents signed by this key directory."
        return AgentVerdict("refused", agent, Refused("AgentRefused", message))
    outcomes: dict[str | None, Outcome] = {"queue": "queued", "lane": "lane"}
    return AgentVerdict(outcomes.get(policy, "visitor"), agent)
