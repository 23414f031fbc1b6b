"""Connections that count their connect attempts (the breaker's tests read the count) and skip
the health-check PING a connection just made would pay."""

from __future__ import annotations

import time

import redis


def _fresh(connection: redis.connection.AbstractConnection) -> None:
    # A connection just made is known to answer: its first command is not preceded by a
    # health-check PING (a round trip of its own, paid by whichever request opened it).
    if connection.health_check_interval:
        connection.next_health_check = time.monotonic() + connection.health_check_interval


class CountingConnection(redis.Connection):
    """A connection that counts its connect attempts (the breaker's tests read the count)."""

    attempts = 0

    def connect(self) -> None:  # type: ignore[override]
        if self._sock is None:
            CountingConnection.attempts += 1
            super().connect()
            _fresh(self)
        else:
            super().connect()


class CountingUnixConnection(redis.UnixDomainSocketConnection):
    """Unix-socket twin of :class:`CountingConnection`."""

    def connect(self) -> None:  # type: ignore[override]
        if self._sock is None:
            CountingConnection.attempts += 1
            super().connect()
            _fresh(self)
        else:
            super().connect()
