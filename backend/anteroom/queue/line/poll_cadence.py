"""The poll cadence within a budget (docs/queue.md, invariant 11), in Python.

The same rule as ``poll_after`` in lua/_cadence.lua, step for step (so the far poll answered
from a snapshot tells what the scripts would); tests hold the two together.

The arithmetic. Let P be the pace (admissions a second), F = max(100, 10 P) the front, N the
eligible line. The front polls every second (its first half) or two (the rest): at most
0.75 F polls a second. Behind it a spot at
position p polls SPREAD = 5 times over its expected wait w = p / P (plus the time to opensAt),
every w / 5 from 2 s up to CAP = 300 s. Up to p = 1,500 P (where w / 5 reaches the cap) that
is 5 P / p polls a second per spot, summing to at most 5 P ln(min(N, 1,500 P) / F); beyond,
each spot polls once per CAP: (N - 1,500 P) / 300. When that sum exceeds the room's budget B
(``pollBudgetPerSecond``, default 5,000) every interval behind the front is stretched by
sum / B, so the room's polls stay within B + F whatever N. Examples at P = 100 (6,000 a
minute, F = 1,000): 100,000 waiting make at most 2,303 polls a second behind the front;
1,000,000 make 2,505 + 2,833 = 5,338, so intervals stretch by 1.07 (the cap becomes 5.3 min);
10,000,000 stretch by 7.07 (35 min; a silent spot goes after ~106 min). At P = 1 (60 a
minute) 100,000 make 14 + 328. A cap of 120 s alone would mean 8,300 polls a second for a
million.

Abandonment follows the cadence: a spot told to poll every I ms is kept max(abandonAfterSec,
3 I) after its last poll, and the room's gracePeriodSec beyond that, for a device that cannot
poll for a while (a phone asleep) (lua/_expiry.lua, ``seen_lead``).
"""

from __future__ import annotations

import math
from typing import Any

FRONT_MIN = 100  # the front is at least the first 100 ...
FRONT_MS = 10_000  # ... and every spot within 10 s of admissions at the room's pace
SPREAD = 5  # polls over a spot's expected wait
CADENCE_CAP_MS = 300_000  # the longest interval before stretching
HELD_POLL_MS = 15_000
MISSED_POLLS = 3  # a spot is dropped after missing about this many of its own polls
DEFAULT_POLL_BUDGET = 5_000  # pollBudgetPerSecond of a room that sets none (room_config.py)


def front_size(pace: float) -> int:
    """Spots at the front: they poll every 1-2 s."""
    return max(FRONT_MIN, math.ceil(pace * FRONT_MS / 1000))


def cadence_stretch(line: int, pace: float, front: int, budget: int) -> float:
    """How much the intervals behind the front stretch so ``line`` keeps within ``budget``."""
    if line <= front:
        return 1.0
    capped_from = max(front, pace * SPREAD * CADENCE_CAP_MS / 1000)
    planned = (
        SPREAD * pace * math.log(min(line, capped_from) / front)
        + max(0, line - capped_from) * 1000 / CADENCE_CAP_MS
    )
    return max(1.0, planned / budget)


def poll_after(position: int, pace: float, delay_ms: float, line: int, budget: int) -> int:
    """``pollAfterMs`` of a waiting spot at ``position`` (``delay_ms``: until opensAt)."""
    front = front_size(pace)
    before_opening = min(delay_ms / SPREAD, CADENCE_CAP_MS)  # nobody is let in before opensAt
    if position <= front:
        front_poll = 1000 if position * 2 <= front else 2000  # whole seconds for Retry-After
        return math.floor(max(front_poll, before_opening))
    wait = delay_ms + position * 1000 / pace
    interval = min(max(2000, wait / SPREAD), CADENCE_CAP_MS)
    return math.floor(interval * cadence_stretch(line, pace, front, budget))


def seen_lead_ms(interval_ms: int, abandon_after_sec: int, grace_sec: int = 0) -> int:
    """How far beyond ``abandonAfterSec`` a spot polling every ``interval_ms`` is kept
    (``grace_sec``: the room's gracePeriodSec)."""
    return max(0, MISSED_POLLS * interval_ms - abandon_after_sec * 1000) + grace_sec * 1000


def longest_unpolled_ms(room: dict[str, Any]) -> int:
    """An upper bound of how long a spot of ``room`` (API-named config) may go unpolled.

    The longest interval is the stretched cap of a line of ``maxWaiting``; a slower observed
    pace (at capacity) only moves spots from the growing intervals to the cap, so the sum is
    bounded by the line's length over the cap plus the growing part at the room's rate.
    """
    pace = int(room.get("ratePerMinute", 60)) / 60
    line = int(room.get("maxWaiting", 100_000))
    budget = int(room.get("pollBudgetPerSecond") or DEFAULT_POLL_BUDGET)
    front = front_size(pace)
    planned = SPREAD * pace * math.log(max(1.0, line / front)) + line * 1000 / CADENCE_CAP_MS
    stretch = max(1.0, planned / budget)
    return math.ceil(MISSED_POLLS * CADENCE_CAP_MS * stretch)


def polls_per_second(line: int, pace: float, budget: int = DEFAULT_POLL_BUDGET) -> float:
    """Polls a second a room open at ``pace`` asks of ``line`` waiting spots (the sizing model).

    Summed over positions in buckets of 1 % (intervals change slowly with position), so ten
    million spots cost a few thousand steps.
    """
    total, position = 0.0, 1
    while position <= line:
        last = min(line, position + max(1, position // 100) - 1)
        middle = (position + last) // 2
        total += (last - position + 1) * 1000 / poll_after(middle, pace, 0, line, budget)
        position = last + 1
    return total
