"""Proof of work: SHA-256(prefix + ":" + solution) must start with N zero bits.

A challenge is split into ``k`` small puzzles (docs/visitor-api.md, "Proof of work, fitted"): puzzle
``i`` of a split challenge has the prefix ``<seed>.<i>``, the seed being the first 32 hex digits of
SHA-256(challenge), so every puzzle is bound to the one signed token; a legacy one-puzzle
challenge's prefix is the token itself. The server checks each solution with one hash
(:func:`check_solution`, :func:`check_solutions`); :func:`solve` and :func:`solve_puzzles` are
plain Python solvers for tests, tools and clients without the browser agent.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "MAX_PUZZLES",
    "MAX_SOLUTION_LENGTH",
    "check_solution",
    "check_solutions",
    "check_split",
    "leading_zero_bits",
    "puzzle_prefixes",
    "solve",
    "solve_puzzles",
]

# A counter needs a handful of digits; anything longer is abuse, not work.
MAX_SOLUTION_LENGTH = 64
# Puzzles in one challenge: enough to tame the tail of the solve time (the p95 of the sum of 16
# exponential searches is ~1.4x their mean, against ~3x for one), few enough that checking them
# all stays well within 50 microseconds (bench/pow.py's verify_us).
MAX_PUZZLES = 16


def leading_zero_bits(digest: bytes) -> int:
    """Number of leading zero bits of ``digest`` (``8 * len(digest)`` when it is all zeros)."""
    value = int.from_bytes(digest, "big")
    return len(digest) * 8 - value.bit_length()


def _meets(digest: bytes, difficulty: int) -> bool:
    # Equivalent to leading_zero_bits(digest) >= difficulty, without counting past the target.
    return int.from_bytes(digest, "big") >> (len(digest) * 8 - difficulty) == 0


def check_solution(challenge: str, solution: str, difficulty: int) -> bool:
    """True when ``solution`` is short printable text and its hash meets ``difficulty``."""
    if not isinstance(challenge, str) or not isinstance(solution, str):
        return False
    if not solution or len(solution) > MAX_SOLUTION_LENGTH or not solution.isprintable():
        return False
    if not isinstance(difficulty, int) or not 0 <= difficulty <= 256:
        return False
    try:
        data = f"{challenge}:{solution}".encode()
    except UnicodeEncodeError:  # lone surrogates cannot be what a client hashed
        return False
    return _meets(hashlib.sha256(data).digest(), difficulty)


def solve(challenge: str, difficulty: int, start: int = 0) -> str:
    """Find a decimal counter (from ``start``) whose hash meets ``difficulty``; may take a while."""
    if not 0 <= difficulty <= 256:
        raise ValueError("difficulty must be between 0 and 256 bits")
    # The prefix is hashed once; each attempt only feeds the counter to a copy.
    prefix = hashlib.sha256(f"{challenge}:".encode())
    shift = 256 - difficulty
    counter = start
    while True:
        attempt = prefix.copy()
        text = str(counter)
        attempt.update(text.encode("ascii"))
        if int.from_bytes(attempt.digest(), "big") >> shift == 0:
            return text
        counter += 1


def _seed(challenge: str) -> str:
    return hashlib.sha256(challenge.encode()).hexdigest()[:32]


def puzzle_prefixes(challenge: str, count: int | None) -> list[str]:
    """The prefixes of ``challenge``'s puzzles: the token itself when ``count`` is None (legacy),
    else ``<seed>.<i>`` for i in 0..count-1."""
    if count is None:
        return [challenge]
    seed = _seed(challenge)
    return [f"{seed}.{i}" for i in range(count)]


def check_split(challenge: str, count: int, solutions: object, difficulty: int) -> bool:
    """True when ``solutions`` holds one decimal solution per puzzle of the split ``challenge``,
    each meeting ``difficulty``: one hash each."""
    if not isinstance(solutions, list) or len(solutions) != count:
        return False
    if not 0 <= difficulty <= 256:
        return False
    seed = _seed(challenge)
    # A digest meets the difficulty when, read big-endian, it is below 2^(256 - difficulty):
    # comparing the bytes says it without building an integer (33 bytes: above every digest).
    bound = (1 << (256 - difficulty)).to_bytes(33, "big")[1:] if difficulty else b"\xff" * 33
    sha256 = hashlib.sha256
    # "<seed>.<i>:<solution>" fits one 64-byte block for any counter a search reaches, so one
    # hash of the whole costs what a copy of the hashed "<seed>." and an update would, in
    # fewer calls: this loop is most of a verify (bench/pow.py's verify_us).
    for i, solution in enumerate(solutions):
        if type(solution) is not str or not 0 < len(solution) <= MAX_SOLUTION_LENGTH:
            return False
        if not (solution.isascii() and solution.isdigit()):
            return False
        if sha256(f"{seed}.{i}:{solution}".encode()).digest() >= bound:
            return False
    return True


def check_solutions(prefixes: list[str], solutions: object, difficulty: int) -> bool:
    """True when ``solutions`` is a list holding one solution per prefix, each meeting
    ``difficulty`` (one hash each; the first miss stops the check)."""
    if not isinstance(solutions, list) or len(solutions) != len(prefixes):
        return False
    return all(
        check_solution(prefix, solution, difficulty)
        for prefix, solution in zip(prefixes, solutions, strict=True)
    )


def solve_puzzles(prefixes: list[str], difficulty: int) -> list[str]:
    """Solve every puzzle (each searched from 0, as the browser agent does)."""
    return [solve(prefix, difficulty) for prefix in prefixes]
