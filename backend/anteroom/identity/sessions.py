"""Proof-of-work challenges and session tokens (SPEC "Identity")."""

from __future__ import annotations

import time
from typing import Any

from anteroom.identity import proof_of_work as pow
from anteroom.identity.dependencies import IdentityServices
from anteroom.identity.signal_rules import Evidence, assess
from anteroom.sdk import tokens

CHALLENGE_TTL_SEC = 120
SESSION_TTL_SEC = 6 * 3600


class IdentityRefused(Exception):
    """A token or proof of work the identity rules refuse (the web layer maps each kind)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TokenRejected(IdentityRefused):
    """Malformed, forged, of another type or environment, or already spent."""


class TokenExpired(IdentityRefused):
    """Past its ``exp``."""


class WrongSolution(IdentityRefused):
    """The proof of work does not solve its challenge."""


def difficulty_for(services: IdentityServices, environment: str) -> int:
    """Leading zero bits asked of ``environment`` (per-environment setting, else the default)."""
    per_env = services.settings.extra.get("difficulty", {})
    return int(per_env.get(environment, services.settings.pow_difficulty))


def new_challenge(services: IdentityServices, environment: str) -> dict[str, Any]:
    """A stateless signed challenge for ``environment``."""
    now = int(time.time())
    bits = difficulty_for(services, environment)
    claims = {"env": environment, "jti": tokens.new_id(), "d": bits, "iat": now}
    claims["exp"] = now + CHALLENGE_TTL_SEC
    token = tokens.sign(services.keyring, tokens.CHALLENGE, claims)
    return {"challenge": token, "difficulty": bits, "expiresAt": claims["exp"] * 1000}


def decode_or_raise(services: IdentityServices, token: str, kind: str) -> dict[str, Any]:
    """Claims of a token of ``kind``, or TokenRejected / TokenExpired."""
    try:
        return tokens.decode(services.keyring, token, kind)
    except tokens.ExpiredToken:
        raise TokenExpired("The token has expired.") from None
    except tokens.TokenError as exc:
        raise TokenRejected(f"The token is not valid ({exc.reason}).") from None


def solved_challenge(
    services: IdentityServices, environment: str, challenge: str, solution: str
) -> dict[str, Any]:
    """Claims of a challenge of ``environment`` that ``solution`` solves, or raise.

    Offline (signature, expiry, one hash): a request failing here never reaches Redis.
    """
    claims = decode_or_raise(services, challenge, tokens.CHALLENGE)
    if claims.get("env") != environment:
        raise TokenRejected("The challenge belongs to another environment.")
    if not pow.check_solution(challenge, solution, int(claims.get("d", 0))):
        raise WrongSolution("The solution does not solve the challenge.")
    return claims


def spend_challenge(services: IdentityServices, claims: dict[str, Any]) -> None:
    """Spend a solved challenge once (a Redis key until it expires), or TokenRejected."""
    ttl = max(1, int(claims["exp"]) - int(time.time()) + 1)
    key = services.keys.challenge_spent(claims["jti"])
    spent = services.breaker.call(lambda: services.redis.set(key, 1, nx=True, ex=ttl), key)
    if not spent:
        raise TokenRejected("This challenge has already been used.")


def network_identifies(services: IdentityServices, network: str) -> int:
    """Count this identify against its network's minute; returns the count so far."""
    minute = int(time.time() // 60)
    key = services.keys.network_identifies(network, minute)

    def bump() -> int:
        pipe = services.redis.pipeline()
        pipe.incr(key)
        pipe.expire(key, 120)
        return int(pipe.execute()[0])

    return services.breaker.call(bump, key)


def is_revoked(services: IdentityServices, environment: str, jti: str, vid: str) -> bool:
    """True when the session ``jti`` or the visitor ``vid`` is revoked in ``environment``.

    Revocations live in each room's own store (every room of the environment holds every one,
    see :mod:`anteroom.revocation`); all rooms are asked in one pipelined round trip, so a room
    that missed one (created while it was made) cannot hide it.
    """
    now_ms = int(time.time() * 1000)
    fields = [f"j:{jti}", f"v:{vid}"]

    def read() -> list[list[str | None]]:
        room_ids = list(services.engine.list_rooms(environment).values())
        pipe = services.redis.pipeline(transaction=False)
        for room_id in room_ids:
            pipe.hmget(services.keys.room_keys(room_id)["rvk"], fields)
        return pipe.execute() if room_ids else []

    rows = services.breaker.call(read)
    return any(until is not None and int(until) > now_ms for row in rows for until in row)


def new_session(
    services: IdentityServices,
    environment: str,
    evidence: Evidence,
    previous: str | None,
) -> dict[str, Any]:
    """A session token; the vid is kept from a valid, unrevoked previous session."""
    vid = None
    if previous:
        try:
            wire = tokens.decode(services.keyring, previous, tokens.SESSION)
            old = tokens.SessionClaims.from_wire(wire)
        except tokens.TokenError:
            old = None
        if (
            old is not None
            and old.environment == environment
            and not is_revoked(services, environment, old.session_id, old.visitor_id)
        ):
            vid = old.visitor_id
    score, sig = assess(evidence)
    now = int(time.time())
    expires_at = now + SESSION_TTL_SEC
    claims = tokens.SessionClaims(
        session_id=tokens.new_id(),
        visitor_id=vid or tokens.new_id(),
        environment=environment,
        score=score,
        signals=tuple(sig),
        issued_at=now,
        expires_at=expires_at,
    )
    token = tokens.sign(services.keyring, tokens.SESSION, claims.to_wire())
    return {
        "sessionToken": token,
        "expiresAt": expires_at * 1000,
        "score": score,
        "sig": sig,
    }
