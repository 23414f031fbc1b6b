"""Server SDK: verify Anteroom admission and session tokens offline, with the keyring alone.

Standard library only, so any Python site backend or edge can import it::

    from anteroom.sdk.verification import verify_admission

    result = verify_admission(token, os.environ["ANTEROOM_KEYS"], room="spring-drop")
    if not result:
        ...  # send the visitor to the queue; result.reason says why
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from anteroom.sdk.tokens import (
    ADMISSION,
    SESSION,
    Keyring,
    TokenError,
    decode,
    network_tag,
    token_kid,
)

__all__ = [
    "Keyring",
    "VerifyResult",
    "verify_admission",
    "verify_session",
]

Keys = str | Mapping[str, bytes] | Keyring


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of a verification: ``claims`` when valid, else ``reason``. Truthy iff valid."""

    valid: bool
    claims: dict[str, Any] | None
    reason: str | None

    def __bool__(self) -> bool:
        return self.valid


@lru_cache(maxsize=16)
def _parse_keys(text: str) -> Keyring:
    # Callers usually pass the ANTEROOM_KEYS string on every request; parse it (and cache its
    # derived keys) once.
    return Keyring.parse(text)


def _keyring(keys: Keys) -> Keyring:
    return _parse_keys(keys) if isinstance(keys, str) else Keyring.coerce(keys)


def _refused(reason: str) -> VerifyResult:
    return VerifyResult(valid=False, claims=None, reason=reason)


def _decode(token: object, keyring: Keyring, token_type: str, now: float) -> VerifyResult:
    if not isinstance(token, str):
        return _refused("malformed")
    try:
        claims = decode(keyring, token, token_type, now=now)
    except TokenError as exc:
        return _refused(exc.reason)
    # Every Anteroom token expires; a signed one without a numeric exp is not one of ours.
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        return _refused("malformed")
    return VerifyResult(valid=True, claims=claims, reason=None)


def verify_admission(
    token: str,
    keys: Keys,
    room: str | None = None,
    client_ip: str | None = None,
    session_jti: str | None = None,
    now: float | None = None,
) -> VerifyResult:
    """Verify an admission token (``ab1.…``).

    ``room`` (slug or room id) must match the room it admits to; ``client_ip`` is checked when the
    room binds the network (claim ``qi``); ``session_jti`` must match the session that earned it.
    Reasons: ``malformed``, ``forged``, ``expired``, ``unknown-key``, ``wrong-room``,
    ``ip-mismatch``, ``session-mismatch``. Raises only for unusable ``keys``.
    """
    now = time.time() if now is None else now
    keyring = _keyring(keys)
    result = _decode(token, keyring, ADMISSION, now)
    if not result.valid:
        return result
    claims = result.claims or {}
    if room is not None and room not in (claims.get("q"), claims.get("qr")):
        return _refused("wrong-room")
    bound_tag = claims.get("qi")
    if bound_tag is not None:
        # The room binds the network: without a usable client address nothing can prove it.
        if client_ip is None or not isinstance(bound_tag, str):
            return _refused("ip-mismatch")
        try:
            seen_tag = network_tag(keyring, client_ip, kid=token_kid(token))
        except (ValueError, TypeError, TokenError):
            return _refused("ip-mismatch")
        if not hmac.compare_digest(
            seen_tag.encode("ascii"), bound_tag.encode("utf-8", "surrogatepass")
        ):
            return _refused("ip-mismatch")
    if session_jti is not None and claims.get("qj") != session_jti:
        return _refused("session-mismatch")
    return result


def verify_session(token: str, keys: Keys, now: float | None = None) -> VerifyResult:
    """Verify a session token (``st1.…``); reasons as for :func:`verify_admission`."""
    return _decode(token, _keyring(keys), SESSION, time.time() if now is None else now)
