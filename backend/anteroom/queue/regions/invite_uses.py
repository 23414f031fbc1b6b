"""An invite's uses counted once across regions, in etcd (docs/regions-policies.md).

Invites are signed with the shared keyring, so one verifies in every region; each region's
Redis counts the identities that spent it (lua/_invite.lua), which alone would let an invite of
one use in once per region. So in a room across regions an identity's use is also claimed in
etcd before its region's entry: the count and the identity's claim are written in one
transaction that holds only if the count is still the one read and the identity has no claim
yet (compare-and-swap, retried on a race). The same identity entering again, in any region,
uses nothing more; a withdrawal recorded here refuses it everywhere.

This is the one per-visitor call that crosses regions: an etcd write is a quorum round trip,
paid only by a visitor entering with an invite, once. If etcd cannot be reached (the region
is cut off), the region's own count decides, as in one region: then an invite of ``u`` uses may
let in ``u`` identities in each region cut off meanwhile, besides ``u`` through etcd. That bound
is stated rather than refusing invitees for as long as a partition lasts.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Callable
from typing import Any, Literal

from anteroom.queue.line.room_engine import InviteSpent, InviteWithdrawn
from anteroom.queue.regions.etcd_kv import (
    Etcd,
    EtcdUnavailable,
    if_absent,
    put_op,
    range_kvs,
    range_op,
)
from anteroom.sdk.tokens import InviteClaims

log = logging.getLogger("anteroom")

PREFIX = "/anteroom/invites/"
RETRIES = 16  # racing claims of one invite: each retry follows another's success

Claim = Literal["ok", "spent", "withdrawn"]


def _base(invite_id: str) -> str:
    # by the invite's id alone (random, ~95 bits): a regional room's id may differ by region
    return f"{PREFIX}{invite_id}/"


def _who(vid: str) -> str:
    # a visitor id is kept hashed: etcd's keys are read by operators' tooling
    return hashlib.sha256(vid.encode("utf-8")).hexdigest()[:32]


def _if_unchanged(key: str, mod_revision: int) -> dict[str, Any]:
    if not mod_revision:
        return if_absent(key)
    name = base64.b64encode(key.encode()).decode()
    return {"key": name, "result": "EQUAL", "target": "MOD", "mod_revision": str(mod_revision)}


def claim(etcd: Etcd, invite_id: str, uses: int, vid: str) -> Claim:
    """Claim one of the invite's ``uses`` for ``vid``: "ok" (claimed now or before by this
    identity), "spent" (``uses`` other identities hold one) or "withdrawn"."""
    base = _base(invite_id)
    count_key, mine = base + "n", base + "by/" + _who(vid)
    for _ in range(RETRIES):
        # one read of the three keys (one round trip), then the swap (another)
        _, read = etcd.txn([], [range_op(base + "w"), range_op(mine), range_op(count_key)])
        if range_kvs(read, 0):
            return "withdrawn"
        if range_kvs(read, 1):
            return "ok"
        counted = range_kvs(read, 2)
        count = counted[0] if counted else None
        taken = int(count.value) if count else 0
        if taken >= uses:
            return "spent"
        ok, _ = etcd.txn(
            [_if_unchanged(count_key, count.mod_revision if count else 0), if_absent(mine)],
            [put_op(count_key, str(taken + 1)), put_op(mine, "1")],
        )
        if ok:
            return "ok"
    return "spent"  # still racing after many tries: refuse rather than over-admit


def withdraw(etcd: Etcd, invite_id: str) -> None:
    """Record the invite's withdrawal for every region (each region's own record is kept by
    its withdraw_invite.lua as in one region)."""
    etcd.put(_base(invite_id) + "w", "1")


def withdrawal(etcd: Etcd) -> Callable[[str, str], None]:
    """The hook a region's engine runs after withdrawing an invite (``Engine.invite_withdrawn``,
    of the room's id and the invite's): records it for every region."""

    def record(room_id: str, invite_id: str) -> None:
        withdraw(etcd, invite_id)

    return record


def gate(etcd: Etcd) -> Callable[[InviteClaims, str], None]:
    """The check a region's engine runs before an entry with an invite
    (``Engine.invite_gate``): raises InviteSpent or InviteWithdrawn when the invite's global
    count refuses ``vid``; lets the region's own count decide when etcd is out of reach."""

    def check(invite: InviteClaims, vid: str) -> None:
        try:
            verdict = claim(etcd, invite.invite_id, invite.uses, vid)
        except EtcdUnavailable:
            log.warning("invites: etcd out of reach; the region's own count decides")
            return
        if verdict == "spent":
            raise InviteSpent("InviteSpent")
        if verdict == "withdrawn":
            raise InviteWithdrawn("InviteWithdrawn")

    return check
