"""Who samples and when: the per-room job a ticker calls, and this process's stand-in ticker.

:class:`Sampler` is the job ``(room_id, now_ms) -> None``: it calls Redis for a room only when the
room's next 10 s slot is due (the sample script claims the slot, so instances racing for it write
it once). :class:`SamplerThread` runs it once a second over the rooms this process knows, in one
worker per instance (a lock file), until the engine's room ticker takes the job over.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from anteroom.queue.connection.process_thread import ProcessThread
from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.series.room_series import FINE_MS, RoomSeries


class Sampler:
    """The per-room sampling job, ``(room_id, now_ms) -> None``, for a ticker to call often.

    It calls Redis only when the room's next slot is due by its own record (``now_ms`` is the
    caller's clock, used only for that): at most one script call per room per 10 s here.
    """

    def __init__(
        self, series: RoomSeries, on_error: Callable[[Exception], None] | None = None
    ) -> None:
        self.series = series
        self.on_error = on_error
        self._due: dict[str, int] = {}
        self._lock = threading.Lock()
        self.calls = 0  # script calls made (for the cost figure and tests)

    def __call__(self, room_id: str, now_ms: int) -> None:
        with self._lock:
            if self._due.get(room_id, 0) > now_ms:
                return
            self._due[room_id] = now_ms + FINE_MS  # until the answer says better
        try:
            self.calls += 1
            _, next_in = self.series.sample(room_id)
        except Exception as exc:  # a job must not kill its ticker
            if self.on_error:
                self.on_error(exc)
            return
        with self._lock:
            if next_in is None:
                self._due.pop(room_id, None)
            else:
                # Just after the slot begins (a little late, so clock skew between instances
                # does not make this one ask before the slot has turned for Redis).
                self._due[room_id] = now_ms + next_in + 50

    def forget(self, keep: Iterable[str]) -> None:
        """Drop the records of rooms not in ``keep`` (deleted ones)."""
        keep = set(keep)
        with self._lock:
            for room_id in [r for r in self._due if r not in keep]:
                del self._due[room_id]


class SamplerThread:
    """Drives a :class:`Sampler` once a second over the rooms ``rooms()`` names, per process.

    A stand-in until the engine's room ticker runs the sampler as one of its jobs. Started
    lazily per process (gunicorn forks after the app is built and a fork keeps no thread).
    """

    def __init__(
        self,
        sampler: Sampler,
        rooms: Callable[[], Iterable[str]],
        clock: Callable[[], float],
        interval: float = 1.0,
        lock_path: Path | None = None,
    ) -> None:
        self.sampler = sampler
        self.rooms = rooms
        self.clock = clock
        self.interval = interval
        self.lock_path = lock_path
        self._lock_fd: int | None = None
        self._lock_pid = 0  # the process that took the lock (a fork does not inherit the role)
        self._thread = ProcessThread("anteroom-series")
        self._stop = threading.Event()

    def leads(self) -> bool:
        """True in the one process of this host that samples (it holds ``lock_path``).

        The other workers of an instance skip their passes, so an instance asks Redis once per
        room per slot, not once per worker; when the holder dies its lock goes with it and the
        next worker to try takes over. Without ``lock_path`` every process samples.
        """
        if self.lock_path is None:
            return True
        if self._lock_fd is not None and self._lock_pid == os.getpid():
            return True
        try:
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return True  # no lock to be had (read-only folder): sample rather than not
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._lock_fd, self._lock_pid = fd, os.getpid()
        return True

    def release(self) -> None:
        """Give up leading (shutdown, tests): another process may take over."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def tick(self) -> None:
        """One pass: this process's tallied refusals are added up (every worker has its own),
        then every room the sampler is due for is sampled (by the leading process only)."""
        with contextlib.suppress(StorageError):  # the tallies are kept for the next pass
            self.sampler.series.flush_tallies()
        if not self.leads():
            return
        now_ms = int(self.clock() * 1000)
        ids = list(self.rooms())
        for room_id in ids:
            self.sampler(room_id, now_ms)
        self.sampler.forget(ids)

    def ensure_running(self) -> None:
        """Start this process's thread unless it runs (cheap; call per request)."""
        self._thread.ensure(self._run)

    def stop(self) -> None:
        """Stop the thread (tests, shutdown) and let another process lead."""
        self._stop.set()
        self.release()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except Exception:  # the thread must outlive any bad round
                continue
