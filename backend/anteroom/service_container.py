"""The per-process objects the views share: Redis clients, engine, keyring, settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from anteroom.config import Settings
from anteroom.identity.dependencies import IdentityServices
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.redis_link import Client, Links
from anteroom.queue.draw.receipt_keys import ReceiptSigner
from anteroom.queue.draw.room_receipts import ReceiptBook
from anteroom.queue.line.agent_lane import AgentLane
from anteroom.queue.line.fail_open_ledger import FailOpenLedger
from anteroom.queue.line.parking import Parking
from anteroom.queue.line.room_engine import Engine
from anteroom.queue.regions.region_cell import RegionCell
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.queue.rooms.room_directory import RoomDirectory, StaleCache
from anteroom.queue.rooms.room_ticker import RoomTicker
from anteroom.queue.rooms.turn_mailer import TurnMailer
from anteroom.queue.series.room_series import RoomSeries
from anteroom.queue.series.series_sampler import SamplerThread
from anteroom.sdk.crawlers import CrawlerCheck
from anteroom.sdk.signed_agents import AgentVerifier
from anteroom.sdk.tokens import Keyring
from anteroom.store.keystore import KeyStore


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
    # Verifies search crawlers' claims by DNS (sdk/crawlers.py), verdicts kept per process.
    crawler_check: CrawlerCheck = field(default_factory=CrawlerCheck)
    # Verifies signed agents' Web Bot Auth signatures (sdk/signed_agents.py), nonces in Redis;
    # None where no app built it (then a room's agents setting checks nothing).
    agent_verifier: AgentVerifier | None = None
    # Rooms across regions (ANTEROOM_REGION): this instance's part in its region's cell.
    region_cell: RegionCell | None = None

    def __post_init__(self) -> None:
        # The room ticker (drains and sweeps open rooms) starts with the directory's refresher,
        # whose per-request hook (web/app_factory.py) is then the only one.
        self.directory.companions.append(self.ticker.ensure_running)
        # The turn e-mails' sender (rooms with notify on) starts with them too.
        self.directory.companions.append(lambda: self.mailer.ensure_running())
        self.ticker.draws.after.append(self._drawn)
        if self.region_cell is not None:  # reports and leases ride along, a thread of its own
            self.directory.companions.append(self.region_cell.ensure_running)

    def _drawn(self, room_id: str, kind: str) -> None:
        """After this process's draw worker made an opening's draw: its receipt tree, now."""
        if kind == "opening":
            self.receipts.prepare(self.engine.get_room(room_id))

    def start_background(self) -> None:
        """Start this process's background threads unless they run (cheap; fork-safe).

        With :meth:`on_request`, the one place they start: the room directory's refresher with
        the room ticker, and the series sampler. ``anteroom serve`` calls it as each worker
        boots, so a quiet room is sampled too.
        """
        self.on_request()
        self.sampler.ensure_running()

    def on_request(self) -> None:
        """What every request starts unless it runs (one check when it does): the directory's
        refresher and the room ticker, for an app served otherwise than by ``anteroom serve``.
        The sampler stays off the request path."""
        self.directory.ensure_running()

    def stop_background(self) -> None:
        """Stop this process's background threads (the room ticker stops with the refresher)."""
        # Waited for: a round in flight would otherwise reopen a client about to be closed.
        self.directory.stop(wait=5)
        self.sampler.stop()
        self.ticker.leave()  # after its thread: no check-in may follow
        if self.region_cell is not None:
            self.region_cell.stop()

    @property
    def keys(self) -> KeySpace:
        """Redis key names."""
        return self.engine.keys

    @cached_property
    def receipts(self) -> ReceiptBook:
        """The draw receipts this process signs for pre-queue entrants (built once)."""
        return ReceiptBook(self.redis, self.keys, ReceiptSigner(self.keyring))

    @cached_property
    def agent_lane(self) -> AgentLane:
        """The signed agents' lanes of the rooms (built once)."""
        return AgentLane(self.redis, self.keys)

    @cached_property
    def parking(self) -> Parking:
        """Parked spots: "tell me when it's my turn" (built once)."""
        return Parking(self.engine)

    @cached_property
    def mailer(self) -> TurnMailer:
        """This process's sender of turn e-mails (built once; its thread starts with the
        directory's refresher)."""
        settings = self.settings
        return TurnMailer(
            self.parking,
            self.directory,
            self.keyring,
            smtp_url=settings.smtp_url,
            sender=settings.smtp_from or "anteroom@localhost",
            base_url=settings.public_url or f"http://{settings.bind}",
        )

    @cached_property
    def identity(self) -> IdentityServices:
        """The part of this container the identity rules use (built once)."""
        return IdentityServices(
            self.settings, self.keyring, self.redis, self.breaker, self.engine, self.rooms
        )
