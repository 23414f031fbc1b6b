"""The coordinator's leadership and its fencing epoch, held in etcd.

A candidate campaigns by creating the leader key with a lease, in a transaction that only
succeeds while the key is absent (create revision 0). Its epoch is the revision that created
the key: etcd's revisions only grow, so each new leader's epoch is above every earlier one's,
whoever the members were. The leader renews its lease; when it stops (a dead process, a region
cut off), the lease lapses after ``ttl`` seconds, etcd deletes the key, and the next campaign
wins. Every write a leader makes is guarded by the same comparison (the key still created at
its epoch), so a deposed leader that has not noticed yet writes nothing; and every lease it
hands a region carries the epoch, which the region checks against the newest it has seen.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from anteroom.queue.regions.etcd_kv import (
    Etcd,
    EtcdError,
    EtcdUnavailable,
    if_absent,
    if_created_at,
    put_op,
    range_kvs,
    range_op,
)

log = logging.getLogger("anteroom")


@dataclass(frozen=True)
class Leader:
    """Who leads and since which revision (the fencing epoch)."""

    candidate: str
    epoch: int


class Leadership:
    """One candidate's campaign for ``key``."""

    def __init__(self, etcd: Etcd, key: str, candidate: str, ttl: int = 2) -> None:
        """``ttl``: seconds the leader's lease lasts unrenewed (its loss is noticed so late)."""
        self.etcd = etcd
        self.key = key
        self.candidate = candidate
        self.ttl = ttl
        self.lease = 0
        self.epoch = 0  # 0: not leading

    @property
    def leading(self) -> bool:
        """True while this candidate believes it leads (checked at each renewal)."""
        return self.epoch > 0

    def current(self) -> Leader | None:
        """The leader on record, or None."""
        found = self.etcd.get(self.key)
        if found is None:
            return None
        return Leader(found.value.decode(), found.create_revision)

    def campaign(self) -> Leader | None:
        """Lead if nobody does; the leader afterwards (this candidate or another), or None."""
        if self.leading:
            return Leader(self.candidate, self.epoch)
        held = self.current()  # most campaigns find a leader: no lease granted for nothing
        if held is not None:
            return held
        lease = self.etcd.grant(self.ttl)
        won, answer = self.etcd.txn(
            [if_absent(self.key)], [put_op(self.key, self.candidate, lease)], [range_op(self.key)]
        )
        if won:
            self.lease = lease
            self.epoch = int(answer["header"]["revision"])
            log.info("coordinator: %s leads, epoch %d", self.candidate, self.epoch)
            return Leader(self.candidate, self.epoch)
        self.etcd.revoke(lease)
        won_by = range_kvs(answer)
        return Leader(won_by[0].value.decode(), won_by[0].create_revision) if won_by else None

    def renew(self) -> bool:
        """Renew the leader's lease; False (and no longer leading) once it has lapsed."""
        if not self.leading:
            return False
        try:
            left = self.etcd.keep_alive(self.lease)
        except EtcdUnavailable:
            # unreachable: the lease may still run, but this leader cannot prove it; it stops
            # acting before its lease can lapse (it renews every ttl/3)
            self._step_down("etcd unreachable")
            return False
        except EtcdError:
            left = 0
        if left <= 0:
            self._step_down("lease lapsed")
            return False
        return True

    def guarded(self, ops: list[dict[str, Any]]) -> bool:
        """Apply ``ops`` only while this candidate still leads at its epoch; False if deposed."""
        if not self.leading:
            return False
        won, _ = self.etcd.txn([if_created_at(self.key, self.epoch)], ops)
        if not won:
            self._step_down("deposed")
        return won

    def resign(self) -> None:
        """Give up leadership now (its key goes with the lease)."""
        if self.lease:
            with contextlib.suppress(EtcdUnavailable, EtcdError):  # else it lapses by itself
                self.etcd.revoke(self.lease)
        self._step_down("resigned")

    def _step_down(self, why: str) -> None:
        if self.epoch:
            log.info("coordinator: %s stops leading epoch %d (%s)", self.candidate, self.epoch, why)
        self.epoch, self.lease = 0, 0
