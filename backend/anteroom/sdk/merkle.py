"""Merkle trees as in RFC 6962 (Certificate Transparency), standard library only.

Leaf hash ``SHA-256(0x00 || leaf)``, inner node ``SHA-256(0x01 || left || right)``: the two
prefixes keep an inner node from passing for a leaf. A tree of ``n > 1`` leaves splits at ``k``,
the largest power of two below ``n`` (RFC 6962 §2.1); the empty tree's root is ``SHA-256("")``.
Hashes travel as lowercase hex; an inclusion proof is the list of sibling hashes from the leaf
up (RFC 6962 §2.1.1's ``PATH``), checked with RFC 9162 §2.1.3.2's algorithm.

Building level by level, a level's odd last node rises unhashed: that is the same tree as the
RFC's recursive split (tests/unit/test_draw.py checks it against the recursion itself), and it
gives every leaf's proof from one pass over the tree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = [
    "Tree",
    "inclusion_proof",
    "inclusion_proofs",
    "leaf_hash",
    "root",
    "verify_inclusion",
]

_LEAF = b"\x00"
_NODE = b"\x01"


def leaf_hash(leaf: bytes) -> bytes:
    """``SHA-256(0x00 || leaf)``."""
    return hashlib.sha256(_LEAF + leaf).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(_NODE + left + right).digest()


def _levels(leaves: Sequence[bytes]) -> list[list[bytes]]:
    """Every level of the tree, leaf hashes first, the root's one-node level last."""
    level = [leaf_hash(leaf) for leaf in leaves]
    levels = [level]
    while len(level) > 1:
        pairs = [_node(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            pairs.append(level[-1])
        level = pairs
        levels.append(level)
    return levels


def _path(levels: list[list[bytes]], index: int) -> list[str]:
    proof = []
    for level in levels[:-1]:
        sibling = index ^ 1
        if sibling < len(level):  # a lone last node has no sibling at this level: it rises
            proof.append(level[sibling].hex())
        index //= 2
    return proof


def root(leaves: Sequence[bytes]) -> str:
    """The tree head of ``leaves`` (hex)."""
    if not leaves:
        return hashlib.sha256(b"").hexdigest()
    return _levels(leaves)[-1][0].hex()


def inclusion_proof(leaves: Sequence[bytes], index: int) -> list[str]:
    """The audit path of leaf ``index`` (0-based) in the tree of ``leaves``, leaf end first."""
    if not 0 <= index < len(leaves):
        raise IndexError(f"leaf {index} is not in a tree of {len(leaves)}")
    return _path(_levels(leaves), index)


def inclusion_proofs(leaves: Sequence[bytes]) -> tuple[str, list[list[str]]]:
    """The root and every leaf's audit path, from one build of the tree."""
    if not leaves:
        return root(leaves), []
    levels = _levels(leaves)
    return levels[-1][0].hex(), [_path(levels, i) for i in range(len(leaves))]


class Tree:
    """A tree built once, kept compact (each level one ``bytes``), whose audit paths are read
    in O(log n) on demand: what a service answering many entrants' receipts keeps."""

    __slots__ = ("_levels", "size")

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self.size = len(leaves)
        # 32 bytes a node in one buffer per level: a third of a list of bytes objects' memory.
        self._levels = [b"".join(level) for level in _levels(leaves)] if leaves else []

    @property
    def root(self) -> str:
        """The tree head (hex)."""
        return self._levels[-1].hex() if self._levels else hashlib.sha256(b"").hexdigest()

    def proof(self, index: int) -> list[str]:
        """The audit path of leaf ``index`` (0-based), as :func:`inclusion_proof` gives it."""
        if not 0 <= index < self.size:
            raise IndexError(f"leaf {index} is not in a tree of {self.size}")
        proof = []
        for level in self._levels[:-1]:
            sibling = index ^ 1
            if sibling * 32 < len(level):  # a lone last node has no sibling: it rises
                proof.append(level[sibling * 32 : sibling * 32 + 32].hex())
            index //= 2
        return proof


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[str], head: str) -> bool:
    """True when ``proof`` shows ``leaf`` at ``index`` in the tree of ``size`` leaves ``head``."""
    if not 0 <= index < size:
        return False
    try:
        path = [bytes.fromhex(h) for h in proof]
    except (TypeError, ValueError):
        return False
    if any(len(h) != 32 for h in path):
        return False
    fn, sn, r = index, size - 1, leaf_hash(leaf)
    for p in path:
        if sn == 0:
            return False  # a longer path than the tree is tall
        if fn % 2 == 1 or fn == sn:
            r = _node(p, r)
            # A right-edge node with no sibling rises unhashed: skip the levels it rises through.
            while fn % 2 == 0 and fn != 0:
                fn //= 2
                sn //= 2
        else:
            r = _node(r, p)
        fn //= 2
        sn //= 2
    return sn == 0 and r.hex() == head
