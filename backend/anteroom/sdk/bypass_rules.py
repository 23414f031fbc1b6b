"""Bypass rules (docs/operators.md, "Bypass rules"): requests that pass without queueing.

A room's ``bypass`` is an ordered list of at most 50 rules; the first that matches a request lets
it through with no admission check:

- ``{"kind": "path-prefix", "value": "/static/"}``: the path is the prefix or lies below it
  (``/healthz`` matches ``/healthz`` and ``/healthz/db``, not ``/healthzz``). It is matched,
  case-sensitively, on the one reading of a *plain* path, the reading the edge protects with
  (``RouteTable.plain_reading``: printable ASCII, slashes collapsed, no dot segment, no escape
  that a router could read two ways). Any other path never matches a prefix and is checked as
  usual; one whose readings disagree is refused before the rules are read. So neither
  ``/static/../checkout`` nor ``/static%2F..%2Fcheckout`` gets through.
- ``{"kind": "address-range", "value": "203.0.113.0/24"}``: the client's address (IPv4, IPv6;
  an IPv4-mapped IPv6 address is its IPv4 one) is in the network. The address is the one the
  edge was given (``client_ip``: the peer unless the site trusts a proxy's header), never a
  ``X-Forwarded-For`` the client wrote.
- ``{"kind": "header" | "cookie", "name": …, "secret": …}``: the request carries that header
  (any case) or cookie with exactly the secret (16 to 256 characters).

Secrets. The service stores each one hashed with scrypt (N=2**14, r=8, p=1, a random 16-byte
salt per rule): a dump of Redis yields no secret, and guessing one costs a memory-hard hash per
try. That is too slow to run on every request, so the edge is given its rules with the secrets
in clear, from the site's own configuration, where the monitoring that sends them is
configured too; it compares the HMAC of the presented value under a per-process random key
with the HMAC of the secret, in constant time (``hmac.compare_digest`` on equal-length
digests: neither the content nor the length of the secret leaks through timing). A rule read
back from storage (``stored=True``) keeps only the hash and is checked with scrypt.

Standard library only (the site SDK); the Node twin is ``frontend/node/bypass-rules.js``, and
both run ``tests/fixtures/edge_cases.json``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "KINDS",
    "MAX_RULES",
    "Rule",
    "RuleError",
    "hash_secret",
    "match",
    "parse_cookies",
    "parse_rules",
    "verify_secret",
]

KINDS = ("path-prefix", "address-range", "header", "cookie")
MAX_RULES = 50
MIN_SECRET_LENGTH = 16
MAX_SECRET_LENGTH = 256
MAX_VALUE_LENGTH = 200
# scrypt's cost: ~16 MiB and some tens of ms per hash; run on writes, never per request.
SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_LENGTH = 2**14, 8, 1, 32
_HASH_PREFIX = "scrypt"
# A header or cookie name: an HTTP token (RFC 9110).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
# A prefix spelled as a plain path reads: printable ASCII but the backslash and '%'.
_PLAIN_PREFIX = re.compile(r"/[!-$&-\[\]-~]*")
_CIDR = re.compile(r"[0-9A-Fa-f:.]+/[0-9]{1,3}")
# Headers the edge reads for itself: a rule on them would be a second admission.
_RESERVED_HEADERS = frozenset({"cookie", "anteroom-admission", "anteroom-ticket", "host"})
# Keys the HMAC of a process: secrets are compared through it (see the module docstring).
_PROCESS_KEY = os.urandom(32)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class RuleError(ValueError):
    """A rule list is invalid; the message names the field (``bypass[2].value: not a CIDR``)."""


def _digest(text: str) -> bytes:
    return hmac.new(_PROCESS_KEY, text.encode("utf-8", "surrogatepass"), "sha256").digest()


def _scrypt(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(
        secret.encode("utf-8"), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=SCRYPT_LENGTH
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_secret(secret: str, salt: bytes | None = None) -> str:
    """``scrypt$<salt>$<hash>`` (base64url) of ``secret``, with a fresh random salt by default."""
    salt = os.urandom(16) if salt is None else salt
    return f"{_HASH_PREFIX}${_b64(salt)}${_b64(_scrypt(secret, salt))}"


def verify_secret(value: str, hashed: str) -> bool:
    """Is ``value`` the secret ``hashed`` (:func:`hash_secret`) was made of? Constant time."""
    try:
        kind, salt, expected = hashed.split("$")
        salt_bytes, expected_bytes = _unb64(salt), _unb64(expected)
    except ValueError:
        return False
    if kind != _HASH_PREFIX:
        return False
    return hmac.compare_digest(_scrypt(value, salt_bytes), expected_bytes)


@dataclass(frozen=True)
class Rule:
    """One checked rule. ``value``: the prefix or the network (canonical); ``name``: the header
    (lower-case) or cookie name; ``secret_hash``: the stored hash, when the rule came from
    storage or was :meth:`stored` (a clear secret stays in memory only, never in ``repr``)."""

    kind: str
    value: str | None = None
    name: str | None = None
    secret_hash: str | None = None
    secret: str | None = field(default=None, repr=False, compare=False)
    network: Network | None = field(default=None, repr=False, compare=False)
    # A rule sent back by its ``secretId`` (``parse_rules(keep=True)``): it keeps the secret the
    # room stores for it, until ``keep_secrets`` puts that secret's hash in its place.
    kept: str | None = None
    digest: bytes | None = field(default=None, repr=False, compare=False)

    def stored(self) -> dict[str, Any]:
        """The rule as the room hash keeps it: the secret hashed (a fresh salt each time)."""
        if self.kind in ("path-prefix", "address-range"):
            return {"kind": self.kind, "value": self.value}
        hashed = self.secret_hash if self.secret is None else hash_secret(self.secret)
        return {"kind": self.kind, "name": self.name, "secretHash": hashed}

    def public(self) -> dict[str, Any]:
        """The rule as the management API shows it: never the secret nor its hash.

        ``secretId`` (the first 8 characters of the salt) changes whenever the secret is set
        again, so the audit log shows a new secret without showing it.
        """
        if self.kind in ("path-prefix", "address-range"):
            return {"kind": self.kind, "value": self.value}
        salt = (self.secret_hash or "").split("$")[1:2]
        return {
            "kind": self.kind,
            "name": self.name,
            "secret": None,
            "secretId": salt[0][:8] if salt else None,
        }

    def matches_secret(self, presented: str) -> bool:
        """Is ``presented`` this rule's secret? Constant time."""
        if self.digest is not None:
            return hmac.compare_digest(_digest(presented), self.digest)
        return self.secret_hash is not None and verify_secret(presented, self.secret_hash)


def _prefix_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return "must be a path prefix ('/static/'), not empty"
    if len(value) > MAX_VALUE_LENGTH:
        return f"must be at most {MAX_VALUE_LENGTH} characters"
    if not _PLAIN_PREFIX.fullmatch(value):
        return "must start with '/' and be printable ASCII without '%' or '\\' (decoded)"
    if "//" in value or any(s in (".", "..") for s in value.split("/")):
        return "must not hold '//' or a '.' or '..' segment"
    if value == "/":
        return "must name a path below '/' (a prefix of '/' would let every request through)"
    return None


def _network(value: Any) -> Network | str:
    """The network of a CIDR, or why ``value`` is none."""
    if not isinstance(value, str) or not _CIDR.fullmatch(value):
        return "not a CIDR (an address range as address/prefix-length: '203.0.113.0/24')"
    try:
        return ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        if "host bits" in str(exc):
            return "not a CIDR: host bits set (the range's first address, then /length)"
        return "not a CIDR (an address range as address/prefix-length: '203.0.113.0/24')"


def _secret_problem(value: Any) -> str | None:
    ok = isinstance(value, str) and MIN_SECRET_LENGTH <= len(value) <= MAX_SECRET_LENGTH
    if not ok or not value.isprintable() or not value.isascii():
        return f"must be printable ASCII of {MIN_SECRET_LENGTH} to {MAX_SECRET_LENGTH} characters"
    return None


_SECRET_ID = re.compile(r"^[A-Za-z0-9_-]{1,22}$")


def _parse_one(raw: Any, where: str, stored: bool, keep: bool = False) -> Rule:
    if isinstance(raw, Rule) and (raw.secret_hash or raw.value):
        return raw  # checked already (a kept secret put back by keep_secrets)
    if not isinstance(raw, dict):
        raise RuleError(f"{where}: must be an object with a kind")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise RuleError(f"{where}.kind: must be one of {', '.join(KINDS)}")
    secret_key = "secretHash" if stored else "secret"
    allowed = {"kind", "value"} if kind in ("path-prefix", "address-range") else None
    allowed = allowed or {"kind", "name", secret_key, *(("secretId",) if keep else ())}
    for key in raw:
        if key not in allowed:
            raise RuleError(f"{where}.{key}: unknown field (a {kind} rule has {sorted(allowed)})")
    if kind == "path-prefix":
        why = _prefix_problem(raw.get("value"))
        if why:
            raise RuleError(f"{where}.value: {why}")
        return Rule(kind, value=raw["value"])
    if kind == "address-range":
        network = _network(raw.get("value"))
        if isinstance(network, str):
            raise RuleError(f"{where}.value: {network}")
        return Rule(kind, value=str(network), network=network)
    name = raw.get("name")
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        raise RuleError(f"{where}.name: must be a {kind} name (letters, digits, -, _ …)")
    if kind == "header":
        name = name.lower()
        if name in _RESERVED_HEADERS:
            raise RuleError(f"{where}.name: {name} is read by the edge itself")
    if stored:
        hashed = raw.get("secretHash")
        if not isinstance(hashed, str) or not hashed.startswith(_HASH_PREFIX + "$"):
            raise RuleError(f"{where}.secretHash: must be a stored hash")
        return Rule(kind, name=name, secret_hash=hashed)
    secret = raw.get("secret")
    if keep and secret is None and "secretId" in raw:
        kept = raw["secretId"]
        if not isinstance(kept, str) or not _SECRET_ID.match(kept):
            raise RuleError(f"{where}.secretId: must be the secretId an answer showed")
        return Rule(kind, name=name, kept=kept)
    why = _secret_problem(secret)
    if why:
        raise RuleError(f"{where}.secret: {why}")
    return Rule(kind, name=name, secret=secret, digest=_digest(secret))


def parse_rules(
    raw: Any, *, field_name: str = "bypass", stored: bool = False, keep: bool = False
) -> list[Rule]:
    """Check a list of rules (secrets in clear; or, ``stored``, as :meth:`Rule.stored` wrote
    them); :class:`RuleError` names the first bad field (``bypass[2].value: not a CIDR``).

    ``keep``: a header or cookie rule may give its ``secretId`` instead of its secret, to keep
    the one stored (:func:`keep_secrets` finds it).
    """
    if not isinstance(raw, list | tuple):
        raise RuleError(f"{field_name}: must be a list of rules")
    if len(raw) > MAX_RULES:
        raise RuleError(f"{field_name}: at most {MAX_RULES} rules")
    return [_parse_one(rule, f"{field_name}[{i}]", stored, keep) for i, rule in enumerate(raw)]


def keep_secrets(
    raw: Sequence[Any], stored: Sequence[Rule], field_name: str = "bypass"
) -> list[Any]:
    """``raw`` with each rule given by its ``secretId`` replaced by the stored rule of the same
    kind, name and secret (its hash kept); RuleError names one that matches no stored rule."""
    rules = parse_rules(list(raw), field_name=field_name, keep=True)
    out: list[Any] = []
    for i, (given, rule) in enumerate(zip(raw, rules, strict=True)):
        if rule.kept is None:
            out.append(given)
            continue
        found = next(
            (s for s in stored
             if (s.kind, s.name) == (rule.kind, rule.name) and s.public()["secretId"] == rule.kept),
            None,
        )  # fmt: skip
        if found is None:
            raise RuleError(
                f"{field_name}[{i}].secretId: names no secret this room keeps for that "
                f"{rule.kind}; send its secret"
            )
        out.append(found)
    return out


def parse_cookies(header: str) -> dict[str, str]:
    """Cookie name → value of a ``Cookie`` header (the first of a repeated name, as the edge's
    own ``cookie_value`` reads it)."""
    found: dict[str, str] = {}
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        found.setdefault(key, value)
    return found


def _address(text: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not text:
        return None
    try:
        address = ipaddress.ip_address(text.strip().split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # a v4 client on a dual-stack socket
    return address


def match(
    rules: Sequence[Rule],
    path: str | None,
    client_address: str | None,
    headers: Mapping[str, str],
    cookies: Mapping[str, str],
) -> tuple[int, Rule] | None:
    """(index, rule) of the first rule ``rules`` that matches the request, or None.

    ``path``: the plain reading of the path (None: the path has more than one, and no prefix
    rule matches); ``headers`` by lower-case name; ``cookies`` by name.
    """
    address: Any = False  # parsed once, when a range rule asks
    for index, rule in enumerate(rules):
        if rule.kind == "path-prefix":
            prefix = rule.value or ""
            if path is not None and (path == prefix or path.startswith(prefix.rstrip("/") + "/")):
                return index, rule
        elif rule.kind == "address-range":
            if address is False:
                address = _address(client_address)
            network = rule.network
            if network is None and rule.value:
                network = ipaddress.ip_network(rule.value)
            if address is not None and network is not None and address in network:
                return index, rule
        else:
            source = headers if rule.kind == "header" else cookies
            presented = source.get(rule.name or "")
            if presented is not None and rule.matches_secret(presented):
                return index, rule
    return None
