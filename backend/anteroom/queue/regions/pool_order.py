"""A drawn pool's place on the global line of a room across regions (docs/regions-policies.md).

The coordinator merges the regions' lines by arrival time (global_line.py) and each region
admits up to the lease's watermark, an arrival time. A drawn pool is not in arrival order but
in drawn order, so a pool spot is given a place on that axis from its drawn key instead
(lua/_line_arrival.lua is the same function, for the drain and the region's summary):

- in a draw across regions, a spot's drawn key is the top 51 bits of its HMAC order key
  (:func:`anteroom.queue.draw.room_draw.regional_key`): the same function of the shared seed in
  every region, so two regions' pool spots compare by their keys as the merged draw does;
- its arrival is ``POOL_ARRIVAL_BASE + (key + 2^51) // POOL_ARRIVAL_SCALE``: [100, 100 + 2^31)
  ms, in the order of the keys and below every real arrival (a pool is admitted before anyone
  who came after the opening, as in one region). 2^31 ms in 100 ms buckets is 21 million
  buckets: a pool of a million shares a bucket with another entrant once in twenty, so the
  merge's blur, a bucket, is about one entrant;
- an invitee in a lane (keys below the draw's) arrives at 0: ahead of everyone, as in one
  region;
- anyone else, at their own arrival time.
"""

from __future__ import annotations

from anteroom.queue.draw.room_draw import DRAWN_SPAN

POOL_ARRIVAL_BASE = 100  # one bucket above the lanes' 0
POOL_ARRIVAL_SCALE = 2**20  # 2^51 keys onto 2^31 ms


def line_arrival(order_key: int, since: int) -> int:
    """The spot's arrival on the global line's time axis (ms); ``since``: its real arrival."""
    if order_key < -DRAWN_SPAN:
        return 0
    if order_key < 0:
        return POOL_ARRIVAL_BASE + (order_key + DRAWN_SPAN) // POOL_ARRIVAL_SCALE
    return since
