"""Proof-of-work challenges and session tokens (docs/queue.md, "Tokens")."""

from __future__ import annotations

import functools
import hashlib
import json
import time
from typing import Any

import orjson

from anteroom.identity import proof_of_work as pow
from anteroom.identity import work_rule
from anteroom.identity.dependencies import IdentityServices
from anteroom.identity.signal_rules import Evidence, assess
from anteroom.queue.connection import lua_scripts as scripts
from anteroom.queue.line import revocations
from anteroom.sdk import tokens

CHALLENGE_TTL_SEC = 120
SESSION_TTL_SEC = 6 * 3600
# The measurement: 8 puzzles of 2^10 hashes, ~10 ms on a laptop, ~0.1 s on a budget phone.
MEASURE_PUZZLES, MEASURE_BITS = 8, 10
# What is assumed of a visitor nobody knows anything about (no Redis read was made).
CALM_STRANGER = work_rule.Risk(score=0, network_identifies=0, range_abuse=0)


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
    """The proof of work does not solve its challenge; ``field`` names what was sent."""

    def __init__(self, message: str, field: str = "solution") -> None:
        super().__init__(message)
        self.field = field


def policy_for(services: IdentityServices, environment: str) -> work_rule.Policy:
    """The operator's work policy for ``environment``.

    ``ANTEROOM_POW_POLICY`` (JSON ``{"<env>": {"pin": bits} | {"min": bits, "max": bits,
    "attack": identifies a minute}}``) decides per environment; else ``ANTEROOM_POW_DIFFICULTY``,
    when set (> 0), pins every environment to 2^N expected hashes; else the rule decides alone.
    """
    per_env = services.settings.extra.get("difficulty", {})
    if environment in per_env:
        return work_rule.Policy(pin=int(per_env[environment]))
    entry = _policies(services.settings.pow_policy).get(environment)
    if entry is not None:
        return entry
    pinned = services.settings.pow_difficulty
    return work_rule.Policy(pin=pinned) if pinned > 0 else work_rule.Policy()


@functools.lru_cache(maxsize=4)
def _policies(text: str) -> dict[str, work_rule.Policy]:
    if not text.strip():
        return {}
    out = {}
    for env, entry in json.loads(text).items():
        out[env] = work_rule.Policy(
            pin=None if entry.get("pin") is None else int(entry["pin"]),
            min_bits=int(entry.get("min", 0)),
            max_bits=int(entry.get("max", 40)),
            attack_identifies_per_minute=int(entry.get("attack", 3000)),
        )
    return out


def _sign_challenge(
    services: IdentityServices,
    environment: str,
    bits: int,
    puzzles: int | None,
    *,
    measure: bool,
    least: int | None = None,
    agent: bool = False,
) -> dict[str, Any]:
    now = int(time.time())
    claims = tokens.ChallengeClaims(
        environment=environment,
        challenge_id=tokens.new_id(),
        bits=bits,
        issued_at=now,
        expires_at=now + CHALLENGE_TTL_SEC,
        puzzles=puzzles,
        # any count from `least` to `puzzles` solves it (arrival_challenge)
        least=least if least is not None and puzzles is not None and least < puzzles else None,
        measure=measure,
        agent=agent,
    )
    token = tokens.issue(services.keyring, claims)
    prefixes = pow.puzzle_prefixes(token, puzzles)
    return {
        "challenge": token,
        "difficulty": bits,
        "puzzles": [{"prefix": prefix, "difficulty": bits} for prefix in prefixes],
        "expectedHashes": len(prefixes) * 2**bits,
        "expiresAt": claims.expires_at * 1000,
    }


def new_challenge(
    services: IdentityServices,
    environment: str,
    work: work_rule.Work | None = None,
    *,
    max_puzzles: int = 1,
    hashes_per_second: float | None = None,
) -> dict[str, Any]:
    """A stateless signed challenge for ``environment`` asking ``work`` (else the policy's pin or
    the calm low-risk tier), fitted to a measured device and split into at most ``max_puzzles``.

    ``max_puzzles`` 1 gives the legacy one-puzzle challenge whose prefix is the token itself.
    """
    if work is None:
        policy = policy_for(services, environment)
        work = work_rule.work_for(CALM_STRANGER, work_rule.Pressure(), policy)
    max_puzzles = max(1, min(pow.MAX_PUZZLES, max_puzzles))
    expected = work_rule.fit_to_device(work, hashes_per_second, max_puzzles)
    count, bits = work_rule.split(expected, max_puzzles)
    answer = _sign_challenge(
        services, environment, bits, count if max_puzzles > 1 else None, measure=False
    )
    answer["tier"] = work.tier
    return answer


def arrival_challenge(
    services: IdentityServices, environment: str, work: work_rule.Work, *, max_puzzles: int
) -> dict[str, Any]:
    """A challenge the device fits to itself, so no measurement round trip comes first.

    Its puzzles cover the tier's work; the first ``minPuzzles`` of them reach the floor. The
    client times those (the measurement) and solves as many more, in order, as keep it within
    ``fitMs``; any count from ``minPuzzles`` to all of them solves it (work_rule.split_range).
    """
    max_puzzles = max(1, min(pow.MAX_PUZZLES, max_puzzles))
    count, least, bits = work_rule.split_range(work, max_puzzles)
    answer = _sign_challenge(services, environment, bits, count, measure=False, least=least)
    answer["tier"] = work.tier
    answer["minPuzzles"] = least if least < count else count
    answer["fitMs"] = int(work_rule.FIT_TARGET_SEC * 1000)
    return answer


def agent_challenge(services: IdentityServices, environment: str) -> dict[str, Any]:
    """A verified signed agent's challenge: no work (difficulty 0, one puzzle any answer
    solves), so it joins the line as a visitor does without paying a proof of work. Marked
    (``agent``): only a join signed by a verified agent may spend it (visit/arrival.py)."""
    answer = _sign_challenge(services, environment, 0, None, measure=False, agent=True)
    answer |= {"tier": "agent", "minPuzzles": 1, "fitMs": 0}
    return answer


def measurement_challenge(services: IdentityServices, environment: str) -> dict[str, Any]:
    """The tiny first puzzle set the agent times to tell the server its hash rate."""
    answer = _sign_challenge(services, environment, MEASURE_BITS, MEASURE_PUZZLES, measure=True)
    answer["tier"] = "measure"
    return answer


def decode_or_raise(services: IdentityServices, token: str, kind: str) -> dict[str, Any]:
    """Claims of a token of ``kind``, or TokenRejected / TokenExpired."""
    try:
        return tokens.decode(services.keyring, token, kind)
    except tokens.ExpiredToken:
        raise TokenExpired("The token has expired.") from None
    except tokens.TokenError as exc:
        raise TokenRejected(f"The token is not valid ({exc.reason}).") from None


def solved_challenge(
    services: IdentityServices,
    environment: str,
    challenge: str,
    solutions: str | list[str],
    *,
    measurement: bool = False,
) -> tokens.ChallengeClaims:
    """Claims of a challenge of ``environment`` that ``solutions`` solve, or raise.

    ``solutions`` is the list (one per puzzle), or the legacy single solution of a one-puzzle
    challenge whose prefix is the token. Offline (signature, expiry, one hash per puzzle): a
    request failing here never reaches Redis. A measurement challenge buys no session, and a
    real one measures nothing.
    """
    try:
        claims = tokens.ChallengeClaims.from_wire(
            decode_or_raise(services, challenge, tokens.CHALLENGE)
        )
    except tokens.MalformedToken as exc:
        raise TokenRejected(f"The challenge is not valid ({exc}).") from None
    if claims.environment != environment:
        raise TokenRejected("The challenge belongs to another environment.")
    if claims.measure != measurement:
        which = "is a measurement" if claims.measure else "is not a measurement"
        raise TokenRejected(f"The challenge {which}.")
    count = claims.puzzles
    if count is not None and (not isinstance(count, int) or not 1 <= count <= pow.MAX_PUZZLES):
        raise TokenRejected("The challenge is not valid (puzzles).")
    least = claims.least
    if least is not None and (count is None or not isinstance(least, int) or not least >= 1):
        raise TokenRejected("The challenge is not valid (puzzles).")
    field = "measurement" if measurement else "solutions"
    if isinstance(solutions, str):
        if count is not None:
            raise WrongSolution("This challenge has several puzzles: send `solutions`.")
        solutions, field = [solutions], "solution"
    bits = int(claims.bits)
    if count is None:
        solved = pow.check_solutions([challenge], solutions, bits)
    elif least is not None and isinstance(solutions, list) and least <= len(solutions) <= count:
        # A fitted challenge: the first n puzzles, n as many as the device took on (>= floor).
        solved = pow.check_split(challenge, len(solutions), solutions, bits)
    else:
        solved = pow.check_split(challenge, count, solutions, bits)
    if not solved:
        raise WrongSolution(f"The {field} do not solve the challenge.", field)
    return claims


def proof_fingerprint(challenge: str, proof: object) -> str:
    """What a spent challenge remembers of its proof: a hash, so the marker holds no solution."""
    text = json.dumps([challenge, proof], separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def spend_challenge(
    services: IdentityServices,
    claims: tokens.ChallengeClaims,
    proof: object,
    session: tokens.SessionClaims,
) -> tokens.SessionClaims:
    """Spend a solved challenge for ``session``, or get back the session it earned before.

    Idempotent for the same proof within the challenge's life: a retry (after a timeout, a
    ``503``, a lost answer) gets the session the first attempt earned, whichever attempt's write
    reached Redis first. A different proof of a spent challenge is TokenRejected.
    """
    ttl_ms = max(1, int(claims.expires_at) - int(time.time()) + 1) * 1000
    key = services.keys.challenge_spent(claims.challenge_id)
    mark = proof_fingerprint(claims.challenge_id, proof)
    # lua/spend_challenge.lua: spent once; a retry of the same proof reads what it earned.
    script = scripts.register_standalone(services.redis, "spend_challenge")
    args = [mark, session_json(session), ttl_ms]
    held = services.breaker.call(lambda: script(keys=[key], args=args), key)
    if held is None:
        return session
    earned_by, _, earned = str(held).partition("|")
    if earned_by != mark or not earned:  # another proof, or a marker of an older release
        raise TokenRejected("This challenge has already been used.")
    return tokens.SessionClaims.from_wire(json.loads(earned))


def session_json(session: tokens.SessionClaims) -> str:
    """A session's claims as a spent challenge keeps them (what a retry of its proof reads)."""
    return orjson.dumps(session.to_wire()).decode()  # read back by cjson and by a retry


def network_identifies(
    services: IdentityServices, network: str, environment: str | None = None
) -> int:
    """Count this identify against its network's minute (and its environment's, which the work
    rule reads as the attack signal); returns the network's count so far."""
    minute = int(time.time() // 60)
    key = services.keys.network_identifies(network, minute)

    def bump() -> int:
        pipe = services.redis.pipeline(transaction=environment is None)
        pipe.incr(key)
        pipe.expire(key, 120)
        if environment is not None:
            env_key = f"{services.keys.prefix}ide:{environment}:{minute}"
            pipe.incr(env_key)
            pipe.expire(env_key, 120)
        return int(pipe.execute()[0])

    return services.breaker.call(bump, key)


def is_revoked(services: IdentityServices, environment: str, jti: str, vid: str) -> bool:
    """True when the session ``jti`` or the visitor ``vid`` is revoked in ``environment``.

    Revocations live in each room's own store (every room of the environment holds every one,
    see :mod:`anteroom.revocation`); all rooms are asked in one pipelined round trip, so a room
    that missed one (created while it was made) cannot hide it. Each room judges its entries on
    its own clock (queue/line/revocations.py), as its scripts do.
    """

    def read() -> bool:
        room_ids = list(services.engine.list_rooms(environment).values())
        return revocations.revoked_in_rooms(services.redis, services.keys, room_ids, vid, jti)

    return bool(services.breaker.call(read))


def session_claims(
    services: IdentityServices,
    environment: str,
    evidence: Evidence,
    previous: str | None,
) -> tokens.SessionClaims:
    """A new session's claims; the vid is kept from a valid, unrevoked previous session."""
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
    return tokens.SessionClaims(
        session_id=tokens.new_id(),
        visitor_id=vid or tokens.new_id(),
        environment=environment,
        score=score,
        signals=tuple(sig),
        issued_at=now,
        expires_at=now + SESSION_TTL_SEC,
    )


def session_answer(services: IdentityServices, claims: tokens.SessionClaims) -> dict[str, Any]:
    """The identify answer for a session's claims (signing is deterministic: a retry that gets
    the same claims back gets the same token)."""
    token = tokens.issue(services.keyring, claims)
    return {
        "sessionToken": token,
        "expiresAt": int(claims.expires_at or 0) * 1000,
        "score": claims.score,
        "sig": list(claims.signals),
    }
