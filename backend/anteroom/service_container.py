"""The per-process objects the views share: Redis clients, engine, keyring, settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from anteroom.config import Settings
from anteroom.ops.keystore import KeyStore
from anteroom.queue.fail_open_ledger import FailOpenLedger
from anteroom.queue.key_layout import KeySpace
from anteroom.queue.redis_link import Breaker, Client, Links
from anteroom.queue.room_directory import RoomDirectory, StaleCache
from anteroom.queue.room_engine import Engine
from anteroom.queue.room_series import RoomSeries
from anteroom.queue.room_ticker import RoomTicker
from anteroom.queue.series_sampler import SamplerThread
from anteroom.sdk.tokens import Keyring


@dataclass
class Services:
    """Attached to the Flask app as ``app.extensions["anteroom"]``."""

    settings: Settings
    redis: Client  # the writer: the primary, or the cluster
    links: Links  # the writer and the reader (a replica for read-only scripts, if any)
    engine: Engine
    keyring: Keyring
    keystore: KeyStore
    breaker: Breaker
    rooms: StaleCache
    public_keys: StaleCache
    directory: RoomDirectory
    series: RoomSeries
    sampler: SamplerThread
    ticker: RoomTicker
    # Fail-open admissions dealt by this process, booked by the ticker once Redis is back.
    fail_open: FailOpenLedger = field(default_factory=FailOpenLedger)

    @property
    def keys(self) -> KeySpace:
        """Redis key names."""
        return self.engine.keys
