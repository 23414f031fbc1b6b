"""The proof of work an arrival asks for, in the standard library (what an app does on the device).

Each puzzle is solved by the smallest decimal counter n for which SHA-256 of "prefix:n" starts
with `difficulty` zero bits. The first `minPuzzles` are the floor: solving them times the device
(its measurement), and as many more as keep the whole within `fitMs` are solved in order.

As a script: reads the arrival's JSON on stdin, prints the solutions as a JSON list.
"""

import hashlib
import json
import math
import sys
import time


def solve(prefix: str, difficulty: int) -> str:
    """The smallest decimal n whose SHA-256("prefix:n") starts with `difficulty` zero bits."""
    above = 1 << (256 - difficulty)  # a digest below this has the zero bits
    start = hashlib.sha256(f"{prefix}:".encode())  # hash the prefix once, then copy
    n = 0
    while True:
        attempt = start.copy()
        attempt.update(str(n).encode())
        if int.from_bytes(attempt.digest(), "big") < above:
            return str(n)
        n += 1


def solve_fitted(arrival: dict) -> list[str]:
    """The solutions of the first puzzles, in order: the floor, then as many as fit in fitMs."""
    puzzles = arrival["puzzles"]
    floor = min(len(puzzles), max(1, arrival["minPuzzles"]))
    started = time.perf_counter()
    solutions = [solve(p["prefix"], p["difficulty"]) for p in puzzles[:floor]]
    elapsed = max(time.perf_counter() - started, 0.001)
    # the measurement: this device's hashes a second (solution n took n + 1 hashes)
    rate = sum(int(s) + 1 for s in solutions) / elapsed
    tail = 1 + 2 / math.sqrt(len(puzzles))  # the sum of many searches varies less than one
    fits = math.floor(rate * arrival["fitMs"] / 1000 / tail / 2 ** puzzles[0]["difficulty"])
    count = min(len(puzzles), max(floor, fits))
    solutions += [solve(p["prefix"], p["difficulty"]) for p in puzzles[floor:count]]
    return solutions


if __name__ == "__main__":
    print(json.dumps(solve_fitted(json.load(sys.stdin))))
