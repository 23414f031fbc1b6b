"""A DNS question over UDP to one resolver, standard library only: what the crawler check
(``sdk/crawlers.py``) and the service's outbound fetch (``queue/draw/outbound_fetch.py``) ask.

One question, one deadline (``time.monotonic``); the answer must answer that question (same id,
same name and type, not truncated) and compressed names are followed a bounded number of times.
A timeout, an unreachable resolver or a broken answer is :class:`DnsFailed`.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import struct
import time
from dataclasses import dataclass

__all__ = [
    "AAAA",
    "CNAME",
    "NOERROR",
    "NXDOMAIN",
    "PTR",
    "A",
    "Answer",
    "DnsFailed",
    "DnsTimeout",
    "ask",
    "follow",
    "resolver_address",
    "system_resolver",
]  # fmt: skip

PTR, A, AAAA, CNAME = 12, 1, 28, 5
NOERROR, NXDOMAIN = 0, 3


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


class DnsTimeout(DnsFailed):
    """The deadline passed before the answer came."""


@dataclass(frozen=True)
class Answer:
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


def ask(server: tuple[str, int], name: str, qtype: int, deadline: float) -> Answer:
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
                    raise DnsTimeout("timeout")
                sock.settimeout(left)
                reply = sock.recv(4096)
                if len(reply) >= 12 and struct.unpack(">H", reply[:2])[0] == ident:
                    break
    except TimeoutError:
        raise DnsTimeout("timeout") from None
    except OSError as exc:
        raise DnsFailed(f"resolver: {exc}") from None
    try:
        return _parse(reply, question)
    except (IndexError, struct.error, UnicodeError):
        raise DnsFailed("malformed answer") from None


def _parse(reply: bytes, question: bytes) -> Answer:
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
        if rtype in (PTR, CNAME):
            data = _read_name(reply, start)[0]
        records.append((owner, rtype, ttl, data))
    return Answer(flags & 0x000F, tuple(records))


def follow(answer: Answer, name: str, rtype: int) -> tuple[list[bytes | str], int | None]:
    """The ``rtype`` data of ``name`` (through its CNAMEs) and the least TTL on the way."""
    chain = {name.lower().rstrip(".")}
    ttls: list[int] = []
    for owner, kind, ttl, data in answer.records:  # a resolver lists a chain in its order
        if kind == CNAME and owner in chain and isinstance(data, str):
            chain.add(data)
            ttls.append(ttl)
    found = [data for owner, kind, ttl, data in answer.records if kind == rtype and owner in chain]
    ttls += [ttl for owner, kind, ttl, _ in answer.records if kind == rtype and owner in chain]
    return found, (min(ttls) if ttls else None)
