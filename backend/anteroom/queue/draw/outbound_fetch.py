"""The service's own outbound GET (a draw's beacon): bounded in time, size and reach.

A tenant names the URL, so the fetch is a server-side request an attacker may aim:

- **reach**: https only (plain http only to this machine, and only when the operator allows it
  for development), no credentials in the URL, a port from 1 to 65,535; every address the host
  resolves to is checked as it is connected to, so a DNS answer cannot rebind the host onto an
  internal address after the URL was accepted: private, loopback (unless allowed), link-local,
  multicast, reserved, unspecified and every other non-global range are refused, IPv4-mapped
  IPv6 addresses as their IPv4 address, and odd IPv4 spellings (``0x7f000001``, ``2130706433``,
  ``127.1``) as the address they spell;
- **time**: one deadline for the whole fetch (name resolution, connect, TLS, request, answer),
  not per socket read, so a server sending a byte a second is cut off; names are resolved in a
  real OS thread (gevent's thread pool in a gevent worker, whose ``GEVENT_RESOLVER=block``
  would otherwise stall every greenlet), or by asking the operator's DNS server over UDP
  (``Outbound.resolver``) with the same deadline;
- **answer**: a redirect is not followed, the answer is read to ``MAX_ANSWER_BYTES`` at most
  and must be ``200`` with a JSON body.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import SplitResult, urlsplit

from anteroom.queue.connection.os_threads import gevent_patched
from anteroom.sdk import dns_client as dns

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
T = TypeVar("T")

DEADLINE_SEC = 5.0  # the whole fetch, resolution included
MAX_ANSWER_BYTES = 64 * 1024
LOOPBACK_NAMES = ("localhost",)
# What a host made only of digits, dots and hex might spell: inet_aton's IPv4 forms.
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*\.?$", re.IGNORECASE)

__all__ = [
    "DEADLINE_SEC", "MAX_ANSWER_BYTES", "FetchFailed", "FetchRefused", "Outbound", "policy",
    "set_policy",
]  # fmt: skip


class FetchFailed(Exception):
    """The fetch did not bring an answer (down, too slow, not 200, too big, not JSON)."""


class FetchRefused(FetchFailed):
    """The URL, or an address its host resolves to, is not one the service may reach."""


@dataclass(frozen=True)
class Outbound:
    """Where and how long the service's outbound fetches may go.

    ``allow_loopback``: for development, plain http and addresses of this machine are reached
    (``ANTEROOM_OUTBOUND_ALLOW_LOOPBACK``); ``resolver``: ``host:port`` of the DNS server
    outbound fetches ask (``ANTEROOM_OUTBOUND_RESOLVER``), else the system's, in an OS thread.
    """

    allow_loopback: bool = False
    resolver: str = ""
    deadline: float = DEADLINE_SEC
    cafile: str = ""  # a CA bundle trusted besides the system's ("": the system's only)

    # -- the URL, checked as it is written -------------------------------------------------

    def url_problem(self, url: str) -> str | None:
        """Why the service may not fetch ``url``, as far as the URL alone tells (its host's
        addresses are checked again at every connect), or None."""
        try:
            parts = urlsplit(url)
            port = parts.port
            host = parts.hostname
        except ValueError as exc:
            return (
                "must have a valid port (1 to 65535)"
                if "port" in str(exc).lower()
                else "is invalid"
            )
        if not host:
            return "must be an absolute URL"
        if "@" in parts.netloc or parts.username is not None:
            return "must not carry credentials"
        if port == 0:
            return "must have a valid port (1 to 65535)"
        literal = host_address(host)
        if literal is None and _NUMERIC_HOST.match(host):
            return "has a host that is neither a name nor an IP address"
        if literal is None:
            try:
                host.encode("idna")
            except UnicodeError:
                return "has an invalid host name"
        loopback = host.lower().rstrip(".") in LOOPBACK_NAMES or (
            literal is not None and unmapped(literal).is_loopback
        )
        scheme = parts.scheme.lower()
        # Plain http with the development setting: only to this machine, which for a name is
        # told by the address it is connected to (refused there otherwise).
        if scheme != "https" and not (scheme == "http" and self.allow_loopback):
            return "must use https"
        if scheme == "http" and literal is not None and not loopback:
            return "must use https (plain http reaches this machine only)"
        if loopback and not self.allow_loopback:
            return "must not name this machine (loopback)"
        if literal is not None:
            return self.address_problem(literal)
        return None

    def address_problem(self, address: IPAddress) -> str | None:
        """Why the service may not connect to ``address``, or None."""
        plain = unmapped(address)
        if plain.is_loopback:
            return None if self.allow_loopback else f"must not reach {address}: loopback"
        for kind in ("unspecified", "link_local", "multicast", "reserved", "private"):
            if getattr(plain, f"is_{kind}"):
                return f"must not reach {address}: {kind.replace('_', '-')}"
        if not plain.is_global:  # shared (100.64/10), 6to4 and the like
            return f"must not reach {address}: not a public address"
        return None

    # -- the fetch ---------------------------------------------------------------------------

    def get_json(self, url: str) -> Any:
        """``GET url``'s JSON answer within :attr:`deadline`; :class:`FetchFailed` otherwise
        (:class:`FetchRefused` when the URL or its address may not be reached)."""
        _, body = self.get_document(url)
        try:
            return json.loads(body)
        except ValueError:
            raise FetchFailed("the answer is not JSON") from None

    def get_document(
        self, url: str, accept: str = "application/json"
    ) -> tuple[dict[str, str], bytes]:
        """``GET url``'s headers (lower-case names) and body, bounded as :meth:`get_json`."""
        why = self.url_problem(url)
        if why:
            raise FetchRefused(why)
        parts = urlsplit(url)
        deadline = time.monotonic() + self.deadline
        try:
            with _overall(self.deadline):
                raw = self._get(parts, deadline, accept)
        except UnicodeError:  # a name no resolver takes (IDNA)
            raise FetchFailed("the host is not a valid name") from None
        return _headers(raw), _body(raw)

    def _get(self, parts: SplitResult, deadline: float, accept: str) -> bytes:
        host = parts.hostname or ""
        secure = parts.scheme.lower() == "https"
        port = parts.port or (443 if secure else 80)
        addresses = self.resolve(host, deadline)
        refused = [why for a in addresses if (why := self.address_problem(a))]
        if refused:  # one internal address in the answer: the name is not one to reach
            raise FetchRefused(refused[0])
        if not addresses:
            raise FetchFailed(f"{host} has no address")
        sock = _connect(addresses, port, deadline)
        try:
            peer = ipaddress.ip_address(sock.getpeername()[0].split("%")[0])
            why = self.address_problem(peer)  # the address actually connected
            if not why and not secure and not unmapped(peer).is_loopback:
                why = "must use https (plain http reaches this machine only)"
            if why:
                raise FetchRefused(why)
            if secure:
                sock = _tls(sock, host, deadline, self.cafile)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            authority = parts.netloc.rpartition("@")[2]
            request = (
                f"GET {target} HTTP/1.0\r\nHost: {authority}\r\nAccept: {accept}\r\n"
                "User-Agent: anteroom\r\nConnection: close\r\n\r\n"
            )
            _settimeout(sock, deadline)
            sock.sendall(request.encode("ascii"))
            return _read_all(sock, deadline, MAX_ANSWER_BYTES + 16 * 1024)
        except TimeoutError:
            raise FetchFailed("deadline passed") from None
        except (OSError, ssl.SSLError) as exc:
            raise FetchFailed(str(exc) or type(exc).__name__) from None
        finally:
            sock.close()

    def resolve(self, host: str, deadline: float) -> list[IPAddress]:
        """``host``'s addresses, asked within the deadline without blocking this process."""
        literal = host_address(host)
        if literal is not None:
            return [literal]
        if self.resolver:
            return _ask_dns(self.resolver, host, deadline)
        infos = in_os_thread(
            socket_getaddrinfo, deadline, host, None, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP
        )
        found: list[IPAddress] = []
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
            if address not in found:
                found.append(address)
        return found


_policy = Outbound()


def policy() -> Outbound:
    """The process's outbound policy: strict until the app sets the operator's
    (:func:`set_policy`, from ``ANTEROOM_OUTBOUND_*`` as the app is built)."""
    return _policy


def set_policy(outbound: Outbound) -> None:
    """Make ``outbound`` the process's policy, for checks on write and fetches alike."""
    global _policy
    _policy = outbound


def host_address(host: str) -> IPAddress | None:
    """The address a URL's host spells, in any spelling the resolver would take, or None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        with contextlib.suppress(OSError):
            return ipaddress.IPv4Address(socket.inet_aton(host.rstrip(".")))
    return None


def unmapped(address: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address as its IPv4 address; any other as it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


# -- time ------------------------------------------------------------------------------------


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchFailed("deadline passed")
    return left


def _settimeout(sock: socket.socket, deadline: float) -> None:
    sock.settimeout(_left(deadline))


@contextlib.contextmanager
def _overall(seconds: float) -> Iterator[None]:
    """In a gevent worker, a hard stop at the deadline whatever the socket call waiting;
    elsewhere the deadline checks around each call bound it (CPython's own waits do)."""
    if not gevent_patched():
        yield
        return
    import gevent

    try:
        with gevent.Timeout(seconds + 0.05):
            yield
    except gevent.Timeout:
        raise FetchFailed("deadline passed") from None


# One small pool of real threads per process for blocking name lookups: a lookup that hangs
# (the OS resolver's own timeouts are ~10 s) holds one of them, and the next ones wait their
# turn within their own deadline; the draw's CPU work (os_threads.py) has gevent's own pool.
_POOL_SIZE = 4
_pool: Any = None
_pool_pid = 0
_pool_lock = threading.Lock()


def socket_getaddrinfo(*args: Any) -> Any:
    """The C library's getaddrinfo, never gevent's (it runs in an OS thread here); its
    failure is returned, not raised, so a thread pool logs no trace of a name not found."""
    import _socket

    try:
        return _socket.getaddrinfo(*args)
    except (OSError, UnicodeError) as exc:
        return exc


def _lookup_pool() -> Any:
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():  # a forked worker starts its own
            if gevent_patched():
                from gevent.threadpool import ThreadPool

                _pool = ThreadPool(_POOL_SIZE)
            else:
                _pool = ThreadPoolExecutor(_POOL_SIZE, thread_name_prefix="anteroom-resolve")
            _pool_pid = os.getpid()
        return _pool


def in_os_thread(call: Callable[..., T], deadline: float, *args: Any) -> T:
    """``call(*args)`` in a real OS thread, waited for until ``deadline`` at most; the calling
    greenlet (or thread) waits, the rest of the process runs. A returned exception is raised
    here as :class:`FetchFailed`."""
    pool = _lookup_pool()
    if gevent_patched():
        import gevent

        try:
            out = pool.spawn(call, *args).get(timeout=_left(deadline))
        except gevent.Timeout:
            raise FetchFailed("deadline passed") from None
    else:
        try:
            out = pool.submit(call, *args).result(timeout=_left(deadline))
        except FutureTimeout:
            raise FetchFailed("deadline passed") from None
    if isinstance(out, BaseException):
        raise FetchFailed(str(out) or type(out).__name__)
    return out  # type: ignore[no-any-return]


# -- connect, TLS, read ----------------------------------------------------------------------


def _connect(addresses: list[IPAddress], port: int, deadline: float) -> socket.socket:
    last: Exception = FetchFailed("no address answered")
    for address in addresses:
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            _settimeout(sock, deadline)
            sock.connect((str(address), port))
            return sock
        except OSError as exc:
            sock.close()
            last = FetchFailed(f"{address}: {exc}")
        except FetchFailed:
            sock.close()
            raise
    raise last


def _tls(sock: socket.socket, host: str, deadline: float, cafile: str = "") -> socket.socket:
    context = ssl.create_default_context()
    if cafile:
        context.load_verify_locations(cafile=cafile)
    wrapped = context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    _settimeout(wrapped, deadline)  # CPython bounds the whole handshake by one timeout
    wrapped.do_handshake()
    return wrapped


def _read_all(sock: socket.socket, deadline: float, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        _settimeout(sock, deadline)  # each read waits what is left of the whole fetch's time
        chunk = sock.recv(16 * 1024)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise FetchFailed(f"the answer is over {MAX_ANSWER_BYTES} bytes")


def _headers(raw: bytes) -> dict[str, str]:
    head = raw.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    return {n.strip().lower(): v.strip() for n, _, v in (line.partition(":") for line in head)}


def _body(raw: bytes) -> bytes:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise FetchFailed("the answer is not HTTP")
    status = head.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or not status[0].startswith(b"HTTP/"):
        raise FetchFailed("the answer is not HTTP")
    code = status[1].decode("ascii", "replace")
    if code != "200":
        # 3xx included: a redirect is not followed (it could point anywhere)
        raise FetchFailed(f"answered {code}")
    if len(body) > MAX_ANSWER_BYTES:
        raise FetchFailed(f"the answer is over {MAX_ANSWER_BYTES} bytes")
    return body


# -- a DNS question over UDP (the operator's resolver) ---------------------------------------


def _ask_dns(server: str, host: str, deadline: float) -> list[IPAddress]:
    name, _, port_text = server.rpartition(":")
    address = (name.strip("[]") or server, int(port_text or 53))
    # A first; AAAA only for a name without an IPv4 address (a slow AAAA answer must not
    # cost an A answer already in hand).
    return _addresses(address, host, dns.A, deadline) or _addresses(
        address, host, dns.AAAA, deadline
    )


def _addresses(server: tuple[str, int], host: str, qtype: int, deadline: float) -> list[IPAddress]:
    """``host``'s addresses of ``qtype`` (through its CNAMEs); none for a name without any."""
    name = host.rstrip(".").encode("idna").decode("ascii")
    try:
        answer = dns.ask(server, name, qtype, deadline)
    except dns.DnsTimeout:
        raise FetchFailed("deadline passed while resolving") from None
    except dns.DnsFailed as exc:
        raise FetchFailed(f"resolver: {exc}") from None
    if answer.rcode != dns.NOERROR:  # NXDOMAIN, SERVFAIL...: no address
        return []
    found, _ = dns.follow(answer, name, qtype)
    size = 4 if qtype == dns.A else 16
    return [ipaddress.ip_address(d) for d in found if isinstance(d, bytes) and len(d) == size]
