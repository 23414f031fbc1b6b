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
import secrets
import socket
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

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

_PTR, _A, _AAAA, _CNAME = 12, 1, 28, 5
_NOERROR, _NXDOMAIN = 0, 3


def claimed_engine(user_agent: str | None, among: Iterable[Engine] = ENGINES) -> Engine | None:
    """The engine whose crawler ``user_agent`` claims to be, if any (a claim, not a proof)."""
    if not user_agent:
        return None
    text = user_agent[:USER_AGENT_READ].lower()
    for engine in among:
        if any(token in text for token in engine.tokens):
            return engine
    return None


def system_resolver(path: str = "/etc/resolv.conf") -> str:
    """``host:port`` of the system's first name server (``127.0.0.1:53`` when none is named)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as conf:
            for line in conf:
                parts = line.split()
                if len(parts) >= 2 and parts[0] == "nameserver":
                    host = parts[1].split("%", 1)[0]
                    return f"[{host}]:53" if ":" in host else f"{host}:53"
    except OSError:
        pass
    return "127.0.0.1:53"


def resolver_address(text: str) -> tuple[str, int]:
    """``host:port`` (an IP address; ``[v6]:port``) → a socket address; ValueError otherwise."""
    host, sep, port_text = text.strip().rpartition(":")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65_536:
        raise ValueError(f"a DNS resolver is host:port (an IP address and a port), not {text!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(
            f"a DNS resolver is host:port (an IP address and a port), not {text!r}"
        ) from None
    return host, int(port_text)


class DnsFailed(Exception):
    """No usable answer: timeout, refusal, a broken or truncated answer, no resolver."""


@dataclass(frozen=True)
class _Answer:
    rcode: int
    records: tuple[tuple[str, int, int, bytes | str], ...]  # (owner, type, ttl, data)


def _name_wire(name: str) -> bytes:
    labels = name.rstrip(".").encode("ascii").split(b".")
    if any(not 0 < len(label) < 64 for label in labels):
        raise DnsFailed(f"not a DNS name: {name!r}")
    return b"".join(bytes([len(label)]) + label for label in labels) + b"\x00"


def _read_name(msg: bytes, at: int) -> tuple[str, int]:
    """The (decompressed) name at ``at`` and where the record goes on after it."""
    labels: list[str] = []
    end = -1
    for _ in range(128):  # a name has at most 127 labels; more is a pointer loop
        length = msg[at]
        if length >= 0xC0:
            if end < 0:
                end = at + 2
            at = ((length & 0x3F) << 8) | msg[at + 1]
            continue
        if length == 0:
            return ".".join(labels).lower(), (end if end >= 0 else at + 1)
        labels.append(msg[at + 1 : at + 1 + length].decode("ascii", "replace"))
        at += 1 + length
    raise DnsFailed("malformed answer")


def _ask(server: tuple[str, int], name: str, qtype: int, deadline: float) -> _Answer:
    """One question over UDP, waited for until ``deadline`` (time.monotonic)."""
    ident = secrets.randbits(16)
    question = _name_wire(name) + struct.pack(">HH", qtype, 1)
    query = struct.pack(">HHHHHH", ident, 0x0100, 1, 0, 0, 0) + question
    family = socket.AF_INET6 if ":" in server[0] else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            # Connected: only the resolver's own datagrams are read.
            sock.connect(server)
            sock.send(query)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DnsFailed("timeout")
                sock.settimeout(left)
                reply = sock.recv(4096)
                if len(reply) >= 12 and struct.unpack(">H", reply[:2])[0] == ident:
                    break
    except TimeoutError:
        raise DnsFailed("timeout") from None
    except OSError as exc:
        raise DnsFailed(f"resolver: {exc}") from None
    try:
        return _parse(reply, question)
    except (IndexError, struct.error, UnicodeError):
        raise DnsFailed("malformed answer") from None


def _parse(reply: bytes, question: bytes) -> _Answer:
    flags, qd, an = struct.unpack(">HHH", reply[2:8])
    if not flags & 0x8000 or flags & 0x0200:  # not an answer, or truncated
        raise DnsFailed("truncated answer" if flags & 0x0200 else "malformed answer")
    if qd != 1 or reply[12 : 12 + len(question)].lower() != question.lower():
        raise DnsFailed("the answer is to another question")
    at = 12 + len(question)
    records: list[tuple[str, int, int, bytes | str]] = []
    for _ in range(an):
        owner, at = _read_name(reply, at)
        rtype, _, ttl, length = struct.unpack(">HHIH", reply[at : at + 10])
        start, at = at + 10, at + 10 + length
        if at > len(reply):
            raise DnsFailed("malformed answer")
        data: bytes | str = reply[start:at]
        if rtype in (_PTR, _CNAME):
            data = _read_name(reply, start)[0]
        records.append((owner, rtype, ttl, data))
    return _Answer(flags & 0x000F, tuple(records))


def _follow(answer: _Answer, name: str, rtype: int) -> tuple[list[bytes | str], int | None]:
    """The ``rtype`` data of ``name`` (through its CNAMEs) and the least TTL on the way."""
    chain = {name.lower().rstrip(".")}
    ttls: list[int] = []
    for owner, kind, ttl, data in answer.records:  # a resolver lists a chain in its order
        if kind == _CNAME and owner in chain and isinstance(data, str):
            chain.add(data)
            ttls.append(ttl)
    found = [data for owner, kind, ttl, data in answer.records if kind == rtype and owner in chain]
    ttls += [ttl for owner, kind, ttl, _ in answer.records if kind == rtype and owner in chain]
    return found, (min(ttls) if ttls else None)


class CrawlerCheck:
    """Checks crawler claims by reverse then forward DNS, remembering verdicts for their TTL.

    ``resolver``: ``host:port`` ("" for the system's); ``clock`` is injectable (monotonic
    seconds) so tests move time instead of waiting.
    """

    def __init__(
        self,
        resolver: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = MAX_ENTRIES,
        new_per_sec: float = NEW_PER_SEC,
        new_burst: float = NEW_BURST,
    ) -> None:
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
            reverse = _ask(self.server, client.reverse_pointer, _PTR, deadline)
            if reverse.rcode == _NXDOMAIN:
                return False, NEGATIVE_TTL
            if reverse.rcode != _NOERROR:
                raise DnsFailed(f"rcode {reverse.rcode}")
            names, ptr_ttl = _follow(reverse, client.reverse_pointer, _PTR)
            ours = [n for n in names if isinstance(n, str) and engine.owns(n)]
            if not ours:
                return False, _bounded(ptr_ttl, NEGATIVE_TTL)
            qtype, size = (_A, 4) if client.version == 4 else (_AAAA, 16)
            for name in ours[:4]:  # a few names at most: each costs a question
                forward = _ask(self.server, name, qtype, deadline)
                if forward.rcode not in (_NOERROR, _NXDOMAIN):
                    raise DnsFailed(f"rcode {forward.rcode}")
                found, a_ttl = _follow(forward, name, qtype)
                packed = client.packed
                if any(isinstance(d, bytes) and len(d) == size and d == packed for d in found):
                    ttl = min(t for t in (ptr_ttl, a_ttl) if t is not None)
                    return True, _bounded(ttl, MIN_TTL)
            return False, _bounded(ptr_ttl, NEGATIVE_TTL)
        except DnsFailed:
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
