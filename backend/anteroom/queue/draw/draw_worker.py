"""A process's draws, made off the room ticker (queue/draw/room_draw.py, lua/shuffle_prequeue.lua).

The ticker ticks every open room in turn; a draw inside a tick (its beacon fetch: up to the
outbound deadline; its ordering: seconds at 100,000 entrants) held every other room's tick,
whoever's room it was. The ticker hands a due draw here instead and goes on: each draw runs in
its own thread (a greenlet in a gevent worker), at most one per room. Draws that must first
fetch their beacon (kind ``beacon``: up to the fetch's deadline each) count against their own
``MAX_FETCHING``, the others against ``MAX_RUNNING``: beacons that never answer can fill the
first, never the second. A draw refused for either is handed again by the room's next tick, as
is one whose beacon did not answer. So one room's slow beacon delays that room's draw, and no
other room's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

MAX_RUNNING = 8  # draws at once per process with no beacon to fetch: each mostly waits on Redis
MAX_FETCHING = 16  # draws waiting on their beacon at once per process (5 s at most each)

log = logging.getLogger("anteroom")

Job = Callable[[], object]


class DrawWorker:
    """Runs each room's due draw in the background, once at a time per room."""

    def __init__(self, max_running: int = MAX_RUNNING, max_fetching: int = MAX_FETCHING) -> None:
        self.limits = {"draw": max_running, "beacon": max_fetching}
        self._running: dict[tuple[str, str], str] = {}  # (room, kind) -> its lane
        self._lock = threading.Lock()
        # Told (room id, kind) after each draw job ran here, in its thread: the process's
        # receipt tree is built there, as the draw is made (service_container.py).
        self.after: list[Callable[[str, str], object]] = []

    def submit(self, room_id: str, kind: str, job: Job) -> bool:
        """Run ``job`` (the ``kind`` of draw of ``room_id``: ``opening``, ``beacon`` for an
        opening's draw that fetches its beacon first, ``prequeue``) in the background unless
        that room's draw already runs or its lane is full; True when it started."""
        lane = "beacon" if kind == "beacon" else "draw"
        key = (room_id, "opening" if kind == "beacon" else kind)
        with self._lock:
            busy = sum(1 for taken in self._running.values() if taken == lane)
            if key in self._running or busy >= self.limits[lane]:
                return False
            self._running[key] = lane
        thread = threading.Thread(
            target=self._run, args=(key, job), name=f"anteroom-draw-{room_id}", daemon=True
        )
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the next tick hands it again
            self._done(key)
            return False
        return True

    def running(self) -> set[tuple[str, str]]:
        """The (room id, kind) of the draws running now."""
        with self._lock:
            return set(self._running)

    def _run(self, key: tuple[str, str], job: Job) -> None:
        try:
            job()
            for then in self.after:
                then(*key)
        except Exception:  # a draw's failure is retried by the room's next tick
            log.exception("draw worker: %s draw of %s failed (will retry)", key[1], key[0])
        finally:
            self._done(key)

    def _done(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._running.pop(key, None)
