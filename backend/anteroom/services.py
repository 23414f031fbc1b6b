"""The per-process objects the views share: Redis client, engine, keyring, settings."""

from __future__ import annotations

from dataclasses import dataclass

import redis

from .config import Settings
from .engine import Engine
from .keystore import KeyStore
from .redis_keys import KeySpace
from .room_cache import RoomDirectory, StaleCache
from .storage import Breaker
from .tokens import Keyring


@dataclass
class Services:
    """Attached to the Flask app as ``app.extensions["anteroom"]``."""

    settings: Settings
    redis: redis.Redis
    engine: Engine
    keyring: Keyring
    keystore: KeyStore
    breaker: Breaker
    rooms: StaleCache
    public_keys: StaleCache
    directory: RoomDirectory

    @property
    def keys(self) -> KeySpace:
        """Redis key names."""
        return self.engine.keys
