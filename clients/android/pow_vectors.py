"""Proof-of-work vectors for the Android client's tests, made by the server's own code.

``python clients/android/pow_vectors.py`` writes src/test/resources/pow_vectors.json: for a few
challenges, the prefixes of their puzzles as the server derives them (``puzzle_prefixes``), the
least solution of each (``solve``, searched from 0 as every client does) and that the server
accepts the set (``check_split``). tests/integration/test_android_client.py checks the file is
what this code makes now, so the Java tests cannot drift from the server.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from anteroom.identity import proof_of_work as pow_

OUT = Path(__file__).parent / "src/test/resources/pow_vectors.json"
# (challenge text, puzzles or None for the legacy one-puzzle form, difficulty)
CASES = [
    ("pc1.k1.eyJkIjo4fQ.sig-a", 4, 8),
    ("pc1.k1.eyJkIjoxMn0.sig-b", 3, 12),
    ("pc1.k1.eyJkIjoxNn0.sig-c", 2, 16),
    ("pc1.k1.legacy.sig-d", None, 10),
    ("pc1.k1.zero.sig-e", 16, 0),
]


def vectors() -> dict[str, Any]:
    """The vectors, as the JSON file holds them."""
    cases = []
    for challenge, count, difficulty in CASES:
        prefixes = pow_.puzzle_prefixes(challenge, count)
        solutions = pow_.solve_puzzles(prefixes, difficulty)
        accepted = (
            pow_.check_split(challenge, count, solutions, difficulty)
            if count is not None
            else pow_.check_solution(challenge, solutions[0], difficulty)
        )
        cases.append(
            {
                "challenge": challenge,
                "difficulty": difficulty,
                "prefixes": prefixes,
                "solutions": solutions,
                "acceptedByServer": accepted,
            }
        )
    # Leading zero bits of some digests, as the server counts them.
    bits = []
    for text in ("", "abc", "anteroom:0", "anteroom:412"):
        digest = hashlib.sha256(text.encode()).digest()
        bits.append({"text": text, "leadingZeroBits": pow_.leading_zero_bits(digest)})
    return {"cases": cases, "leadingZeroBits": bits}


def render() -> str:
    return json.dumps(vectors(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    sys.stdout.write(f"wrote {OUT}\n")
