"""A public randomness beacon for a room's draw (SPEC "A draw anyone can check").

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

import json
import re
import urllib.request
from typing import Any

BEACON_KEYS = ("url", "genesisTime", "period")
FETCH_TIMEOUT_SEC = 2.0  # the room's ticker waits this long at most; its next tick retries
MAX_ANSWER_BYTES = 64 * 1024
_HEX = re.compile(r"(?:[0-9a-f]{2})+\Z")

__all__ = ["BEACON_KEYS", "FETCH_TIMEOUT_SEC", "beacon_problem", "fetch_randomness", "round_at"]


def beacon_problem(value: Any, url_problem: Any) -> str | None:
    """Why ``value`` is not a ``drawBeacon``: null, or ``{url, genesisTime, period}`` with
    ``url`` passing ``url_problem`` and no query, ``genesisTime`` epoch seconds and ``period``
    seconds from 1 to 3,600 (drand's /info gives both)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != set(BEACON_KEYS):
        return "must be null or an object of " + ", ".join(BEACON_KEYS)
    why = url_problem(value["url"])
    if why:
        return f"url: {why}"
    if "?" in value["url"] or "#" in value["url"]:
        return "url: must be the beacon's base URL, without query or fragment"
    genesis, period = value["genesisTime"], value["period"]
    if isinstance(genesis, bool) or not isinstance(genesis, int) or not 0 <= genesis < 2**40:
        return "genesisTime: must be epoch seconds (an integer)"
    if isinstance(period, bool) or not isinstance(period, int) or not 1 <= period <= 3_600:
        return "period: must be an integer from 1 to 3,600 (seconds)"
    return None


def round_at(beacon: dict[str, Any], opens_at_ms: int) -> int:
    """The first round the beacon emits at or after ``opens_at_ms`` (round 1 at genesis)."""
    since_ms = opens_at_ms - beacon["genesisTime"] * 1000
    period_ms = beacon["period"] * 1000
    return max(1, -(-since_ms // period_ms) + 1)


def fetch_randomness(url: str, round_number: int, timeout: float = FETCH_TIMEOUT_SEC) -> str | None:
    """That round's randomness (lowercase hex) from ``<url>/public/<round>``; None when the
    beacon does not answer it (down, not emitted yet, or an answer of another round or form)."""
    address = f"{url.rstrip('/')}/public/{round_number}"
    try:
        with urllib.request.urlopen(address, timeout=timeout) as answer:
            body = json.loads(answer.read(MAX_ANSWER_BYTES))
    except (OSError, ValueError):  # URLError, HTTPError and timeouts are OSErrors
        return None
    if not isinstance(body, dict) or body.get("round") != round_number:
        return None
    value = body.get("randomness")
    if not isinstance(value, str) or not _HEX.match(value.lower()):
        return None
    return value.lower()
