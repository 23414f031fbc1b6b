"""Signed agents (the IETF Web Bot Auth drafts): who a signed request comes from, or why not.

A request from a signed agent carries an RFC 9421 signature tagged ``web-bot-auth``, made with
Ed25519 over at least ``@authority`` (and ``signature-agent`` when it names its directory), with
``created`` and ``expires``, a ``nonce`` used once, and the ``keyid`` (JWK thumbprint) of a key
its directory lists. :class:`AgentVerifier` checks all of that and answers the directory's URL
the agent is known by, or a :class:`~anteroom.sdk.message_signatures.SignatureError` whose
``reason`` says what failed: ``malformed``, ``untagged``, ``algorithm``, ``components``,
``expired``, ``early``, ``window``, ``nonce``, ``replayed``, ``directory``, ``unknown-key``,
``forged``.

Directories are fetched over HTTPS (the system's trust store, or a CA file given) and kept for
their ``Cache-Control: max-age`` (between a minute and a day; five minutes without one); a
failed fetch is remembered for 30 s, so a directory that is down costs one timeout, not one per
request. Nonces are remembered until their signature expires. Standard library only.
"""

from __future__ import annotations

import heapq
import http.client
import ipaddress
import json
import re
import socket
import ssl
import threading
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from anteroom.sdk.message_signatures import (
    SignatureError,
    SignatureInput,
    SignedRequest,
    directory_url,
    ed25519_key,
    jwk_thumbprint,
    signatures_of,
    verify_signature,
)
from anteroom.sdk.structured_fields import FieldError, Item, parse_dictionary, parse_item

__all__ = [
    "AGENT_POLICIES",
    "AgentVerifier",
    "Directories",
    "Fetch",
    "NonceBook",
    "Nonces",
    "SignedAgent",
    "agents_problem",
    "https_fetch",
    "policy_for",
]

TAG = "web-bot-auth"
MAX_WINDOW_SEC = 86_400  # the longest created → expires a signature may claim
SKEW_SEC = 60  # a signature "created" this far in the future still counts (clocks differ)
MAX_DIRECTORY_BYTES = 65_536
_MAX_AGE = re.compile(r"max-age=(\d+)")

# A room's ``agents`` setting (docs/operators.md, "Signed agents") maps a key directory's host,
# or "*" for any verified agent, to what its agents get: "queue" (a place in the line as a
# visitor's, without proof of work), "lane" (admitted through a lane of its own at the room's
# agentLaneRatePerMinute, never in the visitors' line nor their rate: the service's) or
# "refuse" (403). A host it does not name, when it has no
# "*", and every request of a room with no setting, is anyone's: the signature is not checked.
AGENT_POLICIES = ("queue", "lane", "refuse")
ANY_AGENT = "*"
MAX_AGENT_RULES = 50
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"^(?=[^:]{{1,253}}(:|$)){_LABEL}(\.{_LABEL})*(:\d{{1,5}})?$")


def agents_problem(value: object) -> str | None:
    """Why ``value`` is not an ``agents`` setting (an object: host or "*" → policy), or None."""
    *most, last = (f'"{p}"' for p in AGENT_POLICIES)
    choices = f"{', '.join(most)} or {last}"
    if not isinstance(value, dict):
        return f'must be an object mapping a key directory\'s host (or "*") to {choices}'
    if len(value) > MAX_AGENT_RULES:
        return f"names at most {MAX_AGENT_RULES} hosts"
    for host, policy in value.items():
        if host != ANY_AGENT and not _HOST.match(host):
            return f'{host[:64]!r}: not a host in lower case ("agent.example", "*" for any agent)'
        if policy not in AGENT_POLICIES:
            return f"{host!r}: the policy must be {choices}, not {policy!r}"
    return None


def policy_for(rules: Mapping[str, str], directory: str) -> str | None:
    """The policy ``rules`` (a valid ``agents`` setting) give the agent whose key directory is
    ``directory`` (a URL): its host's, else "*"'s, else None (anyone's)."""
    host = urllib.parse.urlsplit(directory).netloc.lower()
    return rules.get(host) or rules.get(ANY_AGENT)


# (status, Cache-Control, body) of a GET, or raises OSError.
Fetch = Callable[[str], tuple[int, str, bytes]]


def https_fetch(timeout: float = 2.0, cafile: str | None = None, private: bool = False) -> Fetch:
    """GET over HTTPS, the certificate checked (against ``cafile`` if given).

    The URL comes from a request's ``Signature-Agent``, so anyone can name one: no redirect is
    followed (a key directory is served at its URL, and a redirect could lead to plain HTTP),
    and unless ``private`` the connection goes only to a public address, checked on the
    address actually connected to (a name that resolves elsewhere on a second look changes
    nothing): the edge must not be a way into the site's own network.
    """
    context = ssl.create_default_context(cafile=cafile)

    def fetch(url: str) -> tuple[int, str, bytes]:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise OSError("the key directory must be an https URL")
        connection = _DirectoryConnection(
            parts.hostname, parts.port or 443, timeout=timeout, context=context, private=private
        )
        try:
            path = parts.path or "/"
            connection.request(
                "GET",
                path + ("?" + parts.query if parts.query else ""),
                headers={"Accept": "application/http-message-signatures-directory+json"},
            )
            answer = connection.getresponse()
            body = answer.read(MAX_DIRECTORY_BYTES + 1) if answer.status == 200 else b""
            return answer.status, answer.getheader("Cache-Control", "") or "", body
        except http.client.HTTPException as exc:  # an answer that is not HTTP
            raise OSError(f"the key directory's answer is not HTTP ({exc})") from None
        finally:
            connection.close()

    return fetch


class _DirectoryConnection(http.client.HTTPSConnection):
    """An HTTPS connection that refuses a non-public address (unless ``private``), judged on
    the address it connects to."""

    def __init__(self, host: str, port: int, *, timeout: float, context: ssl.SSLContext,
                 private: bool) -> None:  # fmt: skip
        super().__init__(host, port, timeout=timeout, context=context)
        self._context, self._private = context, private

    def connect(self) -> None:
        last: OSError | None = None
        for family, kind, proto, _, address in socket.getaddrinfo(
            self.host, self.port, type=socket.SOCK_STREAM
        ):
            ip = ipaddress.ip_address(address[0])
            if not self._private and not ip.is_global:
                last = OSError(f"{ip} is not a public address")
                continue
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(self.timeout)
                sock.connect(address)
            except OSError as exc:
                sock.close()
                last = exc
                continue
            self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
            return
        raise last or OSError(f"{self.host} has no address")


@dataclass(frozen=True)
class SignedAgent:
    """A request's verified signer: its key directory's URL and the key's thumbprint."""

    directory: str
    keyid: str


class Directories:
    """Agents' key directories, fetched once and kept for their max-age (bounded in number)."""

    def __init__(self, fetch: Fetch, clock: Callable[[], float], most: int = 1_000) -> None:
        self.fetch, self.clock, self.most = fetch, clock, most
        self._kept: OrderedDict[str, tuple[float, dict[str, bytes] | None]] = OrderedDict()
        self._lock = threading.Lock()
        self.fetches = 0  # what the cache saves: tests and the bench read it

    def keys(self, url: str) -> dict[str, bytes]:
        """The directory's Ed25519 keys by thumbprint; SignatureError ``directory`` if it
        cannot be had (now, or in the last 30 s)."""
        now = self.clock()
        with self._lock:
            kept = self._kept.get(url)
        if kept is None or kept[0] <= now:
            kept = self._load(url, now)
        if kept[1] is None:
            raise SignatureError("directory", f"the key directory {url} cannot be read")
        return kept[1]

    def _load(self, url: str, now: float) -> tuple[float, dict[str, bytes] | None]:
        self.fetches += 1
        try:
            status, cache_control, body = self.fetch(url)
        except (OSError, ValueError):
            status, cache_control, body = 0, "", b""
        keys = _parse_directory(body) if status == 200 else None
        if keys is None:
            until = now + 30
        else:
            found = _MAX_AGE.search(cache_control or "")
            age = int(found.group(1)) if found else 300
            until = now + min(max(age, 60), 86_400)
        with self._lock:
            self._kept[url] = (until, keys)
            self._kept.move_to_end(url)
            while len(self._kept) > self.most:
                self._kept.popitem(last=False)
        return until, keys


def _parse_directory(body: bytes) -> dict[str, bytes] | None:
    if len(body) > MAX_DIRECTORY_BYTES:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    listed = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(listed, list):
        return None
    keys = {}
    for jwk in listed:
        key = ed25519_key(jwk) if isinstance(jwk, dict) else None
        if key is not None:
            keys[jwk_thumbprint(jwk)] = key
    return keys


class Nonces:
    """Nonces seen, each until its signature expires: a second use is a replay."""

    def __init__(self, most: int = 200_000) -> None:
        self.most = most
        self._until: dict[str, float] = {}
        self._expiring: list[tuple[float, str]] = []  # a heap: the soonest to expire first
        self._lock = threading.Lock()

    def first_use(self, keyid: str, nonce: str, until: float, now: float) -> bool:
        """Book ``nonce`` of ``keyid`` until ``until``; False when it was booked already.

        Full of live nonces, it refuses new ones rather than forget one that could be replayed.
        """
        name = f"{keyid} {nonce}"
        with self._lock:
            while self._expiring and self._expiring[0][0] <= now:
                _, gone = heapq.heappop(self._expiring)
                if self._until.get(gone, now + 1) <= now:
                    del self._until[gone]
            if name in self._until or len(self._until) >= self.most:
                return False
            self._until[name] = until
            heapq.heappush(self._expiring, (until, name))
            return True


class NonceBook(Protocol):
    """Where nonces are booked: :class:`Nonces` in one process, or shared (the service's)."""

    def first_use(self, keyid: str, nonce: str, until: float, now: float) -> bool: ...


class AgentVerifier:
    """Checks Web Bot Auth signatures: :meth:`verify` answers the signer, or raises."""

    def __init__(
        self,
        directories: Directories,
        nonces: NonceBook,
        clock: Callable[[], float],
        max_window: int = MAX_WINDOW_SEC,
    ) -> None:
        self.directories, self.nonces, self.clock = directories, nonces, clock
        self.max_window = max_window

    def verify(
        self, request: SignedRequest, wanted: Callable[[str], bool] = lambda directory: True
    ) -> SignedAgent | None:
        """The agent that signed ``request``; None when it carries no Web Bot Auth signature
        (an ordinary request), or names a key directory ``wanted`` passes over (a host the
        room's setting does not name: its directory is never fetched, so a signature cannot
        make the edge fetch any URL it likes). SignatureError when one is there and does not
        hold."""
        tagged = [s for s in signatures_of(request) if s.params.get("tag") == TAG]
        if not tagged:
            if request.header("signature-agent") is not None:
                raise SignatureError("untagged", f"no signature is tagged {TAG}")
            return None
        signed = tagged[0]
        now = self.clock()
        _created, expires, keyid, nonce = self._params(signed, now)
        directory = directory_url(self._agent(request, signed))
        if not wanted(directory):
            return None
        key = self.directories.keys(directory).get(keyid)
        if key is None:
            raise SignatureError("unknown-key", "the key is not in the agent's directory")
        if not verify_signature(request, signed, key):
            raise SignatureError("forged", "the signature does not match the request")
        # Booked last: a forged request must not burn the nonce of a genuine one.
        if not self.nonces.first_use(keyid, nonce, expires, now):
            raise SignatureError("replayed", "this signature's nonce was used before")
        return SignedAgent(directory, keyid)

    def _params(self, signed: SignatureInput, now: float) -> tuple[int, int, str, str]:
        params = signed.params
        alg = params.get("alg", "ed25519")
        if alg != "ed25519":
            raise SignatureError("algorithm", "only ed25519 signatures are accepted")
        created, expires = params.get("created"), params.get("expires")
        if not isinstance(created, int) or not isinstance(expires, int):
            raise SignatureError("malformed", "created and expires must be integers")
        if expires <= now:
            raise SignatureError("expired", "the signature has expired")
        if created > now + SKEW_SEC:
            raise SignatureError("early", "the signature is created in the future")
        if expires - created > self.max_window or expires <= created:
            raise SignatureError("window", f"a signature may last {self.max_window} s at most")
        keyid, nonce = params.get("keyid"), params.get("nonce")
        if not isinstance(keyid, str) or not keyid:
            raise SignatureError("malformed", "the keyid is missing")
        if not isinstance(nonce, str) or not 1 <= len(nonce) <= 256:
            raise SignatureError("nonce", "a nonce is required")
        if "@authority" not in signed.names():
            raise SignatureError("components", "the signature must cover @authority")
        return created, expires, keyid, nonce

    @staticmethod
    def _agent(request: SignedRequest, signed: SignatureInput) -> str:
        """The Signature-Agent URL the signature covers (as a string, or one dictionary
        member named by the component's ``key``)."""
        raw = request.header("signature-agent")
        covered = [i for i in signed.covered.items if i.value == "signature-agent"]
        if raw is None or not covered:
            raise SignatureError("components", "the signature must cover the Signature-Agent")
        member = covered[0].params.get("key")
        try:
            item = parse_item(raw) if member is None else parse_dictionary(raw).get(str(member))
        except FieldError:
            raise SignatureError("malformed", "the Signature-Agent is malformed") from None
        if not isinstance(item, Item) or not isinstance(item.value, str):
            raise SignatureError("malformed", "the Signature-Agent is not a URL string")
        return item.value
