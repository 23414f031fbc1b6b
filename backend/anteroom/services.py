"""The per-process objects the views share: Redis client, engine, keyring, settings."""

from __future__ import annotations

from dataclasses import dataclass

import redis

from .config import Settings
from .engine import Engine
from .tokens import Keyring


@dataclass
class Services:
    """Attached to the Flask app as ``app.extensions["anteroom"]``."""

    settings: Settings
    redis: redis.Redis
    engine: Engine
    keyring: Keyring
