"""Fixed-window counters in this process's memory, for the limits counted per worker (the
challenge, the public fairness documents).

``limits``' MemoryStorage does the same counting, but each hit may start a timer thread to
expire its keys (one every 10 ms of traffic): a thread's start and run cost more than the
challenge it guards. Here a window is a count and its end; expired windows are dropped in bulk
when the table grows, so memory stays bounded without a thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from limits import RateLimitItem
from limits.util import WindowStats

MAX_KEYS = 100_000  # past this many windows, the expired ones are dropped


class LocalWindows:
    """A fixed-window limiter (``hit``, ``get_window_stats``, as ``limits``' strategies): a
    window opens at its key's first hit and lasts the item's expiry, as limits' fixed window
    on memory counts it."""

    def __init__(self, max_keys: int = MAX_KEYS, clock: Callable[[], float] = time.time) -> None:
        self.max_keys = max_keys
        self.clock = clock
        self.windows: dict[str, tuple[float, int]] = {}  # key -> (window's end, hits)
        self.lock = threading.Lock()

    def hit(self, item: RateLimitItem, *identifiers: str) -> bool:
        """Count one hit; False when it is over the limit."""
        key = item.key_for(*identifiers)
        now = self.clock()
        with self.lock:
            end, hits = self.windows.get(key, (0.0, 0))
            if end <= now:
                if len(self.windows) >= self.max_keys:
                    self._drop_expired(now)
                end, hits = now + item.get_expiry(), 0
            hits += 1
            self.windows[key] = (end, hits)
        return hits <= item.amount

    def get_window_stats(self, item: RateLimitItem, *identifiers: str) -> WindowStats:
        """Reset time and remaining hits of the current window."""
        now = self.clock()
        end, hits = self.windows.get(item.key_for(*identifiers), (0.0, 0))
        if end <= now:
            return WindowStats(now, item.amount)
        return WindowStats(end, max(0, item.amount - hits))

    def _drop_expired(self, now: float) -> None:
        expired = [key for key, (end, _) in self.windows.items() if end <= now]
        for key in expired:
            del self.windows[key]
        if len(self.windows) >= self.max_keys:  # all alive: a flood of addresses; start over
            self.windows.clear()
