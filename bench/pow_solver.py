"""A fast proof-of-work solver for load generators: C over OpenSSL's SHA-256, else Python.

A crowd of arrivals solves every puzzle the browser agent solves, the device measurement
included (8 puzzles of 2^10 expected hashes, whatever the pin): ~8,000 hashes an arrival. Plain
Python (``anteroom.identity.proof_of_work.solve``) takes several ms for them, which on this
2-core box would leave the load generator, not the server, the bottleneck. So this compiles a
20-line C search (``gcc``, linked against the ``libcrypto.so.3`` every Debian has) once into a
temporary folder and calls it through ``ctypes``: about 1 ms an arrival. Without ``gcc`` it
falls back to the Python search and says so (``Solver.kind``).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from pathlib import Path

from anteroom.identity import proof_of_work as pow

C_SOURCE = r"""
#include <stddef.h>
#include <stdio.h>
#include <string.h>
/* OpenSSL's SHA256_CTX, declared here so that no -dev package is needed. */
typedef struct { unsigned int h[8]; unsigned int Nl, Nh; unsigned int data[16];
                 unsigned int num, md_len; } CTX;
int SHA256_Init(CTX *c);
int SHA256_Update(CTX *c, const void *d, size_t n);
int SHA256_Final(unsigned char *md, CTX *c);

/* The first decimal counter whose SHA-256(prefix ":" counter) starts with `bits` zero bits. */
long long solve(const char *prefix, int bits) {
    CTX base, work; unsigned char md[32]; char text[24];
    SHA256_Init(&base); SHA256_Update(&base, prefix, strlen(prefix)); SHA256_Update(&base, ":", 1);
    for (long long counter = 0;; counter++) {
        int n = snprintf(text, sizeof text, "%lld", counter);
        work = base; SHA256_Update(&work, text, (size_t)n); SHA256_Final(md, &work);
        int left = bits, i = 0;
        while (left >= 8 && md[i] == 0) { left -= 8; i++; }
        if (left >= 8) continue;
        if (left == 0 || (md[i] >> (8 - left)) == 0) return counter;
    }
}
"""


class Solver:
    """Solves puzzles (``{"prefix", "difficulty"}``) as the browser agent's workers do."""

    def __init__(self) -> None:
        self.kind = "python"
        self._folder = Path(tempfile.mkdtemp(prefix="anteroom-solver-"))
        self._search = None
        compiler = shutil.which("gcc") or shutil.which("cc")
        if compiler:
            source, library = self._folder / "solve.c", self._folder / "solve.so"
            source.write_text(C_SOURCE)
            built = subprocess.run(
                [compiler, "-O2", "-shared", "-fPIC", "-o", str(library), str(source),
                 "-l:libcrypto.so.3"],
                capture_output=True, check=False,
            )  # fmt: skip
            if built.returncode == 0:
                search = ctypes.CDLL(str(library)).solve
                search.restype = ctypes.c_longlong
                search.argtypes = [ctypes.c_char_p, ctypes.c_int]
                self._search, self.kind = search, "c-openssl"

    def solve_one(self, prefix: str, difficulty: int) -> tuple[str, int]:
        """The solution of one puzzle and the hashes it took."""
        if self._search is not None:
            counter = int(self._search(prefix.encode(), int(difficulty)))
            return str(counter), counter + 1
        text = pow.solve(prefix, int(difficulty))
        return text, int(text) + 1

    def solve(self, puzzles: list[dict[str, object]]) -> tuple[list[str], int]:
        """Every puzzle's solution, in order, and the hashes computed."""
        solutions, hashes = [], 0
        for puzzle in puzzles:
            text, count = self.solve_one(str(puzzle["prefix"]), int(str(puzzle["difficulty"])))
            solutions.append(text)
            hashes += count
        return solutions, hashes

    def close(self) -> None:
        shutil.rmtree(self._folder, ignore_errors=True)
