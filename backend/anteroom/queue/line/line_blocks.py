"""The line's shape as blocks of order keys, as lua/_blocks.lua counts them.

Every script that adds to or takes from a room's line keeps a count of its live spots per block
of order keys (hash ``<room>blk``). Given those counts and a spot's own order key (its ticket
carries it), the spots ahead of it are the counts of the blocks before its own, plus some of its
own block: at most the block's other live spots, and for a ticket block at most the tickets
between the block's start and its own. So the place told from blocks is never better than the
exact rank and worse by at most the spots of its own block that are gone or behind it (under
1,000 for a ticket block; a pool block holds 1/4,096 of the pre-opening pool).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass

POST_OPEN_KEY = 2**52  # order keys from here on are tickets taken after opening (enter.lua)
TICKET_BLOCK = 1_000  # tickets per block after opening
POOL_BLOCK = 2**40  # 2^16 of the pre-opening lottery's 2^28 numbers per block
# Invitees' order keys (lua/_invite.lua): ticket - SKIP_LANE or ticket - PRIORITY_LANE, below the
# draw's negative keys (queue/room_draw.DRAWN_SPAN), so they are pool blocks before all others.
SKIP_LANE = 2**53
PRIORITY_LANE = 2**52


def block_of(order_key: int) -> str:
    """The block (hash field) of an order key, as ``block_of`` in lua/_blocks.lua."""
    if order_key >= POST_OPEN_KEY:
        return f"t{(order_key - POST_OPEN_KEY) // TICKET_BLOCK}"
    return f"p{order_key // POOL_BLOCK}"


def _sort_key(block: str) -> tuple[int, int]:
    return (0 if block[0] == "p" else 1, int(block[1:]))


@dataclass(frozen=True)
class LineBlocks:
    """Live spots per block, with the running sums that answer "how many ahead" by bisection."""

    order: tuple[tuple[int, int], ...]  # sort keys of the blocks, in line order
    before: tuple[int, ...]  # live spots in the blocks before each
    counts: Mapping[str, int]

    @classmethod
    def from_counts(cls, counts: Mapping[str, int]) -> LineBlocks:
        """From the hash's fields (block → live spots)."""
        blocks = sorted(((_sort_key(b), c) for b, c in counts.items() if c > 0))
        before, total = [], 0
        for _, count in blocks:
            before.append(total)
            total += count
        return cls(tuple(k for k, _ in blocks), tuple(before), dict(counts))

    def place(self, order_key: int) -> tuple[int, int] | None:
        """(fewest, most) spots ahead of the spot with ``order_key``; None if its block is
        empty (the spot is not in the line the counts describe)."""
        block = block_of(order_key)
        own = self.counts.get(block, 0)
        if own <= 0:
            return None
        index = bisect.bisect_left(self.order, _sort_key(block))
        ahead = self.before[index]
        within = own - 1
        if order_key >= POST_OPEN_KEY:
            within = min(within, (order_key - POST_OPEN_KEY) % TICKET_BLOCK)
        return ahead, ahead + within
