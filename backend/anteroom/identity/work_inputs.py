"""The facts the work rule (work_rule.py) reads, gathered for one challenge in one round trip.

Kept in Redis, counted per minute: identifies per network (sessions.network_identifies) and per
environment, and per room the refused entries of each address range (a day's history). Failed
identifies are counted in this process's memory (a wrong solution is refused offline, before any
Redis write, so a flood of garbage costs Redis nothing); their ratio is what the rule reads.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import threading
import time
from collections.abc import Callable
from typing import Any

from anteroom.identity import sessions
from anteroom.identity.dependencies import IdentityServices
from anteroom.identity.signal_rules import Evidence, assess
from anteroom.identity.work_rule import Pressure, Risk, Work, work_for
from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.series.room_series import COUNTERS, Sample
from anteroom.sdk import tokens

RANGE_ABUSE_TTL_SEC = 86_400
ARRIVALS_SAMPLES = 7  # the series' 10 s samples spanning the last minute
ENTRIES = list(COUNTERS).index("nent")


def range_tag(keyring: tokens.Keyring, address: str) -> str:
    """Keyed tag of the address range (IPv4 /24, IPv6 /48) of ``address``; none read back."""
    ip = ipaddress.ip_address(address.strip())
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if ip.version == 4 else 48
    network = ipaddress.ip_network(f"{ip}/{prefix}", strict=False)
    key = keyring.derived_key(keyring.signing_kid, "range-tag")
    digest = hmac.new(key, str(network).encode("ascii"), hashlib.sha256).digest()
    return tokens.b64url_encode(digest[:12])


class IdentifyOutcomes:
    """Identifies checked by this process over the current and the previous minute."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._minute = 0
        self._now = [0, 0]  # seen, failed in the current minute
        self._before = [0, 0]

    def _roll(self, minute: int) -> None:
        if minute != self._minute:
            self._before = self._now if minute == self._minute + 1 else [0, 0]
            self._now, self._minute = [0, 0], minute

    def record(self, failed: bool) -> None:
        """Count one identify whose proof of work was checked."""
        with self._lock:
            self._roll(int(time.time() // 60))
            self._now[0] += 1
            self._now[1] += int(failed)

    def recent(self) -> tuple[int, int]:
        """``(seen, failed)`` over this and the previous minute."""
        with self._lock:
            self._roll(int(time.time() // 60))
            return self._now[0] + self._before[0], self._now[1] + self._before[1]


def outcomes(s: IdentityServices) -> IdentifyOutcomes:
    """This app's (this process's) identify outcomes, kept beside its services."""
    found = s.__dict__.get("identify_outcomes")
    if found is None:
        found = s.__dict__.setdefault("identify_outcomes", IdentifyOutcomes())
    return found  # type: ignore[no-any-return]


def env_identifies_key(s: IdentityServices, env: str, minute: int) -> str:
    # Counted by sessions.network_identifies, in the same round trip as the network's.
    return f"{s.keys.prefix}ide:{env}:{minute}"


def range_abuse_key(s: IdentityServices, room_id: str, tag: str) -> str:
    # Under the room's hash tag: it is the room's own history.
    return f"{s.keys.room_base(room_id)}abr:{tag}"


def count_refusal(s: IdentityServices, room_id: str, address: str) -> None:
    """Remember that the room refused (denied or held) an entry from ``address``'s range."""
    key = range_abuse_key(s, room_id, range_tag(s.keyring, address))

    def bump() -> None:
        pipe = s.redis.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, RANGE_ABUSE_TTL_SEC)
        pipe.execute()

    s.breaker.call(bump, key)


def arrivals_per_minute(members: list[str]) -> float:
    """Entries per minute between the oldest and newest of these series samples (0 if < 2)."""
    samples = [Sample.parse(m) for m in members]
    if len(samples) < 2:
        return 0.0
    newest, oldest = max(samples, key=lambda x: x.at_ms), min(samples, key=lambda x: x.at_ms)
    span_ms = newest.at_ms - oldest.at_ms
    if span_ms <= 0:
        return 0.0
    return max(0, newest.counters[ENTRIES] - oldest.counters[ENTRIES]) * 60_000 / span_ms


def gather(
    s: IdentityServices, env: str, room: dict[str, Any] | None, address: str
) -> tuple[Risk, Pressure]:
    """Risk and pressure for a challenge from ``address`` (for ``room`` if named).

    One pipelined read; when Redis cannot answer, what the request itself shows (its score) and
    a calm room are assumed: identify cannot spend a challenge then anyway.
    """
    minute = int(time.time() // 60)
    try:
        network, rng = tokens.network_tag(s.keyring, address), range_tag(s.keyring, address)
    except ValueError:  # not an IP address (a unix socket's peer): nothing to weigh by address
        network = rng = tokens.network_tag(s.keyring, "0.0.0.0")
    keys = [
        s.keys.network_identifies(network, minute),
        s.keys.network_identifies(network, minute - 1),
        env_identifies_key(s, env, minute),
        env_identifies_key(s, env, minute - 1),
    ]

    def read() -> list[Any]:
        pipe = s.redis.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
        if room is not None:
            pipe.get(range_abuse_key(s, room["id"], rng))
            pipe.zrevrange(s.keys.room_base(room["id"]) + "s10", 0, ARRIVALS_SAMPLES - 1)
        return list(pipe.execute())

    try:
        replies = s.breaker.call(read)
    except StorageError:
        replies = [None] * len(keys)
    counts = [int(x or 0) for x in replies[:4]]
    # The last minute, the current one weighed by how much of it has passed.
    share = (time.time() % 60) / 60
    network_rate = counts[0] + counts[1] * (1 - share)
    env_rate = counts[2] + counts[3] * (1 - share)
    abuse = int(replies[4] or 0) if room is not None and len(replies) > 4 else 0
    arrivals = arrivals_per_minute(replies[5]) if room is not None and len(replies) > 5 else 0.0
    seen, failed = outcomes(s).recent()
    risk = Risk(score=0, network_identifies=round(network_rate), range_abuse=abuse)
    pressure = Pressure(
        arrivals_per_minute=arrivals,
        rate_per_minute=int(room["ratePerMinute"]) if room is not None else 0,
        identifies_per_minute=round(env_rate),
        identifies_seen=seen,
        identifies_failed=failed,
    )
    return risk, pressure


def work_of_request(
    s: IdentityServices,
    env: str,
    room: dict[str, Any] | None,
    address: str,
    evidence: Callable[[int], Evidence],
) -> Work:
    """The work a challenge asks of this request (work_rule.work_for on gathered facts).

    ``evidence(network_identifies)`` builds what the signal rules read. A pinned environment
    reads nothing.
    """
    policy = sessions.policy_for(s, env)
    if policy.pin is not None:
        return work_for(sessions.CALM_STRANGER, Pressure(), policy)
    risk, pressure = gather(s, env, room, address)
    score, _ = assess(evidence(risk.network_identifies))
    risk = Risk(score, risk.network_identifies, risk.range_abuse)
    return work_for(risk, pressure, policy)
