"""Signed agents' nonces, in Redis: a nonce used once anywhere (any worker, any instance) is a
replay everywhere after, until its signature expires (then the signature is refused anyway).

The SDK's ``signed_agents.Nonces`` keeps them in one process, which is enough for one edge
process; the service runs several workers, so it books them here: one ``SET NX EXAT`` per
verified signed request. Keys are the hash of (keyid, nonce), so an agent's nonce never
chooses a key's name.
"""

from __future__ import annotations

import hashlib

from anteroom.queue.connection.redis_link import Client
from anteroom.queue.rooms.key_layout import KeySpace


class RedisNonces:
    """``first_use`` as ``signed_agents.Nonces`` has it, shared by every process."""

    def __init__(self, redis: Client, keys: KeySpace) -> None:
        self.redis, self.keys = redis, keys

    def first_use(self, keyid: str, nonce: str, until: float, now: float) -> bool:
        """Book ``nonce`` of ``keyid`` until ``until`` (epoch s); False when booked already."""
        digest = hashlib.sha256(f"{keyid} {nonce}".encode()).hexdigest()[:40]
        expire_at = max(int(until), int(now) + 1)
        return bool(self.redis.set(self.keys.agent_nonce(digest), 1, nx=True, exat=expire_at))
