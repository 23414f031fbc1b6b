"""Connections that count their connect attempts (the breaker's tests read the count) and skip
the health-check PING a connection just made would pay."""

from __future__ import annotations

import time

import redis


class _Counting:
    """Counts connect attempts on :class:`CountingConnection` and marks a new connection fresh."""

    _sock: object

    def connect(self) -> None:
        if self._sock is None:
            CountingConnection.attempts += 1
            super().connect()  # type: ignore[misc]
            # A connection just made is known to answer: its first command is not preceded by a
            # health-check PING (a round trip of its own, paid by whichever request opened it).
            if self.health_check_interval:  # type: ignore[attr-defined]
                interval = self.health_check_interval  # type: ignore[attr-defined]
                self.next_health_check = time.monotonic() + interval
        else:
            super().connect()  # type: ignore[misc]


class CountingConnection(_Counting, redis.Connection):
    """A connection that counts its connect attempts (the breaker's tests read the count)."""

    attempts = 0


class CountingUnixConnection(_Counting, redis.UnixDomainSocketConnection):
    """Unix-socket twin of :class:`CountingConnection`."""
