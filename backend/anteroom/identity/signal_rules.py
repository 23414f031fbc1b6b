"""The signal rules: what a request and the agent report, turned into ``score`` and ``sig``.

Each rule has a name, a weight and whether it convicts (adds ``bot``: the session is refused
with QueueDenied). ``score`` is the sum of the weights that fired, capped at 100. To add a rule,
append a :class:`Rule` to :data:`RULES`; docs/visitor-api.md ("Signals and score") lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

HEADLESS_MARKERS = ("headlesschrome", "phantomjs", "puppeteer", "playwright", "selenium")
BUSY_NETWORK_PER_MINUTE = 20


@dataclass(frozen=True)
class Evidence:
    """What one identify call shows: the agent's report and the request's headers."""

    signals: Mapping[str, Any]
    user_agent: str
    accept_language: str
    identifies_from_network: int  # in the current minute, this one included


@dataclass(frozen=True)
class Rule:
    """One signal rule."""

    name: str
    weight: int
    convicts: bool
    fires: Callable[[Evidence], bool]


RULES: tuple[Rule, ...] = (
    Rule("webdriver", 100, True, lambda e: e.signals.get("webdriver") is True),
    Rule(
        "headless-ua",
        100,
        True,
        lambda e: not e.user_agent or any(m in e.user_agent.lower() for m in HEADLESS_MARKERS),
    ),
    Rule("no-accept-language", 30, False, lambda e: not e.accept_language.strip()),
    Rule("no-languages", 20, False, lambda e: e.signals.get("languages") == 0),
    Rule(
        "busy-network",
        40,
        False,
        lambda e: e.identifies_from_network > BUSY_NETWORK_PER_MINUTE,
    ),
)


def assess(evidence: Evidence) -> tuple[int, list[str]]:
    """``(score, sig)`` for ``evidence``: sig lists the rules that fired, plus ``bot``."""
    fired = [rule for rule in RULES if rule.fires(evidence)]
    score = min(100, sum(rule.weight for rule in fired))
    sig = [rule.name for rule in fired]
    if any(rule.convicts for rule in fired):
        sig.append("bot")
    return score, sig
