"""The service's side of a room's bypass rules (issue 26).

An ``enter`` (the visitor API's, the plain page's) whose request matches one of the room's
address-range, header or cookie rules takes the skip lane: admitted at once within capacity,
over and above the rate (``Engine.enter(..., bypass=True)``). Path-prefix rules name the site's
paths, which never reach the service: they do not apply here.

Cost. A room without rules costs one dict lookup (``room["bypass"]`` is empty): nothing else
runs. With rules, the stored list is parsed once per process and version of the list. A secret
is stored as an scrypt hash (~60 ms and 16 MiB a check), far too slow per request, so a
presented value is checked against it once and the outcome remembered, keyed by the HMAC of the
rule's hash and the presented value under a per-process random key: a monitor sending its
secret pays scrypt once per process, then a dict lookup. The HMAC, not the value, is the key,
so the lookup's timing tells nothing about the secret; the check itself is constant time.

Budgets are per environment (a tenant), so one tenant's garbage spends only its own:

- new values are checked at most ``SCRYPT_PER_SEC`` a second per environment and process (a
  burst of ``SCRYPT_BURST``); beyond that a value is treated as no match (the visitor queues as
  anyone would) and checked later;
- every environment's checks together take at most ``PROCESS_SCRYPT_PER_SEC`` a second (the
  worker's CPU is bounded whatever is attacked), and an environment that is checking values
  right now (its own budget not full) leaves the last ``RESERVE`` of that to those that are not:
  a holder of another environment, arriving during an attack on one or several others (not
  on all at once), is checked on its first request;
- each environment remembers its own verdicts: the right values (one per secret rule) apart
  from the wrong ones, so no flood of made-up values, its own or another's, pushes a verified
  holder's verdict out. At most ``MAX_TENANTS`` environments are remembered, each with at most
  ``MAX_VERDICTS`` wrong values and ``MAX_GOOD`` right ones, least recently used forgotten
  first (~170 bytes a verdict: 256 x 320 of them, ~14 MB, at the very most; ~55 kB for one
  environment under attack).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from anteroom.queue.rooms import room_config as rooms
from anteroom.sdk import bypass_rules

__all__ = ["SCRYPT_PER_SEC", "matches"]

SCRYPT_PER_SEC = 4.0  # new secrets checked per second per environment and process
SCRYPT_BURST = 8.0
PROCESS_SCRYPT_PER_SEC = 8.0  # all environments together: at most ~50% of a core on scrypt
PROCESS_SCRYPT_BURST = 16.0
RESERVE = 4.0  # of the process's budget, left to environments not checking values right now
MAX_TENANTS = 256  # environments remembered, least recently used forgotten first
MAX_VERDICTS = 256  # wrong values remembered per environment, oldest forgotten first
MAX_GOOD = 64  # right values remembered per environment (one per secret rule it uses)
MAX_RULE_LISTS = 256

_PROCESS_KEY = os.urandom(32)
_lock = threading.Lock()
clock: Callable[[], float] = time.monotonic  # tests drive it


class Bucket:
    """A token bucket: ``rate`` tokens a second, up to ``burst``."""

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.since = burst, now

    def level(self, now: float) -> float:
        """Tokens held at ``now`` (refilled since the last look)."""
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.since) * self.rate)
        self.since = now
        return self.tokens


class Tenant:
    """One environment's scrypt budget and verdicts in this process."""

    def __init__(self, now: float) -> None:
        self.budget = Bucket(SCRYPT_PER_SEC, SCRYPT_BURST, now)
        self.good: OrderedDict[bytes, None] = OrderedDict()
        self.bad: OrderedDict[bytes, None] = OrderedDict()

    def verdict(self, key: bytes) -> bool | None:
        """The remembered outcome for ``key``, if any."""
        if key in self.good:
            self.good.move_to_end(key)
            return True
        return False if key in self.bad else None

    def remember(self, key: bytes, verdict: bool) -> None:
        """Remember an outcome; each kind is bounded apart, so wrong ones never push out right."""
        kept, bound = (self.good, MAX_GOOD) if verdict else (self.bad, MAX_VERDICTS)
        kept[key] = None
        while len(kept) > bound:
            kept.popitem(last=False)


# stored list (JSON) -> parsed rules without path prefixes
_RULES: OrderedDict[str, list[bypass_rules.Rule]] = OrderedDict()
# environment -> its budget and verdicts
_TENANTS: OrderedDict[str, Tenant] = OrderedDict()
_process = Bucket(PROCESS_SCRYPT_PER_SEC, PROCESS_SCRYPT_BURST, time.monotonic())


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


def _tenant(env: str, now: float) -> Tenant:
    """``env``'s record, made (and the least recently used forgotten) when new; under _lock."""
    tenant = _TENANTS.get(env)
    if tenant is None:
        tenant = _TENANTS[env] = Tenant(now)
        while len(_TENANTS) > MAX_TENANTS:
            _TENANTS.popitem(last=False)
    else:
        _TENANTS.move_to_end(env)
    return tenant


def _take_budget(tenant: Tenant, now: float) -> bool:
    """One scrypt check from ``tenant``'s budget and the process's, if both allow; under _lock.

    A tenant already spending (its own bucket not full) may not take the process's last
    ``RESERVE``: what another tenant's attack leaves is there for the first check of a quiet one.
    """
    own = tenant.budget.level(now)
    floor = 0.0 if own >= tenant.budget.burst else RESERVE
    if own < 1 or _process.level(now) < 1 + floor:
        return False
    tenant.budget.tokens -= 1
    _process.tokens -= 1
    return True


def _is_secret(env: str, rule: bypass_rules.Rule, presented: str) -> bool:
    hashed = rule.secret_hash or ""
    mac = hmac.new(_PROCESS_KEY, hashed.encode("ascii", "replace"), "sha256")
    mac.update(b"\0" + presented.encode("utf-8", "surrogatepass"))
    key = mac.digest()
    with _lock:
        now = clock()
        tenant = _tenant(env, now)
        known = tenant.verdict(key)
        if known is not None:
            return known
        if not _take_budget(tenant, now):
            return False  # not remembered: checked once the budget allows
    verdict = bypass_rules.verify_secret(presented, hashed)  # constant time
    with _lock:
        tenant.remember(key, verdict)
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
    env = str(room.get("environment") or "")
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
        if presented is not None and _is_secret(env, rule, presented):
            return True
    return False
