"""Signed tokens: the one definition of the Anteroom token format and its keyring.

A token is ``<type>.<kid>.<payload>.<sig>``: ``payload`` is base64url of compact JSON claims and
``sig`` is base64url HMAC-SHA256 over ``<type>.<kid>.<payload>``, keyed with a secret derived per
token type, so a token of one type never verifies as another. Standard library only: the server SDK
(:mod:`anteroom.verify`) builds on this module inside site backends.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import time
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Self

__all__ = [
    "ADMISSION",
    "CHALLENGE",
    "INVITE",
    "INVITE_LANES",
    "MAX_TOKEN_LENGTH",
    "NETWORK_TAG",
    "NOT_RENEWABLE",
    "SESSION",
    "TICKET",
    "TOKEN_TYPES",
    "AdmissionClaims",
    "ChallengeClaims",
    "ExpiredToken",
    "ForgedToken",
    "InviteClaims",
    "Keyring",
    "MalformedToken",
    "SessionClaims",
    "TicketClaims",
    "TokenError",
    "UnknownKey",
    "b64url_decode",
    "b64url_encode",
    "decode",
    "issue",
    "network_tag",
    "new_id",
    "sign",
    "token_kid",
]

CHALLENGE = "pc1"
SESSION = "st1"
# Queue ticket claims: `qr` room id, `vid`, `t` ticket, `g` room generation, `env`, and what an
# outage admission needs without Redis: `qj` the spot's session jti, `qs` its score, `qi` its
# network tag (bindIp rooms). It expires (`iat`, `exp`: as long as its spot may go unpolled +
# 60 s, at most a day; see anteroom.queue.rooms.room_config.queue_token_life) so no ticket is
# replayable for ever.
# `qn` (1) marks a spot last seen near the head or held: a routing hint for the next poll only.
# `qk` (the spot's order key in the line) and `qu` (until when, room clock ms, the spot is kept
# unpolled) let a far poll be answered from a per-process snapshot (anteroom.queue.line.far_poll).
TICKET = "qt1"
ADMISSION = "ab1"
# An invite link's token (docs/operators.md, "Invite links"); see InviteClaims.
INVITE = "iv1"
INVITE_LANES = ("skip", "priority")
# A return link's token (the e-mail a parked visitor gets at its turn); see ReturnClaims.
RETURN_LINK = "rl1"
TOKEN_TYPES = frozenset({CHALLENGE, SESSION, TICKET, ADMISSION, INVITE, RETURN_LINK})
# The admission claim (``1`` when present) of a room with ``sessionRenewal: false``: the edges
# never ask to renew it and the service refuses to. Absent means renewable, so every admission
# signed before the claim existed keeps being renewed.
NOT_RENEWABLE = "nr"

# Not a token type: the derivation label of the key behind network tags (the `qi` claim), kept
# apart from every signing key so a tag can never be replayed as a signature.
NETWORK_TAG = "qi1"

# Far above any real token; bounds the work an attacker can make us do per request.
MAX_TOKEN_LENGTH = 4096

KID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
MIN_SECRET_BYTES = 16
_B64URL_CHARS = re.compile(r"^[A-Za-z0-9_-]*$")


class TokenError(Exception):
    """A token was refused; ``reason`` says why (``malformed``, ``unknown-key``, ...)."""

    reason = "malformed"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.reason)


class MalformedToken(TokenError):
    """Not a well-formed token of the expected type."""

    reason = "malformed"


class UnknownKey(TokenError):
    """Signed with a key id the keyring does not hold (retired, or never ours)."""

    reason = "unknown-key"


class ForgedToken(TokenError):
    """The signature does not match the content."""

    reason = "forged"


class ExpiredToken(TokenError):
    """Genuine, but past its ``exp``."""

    reason = "expired"


def b64url_encode(data: bytes) -> str:
    """Base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Strict inverse of :func:`b64url_encode`; raises ValueError on anything else."""
    if not _B64URL_CHARS.match(text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    # Reject non-canonical encodings (stray low bits in the last char) so every token has exactly
    # one spelling.
    if b64url_encode(data) != text:
        raise ValueError("non-canonical base64url")
    return data


def new_id() -> str:
    """A fresh random identifier (16 base64url chars, 96 bits) for ``vid`` and ``jti``."""
    return b64url_encode(secrets.token_bytes(12))


def _decode_secret(kid: str, text: str) -> bytes:
    cleaned = "".join(text.split())
    # Accept standard base64 and base64url, padded or not: operators paste both.
    cleaned = cleaned.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        secret = base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"ANTEROOM_KEYS: secret of key {kid!r} is not valid base64") from exc
    return secret


def _check_kid(kid: object) -> None:
    if not isinstance(kid, str) or not KID_PATTERN.match(kid):
        raise ValueError(
            f"ANTEROOM_KEYS: key id {kid!r} must match {KID_PATTERN.pattern} "
            "(letters, digits, '_' or '-', 1-32 chars)"
        )


def _check_key(kid: object, secret: object) -> None:
    _check_kid(kid)
    if not isinstance(secret, bytes | bytearray):
        raise ValueError(f"ANTEROOM_KEYS: secret of key {kid!r} must be bytes")
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(
            f"ANTEROOM_KEYS: secret of key {kid!r} is {len(secret)} bytes; "
            f"at least {MIN_SECRET_BYTES} are required"
        )


class Keyring(Mapping[str, bytes]):
    """Ordered kid -> secret: the first key signs new tokens, every key verifies.

    Rotation: put the new key first, keep the old one until its tokens have expired, then drop it.
    """

    def __init__(self, keys: Mapping[str, bytes]) -> None:
        if not keys:
            raise ValueError("ANTEROOM_KEYS: at least one key is required")
        self._keys: dict[str, bytes] = {}
        for kid, secret in keys.items():
            _check_key(kid, secret)
            self._keys[kid] = bytes(secret)
        self._derived: dict[tuple[str, str], bytes] = {}

    @classmethod
    def parse(cls, text: str) -> Keyring:
        """Parse ``kid:base64secret,kid2:base64secret`` (the ``ANTEROOM_KEYS`` format)."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("ANTEROOM_KEYS is empty: expected 'kid:base64secret[,kid:secret...]'")
        keys: dict[str, bytes] = {}
        for position, entry in enumerate(text.split(","), start=1):
            entry = entry.strip()
            if not entry:
                raise ValueError(f"ANTEROOM_KEYS: entry {position} is empty (stray comma?)")
            kid, sep, encoded = entry.partition(":")
            kid = kid.strip()
            if not sep:
                raise ValueError(
                    f"ANTEROOM_KEYS: entry {position} has no ':' (expected 'kid:base64secret')"
                )
            if kid in keys:
                raise ValueError(f"ANTEROOM_KEYS: key id {kid!r} appears twice")
            _check_kid(kid)
            secret = _decode_secret(kid, encoded)
            _check_key(kid, secret)
            keys[kid] = secret
        return cls(keys)

    @classmethod
    def from_mapping(cls, keys: Mapping[str, bytes]) -> Keyring:
        """Build from a mapping kid -> secret bytes (its order is the signing order)."""
        return cls(keys)

    @classmethod
    def coerce(cls, keys: str | Mapping[str, bytes] | Keyring) -> Keyring:
        """Accept an ``ANTEROOM_KEYS`` string, a mapping or a Keyring; return a Keyring."""
        if isinstance(keys, Keyring):
            return keys
        if isinstance(keys, str):
            return cls.parse(keys)
        if isinstance(keys, Mapping):
            return cls.from_mapping(keys)
        raise TypeError(
            f"keys must be an ANTEROOM_KEYS string, a mapping or a Keyring, not {keys!r}"
        )

    @classmethod
    def generate(cls, kid: str | None = None) -> Keyring:
        """A keyring with one fresh random 32-byte key."""
        return cls({kid or "k" + secrets.token_hex(4): secrets.token_bytes(32)})

    def serialize(self) -> str:
        """Back to the ``ANTEROOM_KEYS`` format."""
        return ",".join(
            f"{kid}:{base64.b64encode(secret).decode('ascii')}"
            for kid, secret in self._keys.items()
        )

    @property
    def signing_kid(self) -> str:
        """The key id that signs new tokens."""
        return next(iter(self._keys))

    def derived_key(self, kid: str, purpose: str) -> bytes:
        """``HMAC-SHA256(secret[kid], "anteroom-<purpose>-v1")``, cached; KeyError if unknown."""
        cache_key = (kid, purpose)
        derived = self._derived.get(cache_key)
        if derived is None:
            label = f"anteroom-{purpose}-v1".encode("ascii")
            derived = hmac.new(self._keys[kid], label, hashlib.sha256).digest()
            self._derived[cache_key] = derived
        return derived

    def __getitem__(self, kid: str) -> bytes:
        return self._keys[kid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        # Never print secrets.
        return f"Keyring(kids={list(self._keys)!r})"


def _signature(keyring: Keyring, kid: str, token_type: str, signed_part: str) -> bytes:
    key = keyring.derived_key(kid, token_type)
    return hmac.new(key, signed_part.encode("ascii"), hashlib.sha256).digest()


def sign(keyring: Keyring, token_type: str, claims: Mapping[str, Any]) -> str:
    """Sign ``claims`` as a token of ``token_type`` with the keyring's signing key."""
    if token_type not in TOKEN_TYPES:
        raise ValueError(f"unknown token type {token_type!r}")
    kid = keyring.signing_kid
    payload = b64url_encode(
        json.dumps(dict(claims), separators=(",", ":"), sort_keys=True).encode("utf-8")
    )
    signed_part = f"{token_type}.{kid}.{payload}"
    return f"{signed_part}.{b64url_encode(_signature(keyring, kid, token_type, signed_part))}"


def issue(keyring: Keyring, claims: _Claims) -> str:
    """Sign typed ``claims`` as the token type of their class: how the service signs every token.

    Only the claim classes below are taken, so no claims written by hand as a dict (a misspelt
    or forgotten claim) reach a token; :func:`sign` is the format's primitive underneath.
    """
    if not isinstance(claims, _Claims):
        raise TypeError(f"issue() signs typed claims, not {type(claims).__name__}")
    return sign(keyring, claims.TOKEN_TYPE, claims.to_wire())


def token_kid(token: str) -> str:
    """The key id named by a token (unverified); MalformedToken if it has no such part."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH:
        raise MalformedToken("not a token")
    parts = token.split(".")
    if len(parts) != 4 or not KID_PATTERN.match(parts[1]):
        raise MalformedToken("not a token")
    return parts[1]


def decode(
    keyring: Keyring, token: str, expected_type: str, now: float | None = None
) -> dict[str, Any]:
    """Verify ``token`` as ``expected_type`` and return its claims, or raise a TokenError."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH or not token.isascii():
        raise MalformedToken("not a token")
    parts = token.split(".")
    if len(parts) != 4:
        raise MalformedToken("a token has four dot-separated parts")
    token_type, kid, payload, signature = parts
    if token_type != expected_type:
        raise MalformedToken(f"not a {expected_type} token")
    if kid not in keyring:
        raise UnknownKey(f"key id {kid!r} is not in the keyring")
    expected = _signature(keyring, kid, token_type, f"{token_type}.{kid}.{payload}")
    # The one spelling of the right signature, compared as text: a genuine token (every poll's)
    # costs one encoding; anything else is told apart below, malformed or forged.
    if not hmac.compare_digest(signature, b64url_encode(expected)):
        try:
            given = b64url_decode(signature)
        except ValueError as exc:
            raise MalformedToken("signature is not base64url") from exc
        if not hmac.compare_digest(given, expected):
            raise ForgedToken("signature mismatch")
        raise MalformedToken("non-canonical signature")  # the right bytes, spelt otherwise
    # Only now, with the content proven ours, is the payload parsed; ours is signed as encoded
    # (canonical base64url of JSON), so it needs no spelling check of its own.
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedToken("payload is not base64url JSON") from exc
    if not isinstance(claims, dict):
        raise MalformedToken("payload is not a JSON object")
    exp = claims.get("exp")
    if exp is not None:
        if isinstance(exp, bool) or not isinstance(exp, int | float):
            raise MalformedToken("exp is not a number")
        if exp <= (time.time() if now is None else now):
            raise ExpiredToken("token has expired")
    return claims


def _network_bytes(ip: str) -> bytes:
    try:
        address = ipaddress.ip_address(ip.strip() if isinstance(ip, str) else ip)
    except ValueError as exc:
        raise ValueError(f"not an IP address: {ip!r}") from exc
    if isinstance(address, ipaddress.IPv6Address):
        # A v4 client reaching a dual-stack socket is still the same v4 network.
        if address.ipv4_mapped is not None:
            return b"4" + address.ipv4_mapped.packed
        # One subscriber usually holds a whole /64; privacy addresses rotate inside it.
        return b"6" + address.packed[:8]
    return b"4" + address.packed


def network_tag(keyring: Keyring, ip: str, kid: str | None = None) -> str:
    """Keyed tag of the network of ``ip`` (IPv4 address, IPv6 /64); no address can be read back.

    ``kid`` picks the key (default: the signing key); verify with the kid of the token carrying it.
    """
    key = keyring.derived_key(kid or keyring.signing_kid, NETWORK_TAG)
    return b64url_encode(hmac.new(key, _network_bytes(ip), hashlib.sha256).digest()[:16])


# -- typed claims ----------------------------------------------------------------------------
# Tokens carry short claim names (they travel on every poll); code reads the readable names of
# these dataclasses. Each field names its wire claim once, in its metadata: `to_wire` and
# `from_wire` are the only places that translate.


def _claim(wire: str, default: Any = MISSING, *, flag: Any = None) -> Any:
    """A field sent as claim ``wire``; an optional one (``default``) is left out when unset.

    ``flag``: a boolean sent as this value when true (``qn`` is ``1``), left out when false.
    """
    return field(default=default, metadata={"wire": wire, "flag": flag})


@functools.cache
def _layout(cls: type) -> tuple[tuple[str, str, Any, bool], ...]:
    """(field, wire name, flag, required) of each field of ``cls``: read once, as a ticket's
    claims are translated on every poll."""
    return tuple(
        (f.name, f.metadata["wire"], f.metadata["flag"], f.default is MISSING) for f in fields(cls)
    )


@functools.cache
def _defaults(cls: type) -> dict[str, Any]:
    """The optional fields of ``cls`` and their defaults."""
    return {f.name: f.default for f in fields(cls) if f.default is not MISSING}


class _Claims:
    """The translation shared by the typed claims (a mixin of the frozen dataclasses below)."""

    TOKEN_TYPE: ClassVar[str]  # the token type these claims are signed as (issue)

    def to_wire(self) -> dict[str, Any]:
        """The claims to sign, under their short names; unset optional claims left out."""
        wire: dict[str, Any] = {}
        for name, wire_name, flag, _ in _layout(type(self)):
            value = getattr(self, name)
            if flag is not None:
                value = flag if value else None
            if value is None:
                continue
            wire[wire_name] = list(value) if isinstance(value, tuple) else value
        return wire

    @classmethod
    def from_wire(cls, claims: Mapping[str, Any]) -> Self:
        """The claims of a verified token by name; MalformedToken if a required one is absent."""
        values = dict(_defaults(cls))
        for name, wire_name, flag, required in _layout(cls):
            if wire_name not in claims:
                if required:
                    raise MalformedToken(f"the {wire_name!r} claim is missing")
                continue
            value = claims[wire_name]
            if flag is not None:
                value = value == flag
            elif isinstance(value, list):
                value = tuple(value)
            values[name] = value
        # Every field is set here (required ones checked, optional ones defaulted): filled in
        # directly, as the frozen dataclass's __init__ (one object.__setattr__ per field) cost a
        # ticket's poll more than reading its claims.
        claims = object.__new__(cls)
        claims.__dict__.update(values)
        return claims


@dataclass(frozen=True)
class ChallengeClaims(_Claims):
    """A proof-of-work challenge (``pc1``): its puzzles are derived from the token itself.

    ``puzzles`` is absent from a one-puzzle challenge whose prefix is the token; ``least``
    (only with ``puzzles``) lets any count from it to ``puzzles`` solve it (a fitted arrival).
    """

    TOKEN_TYPE: ClassVar[str] = CHALLENGE
    environment: str = _claim("env")
    challenge_id: str = _claim("jti")  # what its spent marker is keyed by
    bits: int = _claim("d")  # each puzzle's difficulty
    issued_at: int = _claim("iat")
    expires_at: int = _claim("exp")
    puzzles: int | None = _claim("k", None)  # absent: one puzzle, the token its prefix
    least: int | None = _claim("kl", None)  # the fewest of them that solve it (fitted)
    measure: bool = _claim("m", False, flag=1)  # a measurement: buys no session
    # issued to a verified signed agent (no work): buys a session only by a signed join
    agent: bool = _claim("ag", False, flag=1)


@dataclass(frozen=True)
class SessionClaims(_Claims):
    """A session token (``st1``): who the visitor is, how human they seemed, for how long."""

    TOKEN_TYPE: ClassVar[str] = SESSION

    session_id: str = _claim("jti")
    visitor_id: str = _claim("vid")
    environment: str = _claim("env")
    score: int = _claim("score")  # 0 (human-like) … 100; see identity/signal_rules.py
    signals: tuple[str, ...] = _claim("sig", ())  # the rules that fired ("bot" is refused)
    issued_at: int | None = _claim("iat", None)  # seconds; every session issued has both
    expires_at: int | None = _claim("exp", None)


@dataclass(frozen=True)
class TicketClaims(_Claims):
    """A queue ticket (``qt1``): the visitor's spot, and what an outage admission needs.

    ``session_id``, ``score`` and ``expires_at`` are absent from tickets issued before they
    were added: such a ticket proves no binding offline (see visit/answers.ticket_binding).
    """

    TOKEN_TYPE: ClassVar[str] = TICKET

    room_id: str = _claim("qr")
    visitor_id: str = _claim("vid")
    ticket: int = _claim("t")
    generation: int = _claim("g")  # the room's opening the spot belongs to
    environment: str = _claim("env")
    session_id: str | None = _claim("qj", None)  # the spot's session jti
    score: int | None = _claim("qs", None)  # the spot's session score
    network_tag: str | None = _claim("qi", None)  # bindIp rooms: the network it entered from
    near_head: bool = _claim("qn", False, flag=1)  # a routing hint for the next poll only
    # For the far poll from a snapshot (queue/line/far_poll.py), both or neither: the spot's order
    # key
    # in the line, and until when it is surely kept if unpolled (ms, room clock).
    order_key: int | None = _claim("qk", None)
    kept_until: int | None = _claim("qu", None)
    # A room across regions: the region whose instances and Redis keep the spot (every call of
    # the visitor's goes there); absent in one region.
    region: str | None = _claim("rg", None)
    # and when the visitor arrived there (ms), for its place in the global line
    arrived: int | None = _claim("qa", None)
    issued_at: int | None = _claim("iat", None)
    expires_at: int | None = _claim("exp", None)


@dataclass(frozen=True)
class AdmissionClaims(_Claims):
    """An admission (``ab1``): the visitor may enter room ``room_slug`` until ``expires_at``."""

    TOKEN_TYPE: ClassVar[str] = ADMISSION

    room_slug: str = _claim("q")
    room_id: str = _claim("qr")
    visitor_id: str = _claim("vid")
    environment: str = _claim("env")
    admission_id: str = _claim("jti")
    session_id: str | None = _claim("qj", None)  # the session it was dealt to (refresh binds it)
    network_tag: str | None = _claim("qi", None)  # bindIp rooms: the network it must come from
    fail_open: bool = _claim("fo", False, flag=True)  # dealt without Redis (an outage)
    not_renewable: bool = _claim(NOT_RENEWABLE, False, flag=1)  # ends at its expiry
    issued_at: int | None = _claim("iat", None)
    expires_at: int | None = _claim("exp", None)


@dataclass(frozen=True)
class InviteClaims(_Claims):
    """An invite (``iv1``): room ``room_id`` lets the identities that present it in ``lane``.

    It has no ``exp``: its expiry (``ie``) is read on the room's clock by the enter script, as
    are its ``uses`` (identities in all; one identity entering again with it uses none).
    """

    TOKEN_TYPE: ClassVar[str] = INVITE

    room_id: str = _claim("qr")
    environment: str = _claim("env")
    invite_id: str = _claim("jti")
    expires_at_ms: int = _claim("ie")  # epoch ms, room clock
    uses: int = _claim("iu")
    lane: str = _claim("il")  # one of INVITE_LANES
    issued_at: int | None = _claim("iat", None)


@dataclass(frozen=True)
class ReturnClaims(_Claims):
    """A return link (``rl1``): the parked spot ``visitor_id`` of room ``room_id`` had its turn
    at ``turn_ms`` (room clock); honoured once, within the room's return window from then (the
    service records its use in Redis; ``exp`` only bounds a link kept for ever)."""

    TOKEN_TYPE: ClassVar[str] = RETURN_LINK

    room_id: str = _claim("qr")
    visitor_id: str = _claim("vid")
    environment: str = _claim("env")
    turn_ms: int = _claim("tt")
    issued_at: int | None = _claim("iat", None)
    expires_at: int | None = _claim("exp", None)
