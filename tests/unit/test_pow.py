"""Proof of work: the solver finds what the checker accepts, and nothing else passes."""

from __future__ import annotations

import hashlib

import pytest

from anteroom.identity.proof_of_work import (
    check_solution,
    check_solutions,
    leading_zero_bits,
    puzzle_prefixes,
    solve,
    solve_puzzles,
)


@pytest.mark.parametrize(
    ("digest", "bits"),
    [
        (b"\x80", 0),
        (b"\x01", 7),
        (b"\x00\x01", 15),
        (b"\x00\x00\x10\xff", 19),
        (b"\x00\x00", 16),
        (b"\xff" * 32, 0),
        (b"\x00" * 31 + b"\x01", 255),
        (b"\x00" * 32, 256),
    ],
)
def test_leading_zero_bits(digest: bytes, bits: int) -> None:
    assert leading_zero_bits(digest) == bits


def test_solve_then_check() -> None:
    challenge = "pc1.k1.payload.sig"
    solution = solve(challenge, 12)
    assert check_solution(challenge, solution, 12)
    digest = hashlib.sha256(f"{challenge}:{solution}".encode()).digest()
    assert leading_zero_bits(digest) >= 12


def test_wrong_solution_fails() -> None:
    challenge = "pc1.k1.payload.sig"
    solution = solve(challenge, 12)
    # A neighbouring counter that provably misses the target.
    wrong = next(
        str(n)
        for n in range(int(solution) + 1, int(solution) + 10_000)
        if leading_zero_bits(hashlib.sha256(f"{challenge}:{n}".encode()).digest()) < 12
    )
    assert not check_solution(challenge, wrong, 12)


def test_solve_honours_start() -> None:
    solution = solve("c", 4, start=1000)
    assert int(solution) >= 1000 and check_solution("c", solution, 4)


@pytest.mark.parametrize("solution", ["", "1" * 65, "12\n", "\x00", "\ud800"])
def test_refuses_unreasonable_solutions(solution: str) -> None:
    assert not check_solution("c", solution, 0)


def test_difficulty_zero_accepts_any_reasonable_solution() -> None:
    assert check_solution("c", "anything", 0)
    assert check_solution("c", "1" * 64, 0)


def test_split_puzzles_are_bound_to_their_challenge() -> None:
    prefixes = puzzle_prefixes("pc1.k1.payload.sig", 4)
    seed = hashlib.sha256(b"pc1.k1.payload.sig").hexdigest()[:32]
    assert prefixes == [f"{seed}.{i}" for i in range(4)]
    assert puzzle_prefixes("pc1.k1.other.sig", 4)[0] != prefixes[0]
    assert puzzle_prefixes("pc1.k1.payload.sig", None) == ["pc1.k1.payload.sig"]


def test_check_solutions_wants_each_puzzle_solved_in_order() -> None:
    prefixes = puzzle_prefixes("pc1.k1.payload.sig", 3)
    solutions = solve_puzzles(prefixes, 8)
    assert check_solutions(prefixes, solutions, 8)
    assert not check_solutions(prefixes, solutions[:2], 8)  # one missing
    assert not check_solutions(prefixes, [*solutions, "1"], 8)  # one too many
    assert not check_solutions(prefixes, "".join(solutions), 8)  # not a list
    # One puzzle's solution does not answer another's (this challenge's first two differ).
    assert solutions[0] != solutions[1]
    swapped = [solutions[1], solutions[0], solutions[2]]
    assert not check_solutions(prefixes, swapped, 8)
