"""Per-address limits on challenge, identify and enter (docs/visitor-api.md).

A view charges its limit itself (:func:`charge`), once the request has passed every check that
needs no Redis write: body, key, token signatures and expiry, proof of work. A flood of garbage
then costs Redis nothing, and cannot use up an honest neighbour's allowance either. An address
found over its limit is refused from memory until its window resets, so a flood of well-formed
requests past the limit costs Redis nothing as well.

flask-limiter's decorators count before the view has parsed anything, and its ``deduct_when``
tests before the view and counts after it, which is not atomic (concurrent requests all pass the
test). So the views call the atomic ``hit`` of a fixed-window strategy of ``limits`` (the library
flask-limiter is built on, from the same authors), with the keys its decorators used. The
flask-limiter extension itself is not attached: its before/after-request hooks ran on every route,
the poll included, and cost ~170 µs a request here with no limit to apply.

Identify and enter are counted in Redis, so they hold across workers and instances. A challenge
is stateless and costs one signature: its limit is counted in each worker process's memory, as
is the public fairness documents' (answered from memory: web/pages/public_documents.py).

On one Redis server the enter limit costs no round trip of its own: the enter script counts the
address's counters (the same keys, the same fixed windows) before anything else, and refuses the
entry when over (:func:`enter_counters`). On a Redis Cluster those counters live on another shard
than the room's keys, which one script cannot touch, so the view charges them apart, as before.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from typing import NoReturn

import redis.exceptions as rex
from flask import Flask, current_app, request
from limits import RateLimitItem, parse_many
from limits.storage import RedisStorage, storage_from_string
from limits.strategies import FixedWindowRateLimiter, RateLimiter
from limits.util import WindowStats

from anteroom.config import Settings
from anteroom.queue.connection import storage_errors as storage
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.redis_urls import limits_storage_uri, parse_target
from anteroom.queue.connection.storage_errors import StorageError
from anteroom.web.serving import http_errors as errors
from anteroom.web.visitor.local_windows import LocalWindows

log = logging.getLogger("anteroom")
EXTENSION = "anteroom.web.visitor.address_limits"
EXTENSION_SCRIPTED = "anteroom.web.visitor.address_limits.scripted"
MAX_REMEMBERED = 10_000


class DeferredLimiter:
    """A fixed-window limiter on Redis whose storage is built at its first use.

    ``limits``' cluster storage asks the cluster for its slot map as it is built; a worker must
    start even while Redis is unreachable (docs/deploying.md, "When Redis fails"), so nothing
    connects at start-up.
    """

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._limiter: FixedWindowRateLimiter | None = None
        self._lock = threading.Lock()

    def limiter(self) -> FixedWindowRateLimiter:
        """The limiter, its storage built now if it was not yet."""
        limiter = self._limiter
        if limiter is None:
            with self._lock:
                if self._limiter is None:
                    try:
                        built = storage_from_string(
                            self.uri, socket_connect_timeout=1, socket_timeout=1
                        )
                    except rex.RedisClusterException as exc:
                        raise rex.ConnectionError(f"Redis Cluster unreachable: {exc}") from exc
                    self._limiter = FixedWindowRateLimiter(built)
                limiter = self._limiter
        return limiter

    def close(self) -> None:
        """Close the storage's Redis client, if one was built (its sockets with it)."""
        with self._lock:
            limiter, self._limiter = self._limiter, None
        client = getattr(getattr(limiter, "storage", None), "storage", None)
        if client is not None:
            client.close()

    def hit(self, item: RateLimitItem, *identifiers: str) -> bool:
        """Count one hit; False when it is over the limit."""
        return self.limiter().hit(item, *identifiers)

    def get_window_stats(self, item: RateLimitItem, *identifiers: str) -> WindowStats:
        """Reset time and remaining hits of the current window."""
        return self.limiter().get_window_stats(item, *identifiers)


@dataclass(frozen=True)
class AddressLimit:
    """One limit per client address; ``scope`` names it in the key (the view's endpoint).

    ``items`` are the parsed limit string (``10/second;500/hour`` gives two, each enforced).
    """

    strategy: RateLimiter | DeferredLimiter | LocalWindows
    items: tuple[RateLimitItem, ...]
    prefix: str
    scope: str
    breaker: Breaker | None  # set for a limit kept in Redis
    # Address -> epoch seconds its window resets: an address known to be over is refused from
    # memory until then, so a flood of well-formed requests past the limit costs Redis nothing.
    refused_until: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def charge(self, address: str) -> None:
        """Count one request from ``address``; RateLimited (with Retry-After) when over."""
        self.check_memory(address)
        ids = (self.prefix, address, self.scope)
        if self.breaker is None:
            resets = self._over(ids)
        elif self.breaker.is_open:
            return  # Redis is known to be down: the view answers for the outage, not a limit
        else:
            try:
                # Errors translated, but opening the breaker is left to the view's own call,
                # as when flask-limiter swallowed them.
                resets = storage.call(lambda: self._over(ids))
            except StorageError as exc:
                # Redis failed (down, full): the view's own Redis call reports it (503 or 429).
                log.warning("per-address limit %s not counted: %s", self.scope, type(exc).__name__)
                return
        if resets:
            self.refuse(address, max(resets) - time.time())

    def check_memory(self, address: str) -> None:
        """RateLimited when ``address`` is known to be over until its window resets."""
        known = self.refused_until.get(address, 0.0)
        if known > time.time():
            raise errors.RateLimited(retry_after=max(1, math.ceil(known - time.time())))

    def refuse(self, address: str, retry_after: float) -> NoReturn:
        """Remember ``address`` as over for ``retry_after`` seconds, and refuse this request."""
        if len(self.refused_until) >= MAX_REMEMBERED:
            self.refused_until.clear()  # bounded against a flood from many addresses
        self.refused_until[address] = time.time() + retry_after
        raise errors.RateLimited(retry_after=max(1, math.ceil(retry_after)))

    def counters(self, address: str) -> list[tuple[str, int, int]]:
        """The Redis counters of ``address`` (key, limit, window seconds), as ``limits``' fixed
        window on Redis names and counts them, for a script that counts them itself."""
        ids = (self.prefix, address, self.scope)
        return [
            (f"{RedisStorage.PREFIX}:{item.key_for(*ids)}", item.amount, item.get_expiry())
            for item in self.items
        ]

    def _over(self, ids: tuple[str, ...]) -> list[float]:
        """Hit every window; the reset times of those now over their limit (empty: allowed)."""
        return [
            self.strategy.get_window_stats(item, *ids).reset_time
            for item in self.items
            if not self.strategy.hit(item, *ids)
        ]


def _parsed(name: str, text: str) -> tuple[RateLimitItem, ...]:
    # A bad limit string fails at start-up, naming its setting, not as an unlimited endpoint.
    try:
        return tuple(parse_many(text))
    except ValueError:
        raise ValueError(f"ANTEROOM_LIMIT_{name.upper()}: not a limit like 60/minute") from None


def init_app(app: Flask, settings: Settings, prefix: str, breaker: Breaker) -> None:
    """Build the limits of challenge, identify, enter and fairness for :func:`charge`.

    Identify and enter share one Redis storage (keys: prefix, address, endpoint); the challenge
    limit has its own, in memory. Nothing runs on requests that no limit applies to.
    """
    shared = DeferredLimiter(limits_storage_uri(settings.redis_url))
    local = LocalWindows()
    # On one server the enter script counts the enter limit itself (no round trip of its own);
    # a cluster keeps the address's counter on another shard than the room's, so it is charged
    # apart there (see :func:`enter_counters`).
    app.extensions[EXTENSION_SCRIPTED] = not parse_target(settings.redis_url).is_cluster
    where: dict[str, tuple[RateLimiter | DeferredLimiter | LocalWindows, str, Breaker | None]] = {
        "challenge": (local, settings.limit_challenge, None),
        "identify": (shared, settings.limit_identify, breaker),
        "enter": (shared, settings.limit_enter, breaker),
        "fairness": (local, settings.limit_fairness, None),
    }
    app.extensions[EXTENSION] = {
        name: AddressLimit(strategy, _parsed(name, text), prefix, f"visitor.{name}", guard)
        for name, (strategy, text, guard) in where.items()
    }


def close(app: Flask) -> None:
    """Close the Redis clients of ``app``'s limits (tests and tooling that build many apps)."""
    for limit in app.extensions.get(EXTENSION, {}).values():
        if isinstance(limit.strategy, DeferredLimiter):
            limit.strategy.close()


def charge(name: str) -> None:
    """Count this request against the per-address limit ``name`` (challenge, identify, enter,
    fairness).

    Call it after the request's offline checks, before its first Redis write.
    """
    Limits.of(current_app.extensions, _address()).charge(name)


def enter_counters(name: str = "enter") -> list[tuple[str, int, int]] | None:
    """This request's enter-limit counters for the enter script to count (one server), or None
    when the limit was charged here already (a Redis Cluster: :func:`charge`).

    Either way an address known to be over is refused from memory first (RateLimited).
    """
    return Limits.of(current_app.extensions, _address()).counters(name)


def identify_counters() -> list[tuple[str, int, int]] | None:
    """This request's identify-limit counters for the join script to count (one server: an
    address known to be over is refused from memory first), or None on a Redis Cluster, where
    nothing is charged here: the caller identifies and enters in calls apart."""
    return Limits.of(current_app.extensions, _address()).identify_counters()


def refused_by_script(name: str, retry_after: float) -> NoReturn:
    """The script found this request's address over limit ``name``: remembered, refused."""
    Limits.of(current_app.extensions, _address()).refused_by_script(name, retry_after)


def _address() -> str:
    return request.remote_addr or "127.0.0.1"


@dataclass(frozen=True)
class Limits:
    """The per-address limits of one app for one address, outside Flask's request context too
    (web/visitor/hot_path.py): what :func:`charge` and its neighbours do for the current request."""

    limits: dict[str, AddressLimit]
    scripted: bool  # one server: the enter (and join) scripts count their limits themselves
    address: str

    @classmethod
    def of(cls, extensions: dict[str, object], address: str) -> Limits:
        """The limits the app with these ``extensions`` keeps, for ``address``."""
        return cls(extensions[EXTENSION], bool(extensions[EXTENSION_SCRIPTED]), address)  # type: ignore[arg-type]

    def charge(self, name: str) -> None:
        """See :func:`charge`."""
        self.limits[name].charge(self.address)

    def counters(self, name: str = "enter") -> list[tuple[str, int, int]] | None:
        """See :func:`enter_counters`."""
        limit = self.limits[name]
        if not self.scripted:
            limit.charge(self.address)
            return None
        limit.check_memory(self.address)
        return limit.counters(self.address)

    def identify_counters(self) -> list[tuple[str, int, int]] | None:
        """See :func:`identify_counters`."""
        return self.counters("identify") if self.scripted else None

    def refused_by_script(self, name: str, retry_after: float) -> NoReturn:
        """See :func:`refused_by_script`."""
        self.limits[name].refuse(self.address, retry_after)
