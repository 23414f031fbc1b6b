"""The service's own tick of every open room: the line moves even when nobody near the head polls.

Far polls write nothing (they may run on a replica), so the drain and the sweep need someone on
the primary: polls near the head still run them, and every process of the service runs one
:class:`RoomTicker` thread that calls each open room's ``tick`` script about once a second (an
open room with no spot and no revocation is skipped after one read). The script itself keeps a
``tick`` time in the room's hash, so however many processes and instances call it, it works once
per room per second and the other calls only read that field.

The safety net's switches (lua/_safety_net.lua) come back in the reply of the tick that works
after them, so exactly one process hands each to ``on_switch`` (the web tier audits them). A room
with a safety net is ticked even when empty: a queueing room must cool down with nobody in it.

Other jobs may ride on the same tick: ``jobs`` are called with (room id, now ms on the room's
clock) for each tick that worked in this process, so across all instances once per room per
second.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterable
from functools import partial

from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.process_thread import ProcessThread, step_while_alive
from anteroom.queue.connection.storage_errors import StorageError, StorageUnavailable
from anteroom.queue.draw.draw_worker import DrawWorker
from anteroom.queue.line.fail_open_checkin import GRACE_MS, FailOpenCheckIn
from anteroom.queue.line.fail_open_ledger import FailOpenLedger
from anteroom.queue.line.room_engine import Engine, EngineError
from anteroom.queue.rooms.room_directory import RoomDirectory

# The script's guard and the thread's wake: a process alone ticks each room every second; with
# several, the first to wake after 0.9 s ticks it, so each room ticks every 0.9 to 1.0 s.
TICK_EVERY_MS = 900
WAKE_EVERY_SEC = 0.5

Job = Callable[[str, int], None]
# (room id, its switches: (state, room clock ms) oldest first), see TickResult.switches
SwitchHandler = Callable[[str, tuple[tuple[str, int], ...]], None]
log = logging.getLogger("anteroom")


class RoomTicker:
    """Ticks every open room the directory knows; start with :meth:`ensure_running`."""

    def __init__(
        self,
        engine: Engine,
        directory: RoomDirectory,
        jobs: Iterable[Job] = (),
        breaker: Breaker | None = None,
        wake_every: float = WAKE_EVERY_SEC,
        fail_open: FailOpenLedger | None = None,
        on_switch: SwitchHandler | None = None,
        check_ins: FailOpenCheckIn | None = None,
    ) -> None:
        """``breaker``: the ticker's own, so an outage costs it no connect attempts; ``fail_open``:
        the process's fail-open admissions, booked at the first tick Redis answers;
        ``on_switch``: told of each safety net switch, once across processes; ``check_ins``:
        this process's check-ins with failMode-open rooms, once its ledger is booked."""
        self.engine = engine
        self.directory = directory
        self.breaker = breaker or Breaker()
        self.fail_open = fail_open if fail_open is not None else FailOpenLedger()
        self.check_ins = check_ins if check_ins is not None else FailOpenCheckIn(engine)
        self.jobs: list[Job] = list(jobs)
        self.wake_every = wake_every
        self.on_switch = on_switch
        self.failing = False  # Redis unreachable at the last step: logged once, retried
        self._thread = ProcessThread("anteroom-ticker")
        self.draws = DrawWorker()

    def open_rooms(self) -> list[str]:
        """Ids of the rooms the directory last read as open."""
        rooms = self.directory.known.rooms
        return sorted(room_id for room_id, room in rooms.items() if room["status"] == "open")

    def step(self) -> int:
        """Tick every open room once; the number of rooms whose tick worked here.

        A transport failure ends the step (the next one retries) and is logged once per outage.
        """
        worked = 0
        if self.engine.bookings.due():  # far polls' last-seen, booked once a second
            self.engine.flush_bookings()
        try:
            if self.fail_open.rooms():
                self.check_ins.saw_outage()  # admitted offline: all must check in anew
            self.book_fail_open()
            # no drain waits for this process's own now (through its breaker: an outage costs
            # the ticker no connect attempt per step)
            self.breaker.call(partial(self.check_ins.check_in, self.fail_open_rooms()))
        except StorageUnavailable as exc:
            self.check_ins.saw_outage()
            if not self.failing:
                log.warning("room ticker: Redis unreachable, will retry: %s", exc)
            self.failing = True
            return worked
        rooms = self.directory.known.rooms
        for room_id in self.open_rooms():
            if self.directory.stopping.is_set():
                break
            netted = rooms.get(room_id, {}).get("safetyNet") is not None
            try:
                # An open room nobody waits in (most, most of the time) costs one read, no script.
                if not netted and self.breaker.call(partial(self.engine.is_empty, room_id)):
                    continue
                # A due draw is made off this loop (draw_worker.py): its beacon and its
                # ordering hold that room's draw only.
                tick = partial(self.engine.tick, room_id, TICK_EVERY_MS, self.draws.submit)
                result = self.breaker.call(tick)
            except StorageUnavailable as exc:
                self.check_ins.saw_outage()
                if not self.failing:
                    log.warning("room ticker: Redis unreachable, will retry: %s", exc)
                self.failing = True
                return worked
            except (EngineError, StorageError) as exc:  # one room's trouble stops no other
                log.warning("room ticker: tick of %s failed: %s", room_id, exc)
                continue
            if self.failing:
                log.info("room ticker: Redis reachable again")
                self.failing = False
            if result.switches and self.on_switch is not None:
                try:
                    self.on_switch(room_id, result.switches)
                except Exception:  # an audit that fails must not stop the line
                    log.exception("room ticker: safety net switches of %s not reported", room_id)
            if result.ran:
                worked += 1
                self._run_jobs(room_id, result.now_ms)
        return worked

    def fail_open_rooms(self) -> list[str]:
        """Open failMode-open rooms with nothing of this process's left to book."""
        rooms, unbooked = self.directory.known.rooms, set(self.fail_open.rooms())
        return [
            room_id
            for room_id in self.open_rooms()
            if rooms[room_id].get("failMode") == "open" and room_id not in unbooked
        ]

    def leave(self) -> None:
        """Book what is left and leave the fail-open rooms' registers (a process that stops,
        its thread stopped first): the others' drains wait for it no more."""
        try:
            self.book_fail_open()
            self.check_ins.leave(self.fail_open_rooms())
        except (EngineError, StorageError) as exc:  # then it is waited for a while (GRACE_MS)
            log.warning("room ticker: fail-open registers not left: %s", exc)

    def book_fail_open(self) -> int:
        """Book the fail-open admissions this process dealt (before any drain); slots booked.

        What cannot be booked for a transport failure is kept for the next tick (and the
        failure raised); a room's refusal (gone, closed) drops its entries.
        """
        booked = 0
        for room_id in self.fail_open.rooms():
            taken = self.fail_open.take(room_id)
            by_generation: dict[int, list[tuple[str, int | None, int]]] = {}
            now = self.fail_open.clock()
            for a in taken:
                left_ms = int((a.expires_at - now) * 1000)
                by_generation.setdefault(a.generation, []).append((a.vid, a.ticket, left_ms))
            try:
                for generation, admissions in by_generation.items():
                    booked += self.breaker.call(
                        partial(
                            self.engine.book_fail_open, room_id, generation, admissions, GRACE_MS
                        ),
                        self.engine.keys.room(room_id),
                    )[0]
            except StorageUnavailable:
                self.fail_open.put_back(room_id, taken)  # booking twice changes nothing
                raise
            except (EngineError, StorageError) as exc:
                log.warning("room ticker: fail-open admissions of %s not booked: %s", room_id, exc)
        if booked:
            log.info("room ticker: booked %d fail-open admissions", booked)
        return booked

    def _run_jobs(self, room_id: str, now_ms: int) -> None:
        for job in self.jobs:
            try:
                job(room_id, now_ms)
            except Exception:  # a job's failure must not stop the line
                log.exception("room ticker: job %r failed for %s", job, room_id)

    @property
    def thread(self) -> threading.Thread | None:
        """This process's ticker thread, once started."""
        return self._thread.thread

    def join(self, timeout: float) -> bool:
        """Wait for this process's thread to end after a stop; True when it has (or never ran)."""
        thread = self.thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def ensure_running(self) -> None:
        """Start this process's ticker thread unless it runs (cheap per request; fork-safe).

        It stops with the directory (:meth:`RoomDirectory.stop`) and holds this ticker weakly,
        so it also ends with its app.
        """
        self._thread.ensure(
            step_while_alive,
            (weakref.ref(self), self.directory.stopping, self.wake_every, "room ticker"),
        )
