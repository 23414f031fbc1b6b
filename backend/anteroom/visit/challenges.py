"""The older journey's first call: a challenge, after a measurement challenge when the client
asks for one (arrival.arrive gives one that carries its own measurement instead)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from anteroom.identity import sessions as identity
from anteroom.identity import work_inputs
from anteroom.service_container import Services
from anteroom.visit.outcomes import Challenge, Refused
from anteroom.visit.ports import Caller, Door


@dataclass(frozen=True)
class Measured:
    """A solved measurement challenge and the hash rate the device says it solved it at."""

    challenge: str
    solutions: str | list[str]
    hashes_per_second: float


def challenge(
    s: Services,
    door: Door,
    env: str,
    caller: Caller,
    slug: str | None,
    signals: Mapping[str, Any],
    max_puzzles: int,
    *,
    measure: bool = False,
    measured: Measured | None = None,
) -> Challenge | Refused:
    """The tiny measurement challenge (``measure``), else the work this request pays for
    ``slug``, fitted to the device ``measured`` says it is."""
    hashes_per_second = None
    if measured is not None:  # checked offline: it is not spent, only proves the solver ran
        try:
            identity.solved_challenge(
                s.identity, env, measured.challenge, measured.solutions, measurement=True
            )
        except identity.WrongSolution as exc:
            return Refused(
                "BadRequest", exc.message, fields={exc.field: "does not solve the challenge"}
            )
        except identity.TokenExpired as exc:
            return Refused("TokenExpired", exc.message)
        except identity.IdentityRefused as exc:
            return Refused("TokenInvalid", exc.message)
        hashes_per_second = measured.hashes_per_second
    door.charge("challenge")  # in this worker's memory: issuing a challenge writes nothing
    if measure:
        return Challenge(identity.measurement_challenge(s.identity, env))
    room = s.directory.room_by_slug(env, slug) if slug else None
    address = caller.address or "0.0.0.0"
    work = work_inputs.work_of_request(
        s.identity, env, room, address, lambda n: caller.evidence(signals, n)
    )
    answer = identity.new_challenge(
        s.identity, env, work, max_puzzles=max_puzzles, hashes_per_second=hashes_per_second
    )
    return Challenge(answer)
