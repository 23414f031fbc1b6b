"""Demo mode's simulated crowd: visitors arriving in waves, waiting, polling, sometimes leaving,
admitted at the room's rate, so the console of a fresh ``make serve`` has a moving line to show.

It drives the engine directly (no HTTP, no proof of work) from one thread of ``anteroom serve``;
a claim in Redis keeps two servers on the same Redis from doubling the crowd.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from anteroom.queue.connection.storage_errors import StorageError, storage_errors
from anteroom.queue.line import room_engine as eng

log = logging.getLogger("anteroom")
WAVE_SEC = 600  # arrivals swell and ebb over ten minutes
MAX_WAITING = 400
HELD_SHARE = 0.04  # scored as suspicious: held until the operator raises holdScore
LEAVE_SHARE = 0.004  # of the waiting, per second
STAY_SEC = (20, 90)  # how long an admitted visitor stays before leaving


@dataclass
class Visitor:
    vid: str
    ticket: int
    generation: int
    admitted_until: float = 0.0


@dataclass
class DemoCrowd:
    """One room's crowd; :meth:`step` is one second of it at time ``t`` (seconds)."""

    engine: eng.Engine
    room_id: str
    rng: random.Random = field(default_factory=random.Random)
    visitors: dict[str, Visitor] = field(default_factory=dict)
    arrivals_owed: float = 0.0
    # Called once per visitor admitted: serve counts them in anteroom_admissions_total, as the
    # visitor API counts real visitors', so an admissions alert holds on the demo too.
    on_admit: Callable[[], None] = lambda: None

    def arrivals_per_sec(self, t: float, rate_per_min: int) -> float:
        """Somewhat over the drain at the crest of a wave, well under it in the trough."""
        wave = 1.0 + 0.8 * math.sin(2 * math.pi * t / WAVE_SEC)
        return max(0.05, rate_per_min / 60 * wave)

    def step(self, t: float) -> None:
        """Arrivals, polls of the head and of a share of the others, leaves."""
        room = self.engine.get_room(self.room_id)
        if room["status"] == "idle":
            self.visitors.clear()  # a close expired every spot
            return
        waiting = [v for v in self.visitors.values() if not v.admitted_until]
        self.arrivals_owed += self.arrivals_per_sec(t, room["ratePerMinute"] or 60)
        while self.arrivals_owed >= 1:
            self.arrivals_owed -= 1
            if len(waiting) < MAX_WAITING:
                self._arrive(t)
        head = {e.visitor for e in self.engine.line(self.room_id, 5)}
        for visitor in list(self.visitors.values()):
            if visitor.admitted_until:
                if t >= visitor.admitted_until:
                    self._leave(visitor)
            elif self.rng.random() < LEAVE_SHARE:
                self._leave(visitor)
            elif visitor.vid in head or self.rng.random() < 0.1:
                self._poll(visitor, t)

    def _arrive(self, t: float) -> None:
        vid = "demo-" + secrets.token_hex(6)
        score = 85 if self.rng.random() < HELD_SHARE else self.rng.choice((0, 10, 20, 30))
        answer = self.engine.enter(self.room_id, vid, secrets.token_hex(8), score)
        if answer.ticket is None:
            return
        visitor = Visitor(vid, answer.ticket, answer.generation)
        self.visitors[vid] = visitor
        self._note(visitor, answer, t)

    def _poll(self, visitor: Visitor, t: float) -> None:
        try:
            answer = self.engine.poll(self.room_id, visitor.vid, visitor.ticket, visitor.generation)
        except eng.EngineError:
            self.visitors.pop(visitor.vid, None)  # swept, or the room was closed
            return
        self._note(visitor, answer, t)

    def _note(self, visitor: Visitor, answer: eng.QueueAnswer, t: float) -> None:
        if answer.status == "admitted" and not visitor.admitted_until:
            self.on_admit()
            visitor.admitted_until = t + self.rng.uniform(*STAY_SEC)

    def _leave(self, visitor: Visitor) -> None:
        self.visitors.pop(visitor.vid, None)
        with contextlib.suppress(eng.EngineError):  # already gone: nothing to free
            self.engine.leave(self.room_id, visitor.vid, visitor.ticket, visitor.generation)


def run_crowd(crowd: DemoCrowd, stop: threading.Event, interval: float = 1.0) -> None:
    """Step the crowd every ``interval`` seconds while this server holds the crowd's claim."""
    client, token = crowd.engine.redis, secrets.token_hex(8)
    claim = crowd.engine.keys.prefix + "demo-crowd"
    t = 0.0
    while not stop.wait(interval):
        t += interval
        try:
            # Every Redis error is a StorageError here (redis-py's own are no OSError): an
            # outage or a reset is a line at debug level, never a traceback.
            with storage_errors():
                mine = client.set(claim, token, nx=True, px=5000) or client.get(claim) == token
                if mine:
                    client.pexpire(claim, 5000)
                    crowd.step(t)
        except (StorageError, eng.EngineError, OSError) as exc:
            log.debug("demo crowd: %s", exc)
        except Exception:  # the thread outlives any bad step
            log.exception("demo crowd: step failed")


def start_crowd(
    engine: eng.Engine, room_id: str, on_admit: Callable[[], None] = lambda: None
) -> threading.Event:
    """Run a crowd in a daemon thread; set the returned event to stop it."""
    stop = threading.Event()
    crowd = DemoCrowd(engine, room_id, on_admit=on_admit)
    threading.Thread(target=run_crowd, args=(crowd, stop), name="demo-crowd", daemon=True).start()
    return stop
