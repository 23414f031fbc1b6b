"""Proof of work: SHA-256(challenge + ":" + solution) must start with N zero bits.

The server checks a solution with one hash (:func:`check_solution`); :func:`solve` is a plain
Python solver for tests, tools and clients without the browser agent.
"""

from __future__ import annotations

import hashlib

__all__ = ["MAX_SOLUTION_LENGTH", "check_solution", "leading_zero_bits", "solve"]

# A counter needs a handful of digits; anything longer is abuse, not work.
MAX_SOLUTION_LENGTH = 64


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
