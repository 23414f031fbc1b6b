"""Search crawlers at the hosted pages (docs/operators.md, "Search crawlers").

A request whose User-Agent claims an engine's crawler is checked by DNS (sdk/crawlers.py,
through ``Services.crawler_check``); one that proves it never takes a spot: a room whose
``crawlers`` setting lets its engine through sends it on to the site, uncounted (no spot, no
admission, no session: nothing is written), and any other room tells it to come back later
(503), so the waiting page is never what an engine indexes. A claim that fails, or a request
that claims nothing, is anyone's visit: no DNS question is asked for the latter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from anteroom.queue.rooms import room_config
from anteroom.sdk import crawlers
from anteroom.service_container import Services

# Seconds a crawler the room does not let through is told to wait: a line lasts for a while.
RETRY_AFTER_SEC = 3_600

Verdict = Literal["pass", "come-back"]


def crawler_verdict(
    s: Services, room: Mapping[str, Any], address: str | None, user_agent: str | None
) -> Verdict | None:
    """``pass`` (a verified crawler ``room`` lets through), ``come-back`` (a verified crawler it
    does not), or None: not a verified crawler, an ordinary visitor."""
    if crawlers.claimed_engine(user_agent) is None:
        return None  # the common case: no claim, no question
    engine = s.crawler_check.verified(address, user_agent)
    if engine is None:
        return None
    return "pass" if engine in room_config.passed_engines(room) else "come-back"
