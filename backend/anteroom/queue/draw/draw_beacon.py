"""A public randomness beacon for a room's draw (docs/draw.md).

The operator knows a draw's seed, so the commitment alone does not stop them from making
identities until one ranks well. A room may name a beacon (``drawBeacon``): a drand-style HTTP
service, ``GET <url>/public/<round>`` → ``{"round": n, "randomness": "<hex>", ...}``, whose
round ``n`` is emitted at ``genesisTime + (n - 1) * period`` seconds. When the opening is
scheduled, the commitment names the first round emitted at or after opensAt: nobody, the
operator included, knows its value then. At the draw the service fetches it and the order keys
take it (``anteroom.sdk.draw.order_key``); until it answers, the draw waits and nobody is
admitted from the pre-queue. drand's BLS signature over the value is not checked here: anyone
can fetch the round from drand (or another relay) and compare.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from anteroom.queue.draw import outbound_fetch

BEACON_KEYS = ("url", "genesisTime", "period")
# The whole fetch (name, connect, TLS, answer): the draw's own background step waits this long
# at most, and the room ticker not at all (queue/draw/draw_worker.py); the next tick retries.
FETCH_DEADLINE_SEC = outbound_fetch.DEADLINE_SEC
# drand's randomness is 32 bytes; a beacon's value is published, so its size is bounded.
_HEX = re.compile(r"(?:[0-9a-f]{2}){16,64}\Z")

__all__ = [
    "BEACON_KEYS", "FETCH_DEADLINE_SEC", "beacon_problems", "fetch_randomness", "round_at",
]  # fmt: skip


def beacon_problems(value: Any, url_problem: Callable[[Any], str | None]) -> dict[str, str]:
    """Each bad part of a ``drawBeacon`` value by its name (``drawBeacon.url``): null, or
    ``{url, genesisTime, period}`` with ``url`` passing ``url_problem`` and no query,
    ``genesisTime`` epoch seconds and ``period`` seconds from 1 to 3,600 (drand's /info gives
    both)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or set(value) != set(BEACON_KEYS):
        return {"drawBeacon": "must be null or an object of " + ", ".join(BEACON_KEYS)}
    problems: dict[str, str] = {}
    why = url_problem(value["url"])
    if why:
        problems["drawBeacon.url"] = why
    elif "?" in value["url"] or "#" in value["url"]:
        problems["drawBeacon.url"] = "must be the beacon's base URL, without query or fragment"
    genesis, period = value["genesisTime"], value["period"]
    if isinstance(genesis, bool) or not isinstance(genesis, int) or not 0 <= genesis < 2**40:
        problems["drawBeacon.genesisTime"] = "must be epoch seconds (an integer)"
    if isinstance(period, bool) or not isinstance(period, int) or not 1 <= period <= 3_600:
        problems["drawBeacon.period"] = "must be an integer from 1 to 3,600 (seconds)"
    return problems


def round_at(beacon: dict[str, Any], opens_at_ms: int) -> int:
    """The first round the beacon emits at or after ``opens_at_ms`` (round 1 at genesis)."""
    since_ms = opens_at_ms - beacon["genesisTime"] * 1000
    period_ms = beacon["period"] * 1000
    return max(1, -(-since_ms // period_ms) + 1)


def fetch_randomness(
    url: str, round_number: int, outbound: outbound_fetch.Outbound | None = None
) -> str | None:
    """That round's randomness (lowercase hex) from ``<url>/public/<round>``; None when the
    beacon does not answer it in time (down, slow, refused by the outbound policy, not emitted
    yet, or an answer of another round or form)."""
    address = f"{url.rstrip('/')}/public/{round_number}"
    try:
        body = (outbound or outbound_fetch.policy()).get_json(address)
    except outbound_fetch.FetchFailed:
        return None
    if not isinstance(body, dict) or body.get("round") != round_number:
        return None
    value = body.get("randomness")
    if not isinstance(value, str) or not _HEX.match(value.lower()):
        return None
    return value.lower()
