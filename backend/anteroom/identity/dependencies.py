"""What the identity rules use of a running service, and nothing more.

The web layer hands this over (``Services.identity``) instead of its whole container: identity
never sees the room ticker, the series sampler or the key store.
"""

from __future__ import annotations

from dataclasses import dataclass

from anteroom.config import Settings
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.redis_link import Client
from anteroom.queue.line.room_engine import Engine
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.queue.rooms.room_directory import StaleCache
from anteroom.sdk.tokens import Keyring


@dataclass(frozen=True)
class IdentityServices:
    """Signing keys, Redis (through its breaker), the engine, and the settings identity reads."""

    settings: Settings  # the proof-of-work difficulty, per environment or by default
    keyring: Keyring
    redis: Client  # the writer: spent challenges, per-network counts, revocation reads
    breaker: Breaker
    engine: Engine  # the environment's rooms (revocations live in each room)
    rooms: StaleCache  # cached room configurations, forgotten when a revocation changes one

    @property
    def keys(self) -> KeySpace:
        """Redis key names."""
        return self.engine.keys
