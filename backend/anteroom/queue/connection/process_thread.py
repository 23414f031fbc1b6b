"""One background thread per process, started again in a forked child.

Gunicorn forks its workers after the app may have been built, and a fork keeps no thread: the
room directory's refresher, the room ticker and the series sampler each start theirs on the
first call in a process with a new pid.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

log = logging.getLogger("anteroom")


class ProcessThread:
    """Starts a daemon thread once per process; :meth:`ensure` is cheap to call per request."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.thread: threading.Thread | None = None
        self._pid = 0
        self._lock = threading.Lock()

    def ensure(self, target: Callable[..., Any], args: tuple[Any, ...] = ()) -> bool:
        """Start ``target(*args)`` unless this process already did; True when it started now."""
        pid = os.getpid()
        if self._pid == pid:
            return False
        with self._lock:
            if self._pid == pid:
                return False
            thread = threading.Thread(target=target, args=args, name=self.name, daemon=True)
            thread.start()
            self.thread, self._pid = thread, pid
        return True


def step_while_alive(ref: weakref.ref[Any], stop: threading.Event, every: float, what: str) -> None:
    """A background loop: ``ref().step()`` every ``every`` seconds until ``stop`` is set or
    its owner is collected (the thread holds it only by a weak reference, so a discarded owner
    ends its thread); a failed step is logged as ``what``'s and the loop goes on."""
    while not stop.is_set():
        owner = ref()
        if owner is None:
            return
        try:
            owner.step()
        except Exception:  # the thread must outlive any bad answer
            log.exception("%s: step failed (will retry)", what)
        del owner
        stop.wait(every)
