"""Verified search crawlers (docs/operators.md, "Search crawlers"): who they are, and a check.

A request's User-Agent may claim to be an engine's crawler; anyone can write one. The engines
document how to check the claim, and this is it: the client address's reverse name (PTR) must
end in one of the engine's domains (``crawl-66-249-66-1.googlebot.com``), and that name's
forward addresses (A for an IPv4 client, AAAA for IPv6) must include the client address. A
claim that fails is no crawler: the caller treats the request as anyone's.

Cost: one PTR and one A (or AAAA) question per new (engine, address), over UDP to one
resolver: the one given (``host:port``), else the system's first ``nameserver`` in
``/etc/resolv.conf``. Both share one deadline (``timeout``); a timeout, a refused or broken
answer or an unreachable resolver means "not verified", never an error and never a pass. A
verdict is kept for its records' TTL (from ``MIN_TTL`` to ``MAX_TTL``; ``NEGATIVE_TTL`` for a
name that does not exist, ``FAILURE_TTL`` after a failure, so a resolver that is down costs one
timeout per address and ``FAILURE_TTL``), at most ``max_entries`` verdicts, least recently used
forgotten first. New verifications are budgeted per process (``NEW_PER_SEC``, a burst of
``NEW_BURST``): a flood of claims from ever new addresses (IPv6 has plenty) costs at most that
many DNS questions a second, beyond which a claim is not verified (not remembered: asked again
once the budget allows), and the remembered crawlers keep their verdicts meanwhile.

Standard library only: the edge (``anteroom.edge``) and the service ask the same way.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from anteroom.sdk import dns_client as dns
from anteroom.sdk.dns_client import resolver_address, system_resolver

__all__ = [
    "ENGINES",
    "ENGINE_NAMES",
    "CrawlerCheck",
    "Engine",
    "claimed_engine",
    "resolver_address",
    "system_resolver",
]


@dataclass(frozen=True)
class Engine:
    """A search engine's crawler: its name in settings, the User-Agent tokens that claim it
    (matched in any case) and the domains its reverse names end in (as the engine documents)."""

    name: str
    tokens: tuple[str, ...]
    domains: tuple[str, ...]

    def owns(self, host: str) -> bool:
        """Is ``host`` (a reverse name) in one of this engine's domains?"""
        host = host.lower().rstrip(".")
        return any(host == d or host.endswith("." + d) for d in self.domains)


# Each engine's documented verification (reverse DNS, then forward DNS). Google's user-triggered
# fetchers (googleusercontent.com) are left out: any cloud machine of Google's has such a name.
ENGINES: tuple[Engine, ...] = (
    Engine(
        "google",
        ("googlebot", "google-inspectiontool", "googleother", "storebot-google", "adsbot-google"),
        ("googlebot.com", "google.com"),
    ),
    Engine("bing", ("bingbot", "adidxbot", "microsoftpreview"), ("search.msn.com",)),
    Engine("apple", ("applebot",), ("applebot.apple.com",)),
    Engine(
        "yandex",
        ("yandexbot", "yandeximages", "yandexmobilebot"),
        ("yandex.ru", "yandex.net", "yandex.com"),
    ),
    Engine("baidu", ("baiduspider",), ("baidu.com", "baidu.jp")),
)
ENGINE_NAMES: tuple[str, ...] = tuple(e.name for e in ENGINES)
USER_AGENT_READ = 512  # a claim is in a User-Agent's first characters; the rest is not read

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
DEFAULT_TIMEOUT = 1.0  # seconds for both questions together
MIN_TTL, MAX_TTL = 30.0, 86_400.0
NEGATIVE_TTL = 300.0  # no reverse name, or one that is not the engine's
FAILURE_TTL = 30.0  # timeout, refusal, unreachable resolver: asked again after this
MAX_ENTRIES = 10_000
NEW_PER_SEC, NEW_BURST = 50.0, 100.0  # new verifications a second per process


def claimed_engine(user_agent: str | None, among: Iterable[Engine] = ENGINES) -> Engine | None:
    """The engine whose crawler ``user_agent`` claims to be, if any (a claim, not a proof)."""
    if not user_agent:
        return None
    text = user_agent[:USER_AGENT_READ].lower()
    for engine in among:
        if any(token in text for token in engine.tokens):
            return engine
    return None


class CrawlerCheck:
    """Checks crawler claims by reverse then forward DNS, remembering verdicts for their TTL.

    ``resolver``: ``host:port`` ("" for the system's); ``clock`` is injectable (monotonic
    seconds) so tests move time instead of waiting; ``ask`` too (``dns_client.ask``'s
    signature): the shared edge case table answers from canned DNS facts through it.
    """

    def __init__(
        self,
        resolver: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = MAX_ENTRIES,
        new_per_sec: float = NEW_PER_SEC,
        new_burst: float = NEW_BURST,
        ask: Callable[[tuple[str, int], str, int, float], dns.Answer] | None = None,
    ) -> None:
        self._question = ask or dns.ask
        self.server = resolver_address(resolver or system_resolver())
        self.timeout = timeout
        self.clock = clock
        self.max_entries = max_entries
        self.lookups = 0  # verifications asked of the resolver: what the cache saves
        self.over_budget = 0  # claims not verified because the budget was spent
        self.new_per_sec, self.new_burst = new_per_sec, new_burst
        self._tokens, self._since = new_burst, clock()
        self._lock = threading.Lock()
        self._verdicts: OrderedDict[tuple[str, str], tuple[bool, float]] = OrderedDict()

    def forget(self) -> None:
        """Forget every verdict: the next claims are asked of DNS again."""
        with self._lock:
            self._verdicts.clear()

    def verified(
        self, address: str | None, user_agent: str | None, among: Sequence[Engine] = ENGINES
    ) -> Engine | None:
        """The engine ``user_agent`` claims, among ``among``, when ``address`` proves it; else
        None (no claim, a claim that fails, or no answer in time)."""
        engine = claimed_engine(user_agent, among)
        if engine is None:
            return None
        client = _client_address(address)
        if client is None:
            return None
        key = (engine.name, client.compressed)
        now = self.clock()
        with self._lock:
            known = self._verdicts.get(key)
            if known is not None and known[1] > now:
                self._verdicts.move_to_end(key)
                return engine if known[0] else None
            elapsed = max(0.0, now - self._since)
            self._tokens = min(self.new_burst, self._tokens + elapsed * self.new_per_sec)
            self._since = now
            if self._tokens < 1:
                self.over_budget += 1
                return None
            self._tokens -= 1
        self.lookups += 1
        ok, ttl = self._ask(engine, client)
        with self._lock:
            self._verdicts[key] = (ok, self.clock() + ttl)
            self._verdicts.move_to_end(key)
            while len(self._verdicts) > self.max_entries:
                self._verdicts.popitem(last=False)
        return engine if ok else None

    def _ask(self, engine: Engine, client: IPAddress) -> tuple[bool, float]:
        """(verified, seconds the verdict holds): reverse name, then its forward addresses."""
        deadline = time.monotonic() + self.timeout
        try:
            reverse = self._question(self.server, client.reverse_pointer, dns.PTR, deadline)
            if reverse.rcode == dns.NXDOMAIN:
                return False, NEGATIVE_TTL
            if reverse.rcode != dns.NOERROR:
                raise dns.DnsFailed(f"rcode {reverse.rcode}")
            names, ptr_ttl = dns.follow(reverse, client.reverse_pointer, dns.PTR)
            ours = [n for n in names if isinstance(n, str) and engine.owns(n)]
            if not ours:
                return False, _bounded(ptr_ttl, NEGATIVE_TTL)
            qtype, size = (dns.A, 4) if client.version == 4 else (dns.AAAA, 16)
            for name in ours[:4]:  # a few names at most: each costs a question
                forward = self._question(self.server, name, qtype, deadline)
                if forward.rcode not in (dns.NOERROR, dns.NXDOMAIN):
                    raise dns.DnsFailed(f"rcode {forward.rcode}")
                found, a_ttl = dns.follow(forward, name, qtype)
                packed = client.packed
                if any(isinstance(d, bytes) and len(d) == size and d == packed for d in found):
                    ttl = min(t for t in (ptr_ttl, a_ttl) if t is not None)
                    return True, _bounded(ttl, MIN_TTL)
            return False, _bounded(ptr_ttl, NEGATIVE_TTL)
        except dns.DnsFailed:
            return False, FAILURE_TTL


def _bounded(ttl: int | None, default: float) -> float:
    return default if ttl is None else min(MAX_TTL, max(MIN_TTL, float(ttl)))


def _client_address(text: str | None) -> IPAddress | None:
    """The client's address; an IPv4-mapped IPv6 one as its IPv4 address."""
    try:
        address = ipaddress.ip_address((text or "").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
