"""A drawn pool's place on the global line (queue/regions/pool_order.py, room_draw.regional_key)."""

from __future__ import annotations

import secrets

from anteroom.queue.draw.room_draw import DRAWN_SPAN, drawn_keys, regional_key
from anteroom.queue.line.line_blocks import POST_OPEN_KEY, PRIORITY_LANE, SKIP_LANE
from anteroom.queue.regions.pool_order import line_arrival
from anteroom.sdk import draw

REAL = 1_800_000_000_000  # an arrival time now


def test_lanes_come_first_then_the_pool_then_everyone_by_arrival() -> None:
    lanes = [line_arrival(-SKIP_LANE + 5, REAL), line_arrival(-PRIORITY_LANE + 9, REAL)]
    pool = [line_arrival(-DRAWN_SPAN, REAL), line_arrival(-1, REAL)]
    later = line_arrival(POST_OPEN_KEY + 3, REAL)
    assert lanes == [0, 0] and 0 < pool[0] < pool[1] < REAL and later == REAL
    assert pool[1] - pool[0] == 2**31 - 1  # the pool spread over 2^31 ms: fine 100 ms buckets


def test_a_regions_drawn_keys_follow_the_shared_draws_order_keys() -> None:
    # Two regions' entrants keyed alone: compared by drawn key they are in the merged order.
    seed = draw.new_seed()
    east = draw.drawn_order(seed, [secrets.token_hex(32) for _ in range(300)])
    west = draw.drawn_order(seed, [secrets.token_hex(32) for _ in range(200)])
    east_keys = [draw.order_key(seed, e) for e in east]
    west_keys = [draw.order_key(seed, e) for e in west]
    keyed = list(zip(drawn_keys(east_keys, True), east, strict=True))
    keyed += list(zip(drawn_keys(west_keys, True), west, strict=True))
    assert all(-DRAWN_SPAN <= k < 0 for k, _ in keyed)
    assert [e for _, e in sorted(keyed)] == draw.drawn_order(seed, east + west)
    # one region's rank keys stay as they were
    assert drawn_keys(east_keys, False)[1] == -DRAWN_SPAN + DRAWN_SPAN // 300


def test_a_tie_in_51_bits_keeps_the_drawn_order() -> None:
    top = "0123456789abc" + "0" * 27
    same = "0123456789abd" + "f" * 27  # the same top 51 bits (the 52nd differs)
    first = regional_key(top, -DRAWN_SPAN - 1)
    assert regional_key(same, first) == first + 1
