"""The service's side of a room's bypass rules (issue 26).

An ``enter`` (the visitor API's, the plain page's) whose request matches one of the room's
address-range, header or cookie rules takes the skip lane: admitted at once within capacity,
over and above the rate (``Engine.enter(..., bypass=True)``). Path-prefix rules name the site's
paths, which never reach the service: they do not apply here.

Cost. A room without rules costs one dict lookup (``room["bypass"]`` is empty): nothing else
runs. With rules, the stored list is parsed once per process and version of the list. A secret
is stored as an scrypt hash (~60 ms and 16 MiB a check), far too slow per request, so a
presented value is checked against it once and the outcome remembered, keyed by the HMAC of the
presented value under a per-process random key (``_VERDICTS``): a monitor sending its secret
pays scrypt once per process, then a dict lookup. The HMAC, not the value, is the key, so the
lookup's timing tells nothing about the secret; the check itself is ``hmac.compare_digest``.
Wrong values are remembered too, and new values are checked at most ``SCRYPT_PER_SEC`` times a
second per process: a flood of made-up secrets cannot buy a process's CPU; beyond the budget a
value is treated as no match (the visitor queues as anyone would) and checked later.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from anteroom.queue import room_config as rooms
from anteroom.sdk import bypass_rules

__all__ = ["SCRYPT_PER_SEC", "matches"]

SCRYPT_PER_SEC = 4.0  # new secrets checked per second per process (~25% of a core)
SCRYPT_BURST = 8.0
MAX_VERDICTS = 4096  # presented values remembered (per rule), oldest forgotten first
MAX_RULE_LISTS = 256

_PROCESS_KEY = os.urandom(32)
_lock = threading.Lock()
# stored list (JSON) -> parsed rules without path prefixes
_RULES: OrderedDict[str, list[bypass_rules.Rule]] = OrderedDict()
# (rule's secret hash, HMAC of the presented value) -> is it the secret?
_VERDICTS: OrderedDict[tuple[str, bytes], bool] = OrderedDict()
_budget = [SCRYPT_BURST, time.monotonic()]  # tokens left, when last filled


def _rules(stored: str) -> list[bypass_rules.Rule]:
    with _lock:
        found = _RULES.get(stored)
        if found is not None:
            _RULES.move_to_end(stored)
            return found
    parsed = [r for r in rooms.stored_bypass(stored) if r.kind != "path-prefix"]
    with _lock:
        _RULES[stored] = parsed
        while len(_RULES) > MAX_RULE_LISTS:
            _RULES.popitem(last=False)
    return parsed


def _address(text: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The client's address as the edge's rules read it: an IPv4-mapped one is its IPv4."""
    try:
        address = ipaddress.ip_address((text or "").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # a v4 client on a dual-stack socket
    return address


def _take_budget() -> bool:
    """One scrypt check from this process's budget (a token bucket), if any is left."""
    with _lock:
        tokens, since = _budget
        now = time.monotonic()
        tokens = min(SCRYPT_BURST, tokens + (now - since) * SCRYPT_PER_SEC)
        if tokens < 1:
            _budget[:] = [tokens, now]
            return False
        _budget[:] = [tokens - 1, now]
        return True


def _is_secret(rule: bypass_rules.Rule, presented: str) -> bool:
    hashed = rule.secret_hash or ""
    digest = hmac.new(_PROCESS_KEY, presented.encode("utf-8", "surrogatepass"), "sha256")
    key = (hashed, digest.digest())
    with _lock:
        known = _VERDICTS.get(key)
    if known is not None:
        return known
    if not _take_budget():
        return False  # not remembered: checked once the budget allows
    verdict = bypass_rules.verify_secret(presented, hashed)  # constant time
    with _lock:
        _VERDICTS[key] = verdict
        while len(_VERDICTS) > MAX_VERDICTS:
            _VERDICTS.popitem(last=False)
    return verdict


def matches(
    room: Mapping[str, Any], client_address: str | None, headers: Mapping[str, str], cookie: str
) -> bool:
    """Does a request to ``room`` match one of its address-range, header or cookie rules?

    ``client_address``: as the service judges it (``request.remote_addr``, behind the
    trusted-proxy setting: a ``X-Forwarded-For`` is read only from trusted proxies);
    ``headers``: any case (werkzeug's); ``cookie``: the ``Cookie`` header.
    """
    if not room.get("bypass"):
        return False  # no rules: no work
    rules = _rules(room.get("bypassStored") or "")
    cookies: dict[str, str] | None = None
    address: Any = False  # parsed once, when a range rule asks
    for rule in rules:
        if rule.kind == "address-range":
            if address is False:
                address = _address(client_address)
            if address is not None and rule.network is not None and address in rule.network:
                return True
            continue
        if rule.kind == "cookie":
            cookies = bypass_rules.parse_cookies(cookie) if cookies is None else cookies
            presented = cookies.get(rule.name or "")
        else:
            presented = headers.get(rule.name or "")
        if presented is not None and _is_secret(rule, presented):
            return True
    return False
