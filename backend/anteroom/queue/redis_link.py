"""Redis connections and the package's own storage exceptions.

The one place that decides what ``ANTEROOM_REDIS_URL`` (and ``ANTEROOM_REDIS_REPLICAS``) name and
builds the clients for them: a single server (``redis://``, ``rediss://``, ``unix://``), or a
Redis Cluster (``redis+cluster://host:port[,host:port…]``, seeds) through redis-py's
``RedisCluster``. Every caller (engine, limits, key store, audit log, challenge spending, breaker)
takes its client from here. :class:`Links` pairs the client that writes (the primary, or the
cluster's primaries) with the one the read-only poll runs on (a replica when there are any).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar
from urllib.parse import unquote, urlsplit

import redis
import redis.exceptions as rex
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, LoadBalancingStrategy, RedisCluster
from redis.commands.core import Script
from redis.connection import Encoder
from redis.crc import key_slot
from redis.driver_info import DriverInfo
from redis.retry import Retry

T = TypeVar("T")


class StorageError(Exception):
    """Redis failed in a way the caller should report."""


class StorageUnavailable(StorageError):
    """Redis could not be reached (connection refused, timeout, …)."""


class StorageBusy(StorageError):
    """Redis refused a write because it is out of memory."""


@contextmanager
def storage_errors() -> Iterator[None]:
    """Translate redis-py errors into :class:`StorageError` subclasses."""
    try:
        yield
    except (rex.ConnectionError, rex.TimeoutError) as exc:
        raise StorageUnavailable(str(exc)) from exc
    except (rex.ClusterDownError, rex.TryAgainError, rex.SlotNotCoveredError) as exc:
        # A shard between its primary's death and its replica's promotion: an outage, briefly.
        raise StorageUnavailable(str(exc)) from exc
    except rex.OutOfMemoryError as exc:
        raise StorageBusy(str(exc)) from exc
    except rex.ResponseError as exc:
        # Also raised from inside a script: its first write fails, so nothing was half-written.
        if str(exc).startswith("OOM") or "-OOM " in str(exc):
            raise StorageBusy(str(exc)) from exc
        raise StorageError(str(exc)) from exc
    except rex.RedisClusterException as exc:
        if isinstance(exc.__cause__, rex.ConnectionError | rex.TimeoutError):
            # redis-py re-read the slot map after a failure and no node answered: the whole
            # cluster is out of reach (it says so in its own exception, not a ConnectionError).
            raise StorageUnavailable(str(exc)) from ClusterUnreachable(str(exc))
        raise StorageError(str(exc)) from exc
    except rex.RedisError as exc:
        raise StorageError(str(exc)) from exc


def call(fn: Callable[[], T]) -> T:
    """Run ``fn`` with redis-py errors translated."""
    with storage_errors():
        return fn()


class Breaker:
    """Circuit breaker: after repeated transport failures, skip Redis for ``pause`` seconds.

    An outage then costs each request nothing instead of a connect timeout; the first call
    after the pause tries Redis again. It opens on ``threshold`` failures within ``window``
    seconds, not on one: a single reset connection (a load balancer, a Redis restart of one
    client) is not an outage, and the clients already retry it once on a fresh connection
    (:func:`connect`). On a cluster (``shard_of``), failures pause only the shard that failed
    (the node redis-py names in its error, else the call's key's): rooms on the other shards
    carry on while one shard's replica is being promoted; only a cluster that cannot be reached
    at all pauses everything. A call that names no key is skipped only then.

    Each user keeps its own: the request path has one, and each background thread another, so
    a failure only a background thread saw never pauses a visitor's request.
    """

    def __init__(
        self,
        pause: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
        shard_of: Callable[[str], str | None] | None = None,
        threshold: int = 3,
        window: float = 5.0,
    ) -> None:
        self.pause = pause
        self.clock = clock
        self.shard_of = shard_of
        self.threshold = threshold
        self.window = window
        self.open_until = 0.0  # every call skipped until then
        self.shards_open_until: dict[str, float] = {}  # shard -> its calls skipped until then
        self.failures: dict[str, list[float]] = {}  # "" (everything) or shard -> recent failures
        self.lock = threading.Lock()

    def call(self, fn: Callable[[], T], key: str | None = None) -> T:
        """Run ``fn`` unless the breaker is open (for ``key``'s shard); translate errors; count a
        transport error, opening after ``threshold`` of them within ``window``."""
        shard = self.shard_of(key) if self.shard_of is not None and key is not None else None
        now = self.clock()
        if now < self.open_until or (shard and now < self.shards_open_until.get(shard, 0.0)):
            raise StorageUnavailable("Redis skipped: circuit breaker open after failures")
        try:
            with storage_errors():
                return fn()
        except StorageUnavailable as exc:
            everything = self.shard_of is None or isinstance(exc.__cause__, ClusterUnreachable)
            # The node the error names first: a replica that failed a read pauses no primary.
            failed = None if everything else self._failed_node(exc) or shard
            if everything:
                self._count("")
            elif failed:
                self._count(failed)
            # Else a call over several shards (a pipeline) failed on one that redis-py does
            # not name: the keyed calls to that shard will pause it; the others go on.
            raise

    def _count(self, scope: str) -> None:
        """One failure in ``scope`` ("" for everything); open it once there are enough."""
        with self.lock:
            now = self.clock()
            recent = [t for t in self.failures.get(scope, ()) if now - t < self.window]
            recent.append(now)
            if len(recent) < self.threshold:
                self.failures[scope] = recent
                return
            self.failures.pop(scope, None)
            if scope:
                self.shards_open_until[scope] = now + self.pause
            else:
                self.open_until = now + self.pause

    def _failed_node(self, exc: StorageUnavailable) -> str | None:
        """On a cluster, the node a failed call could not reach ("host:port"), as redis-py
        names it in its slot map; None when it cannot be told (then everything pauses)."""
        if self.shard_of is None:
            return None
        where = getattr(exc.__cause__, "connection", None)
        name = getattr(where, "name", None)  # a ClusterNode
        if name is None and getattr(where, "host", None) and getattr(where, "port", None):
            name = f"{where.host}:{where.port}"  # type: ignore[union-attr]
        return str(name) if name else None

    @property
    def is_open(self) -> bool:
        """True while every call is being skipped."""
        return self.clock() < self.open_until

    def twin(self, pause: float | None = None) -> Breaker:
        """A breaker like this one (``pause`` apart) with its own failure count, for a
        background thread."""
        pause = self.pause if pause is None else pause
        return Breaker(pause, self.clock, self.shard_of, self.threshold, self.window)


def _fresh(connection: redis.connection.AbstractConnection) -> None:
    # A connection just made is known to answer: its first command is not preceded by a
    # health-check PING (a round trip of its own, paid by whichever request opened it).
    if connection.health_check_interval:
        connection.next_health_check = time.monotonic() + connection.health_check_interval


class CountingConnection(redis.Connection):
    """A connection that counts its connect attempts (the breaker's tests read the count)."""

    attempts = 0

    def connect(self) -> None:  # type: ignore[override]
        if self._sock is None:
            CountingConnection.attempts += 1
            super().connect()
            _fresh(self)
        else:
            super().connect()


class CountingUnixConnection(redis.UnixDomainSocketConnection):
    """Unix-socket twin of :class:`CountingConnection`."""

    def connect(self) -> None:  # type: ignore[override]
        if self._sock is None:
            CountingConnection.attempts += 1
            super().connect()
            _fresh(self)
        else:
            super().connect()


Client: TypeAlias = "redis.Redis | RedisCluster | LazyCluster"

SINGLE_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEME = "redis+cluster"
URL_FORMS = (
    "redis://host:port/db, rediss://host:port/db, unix:///path/redis.sock, "
    "or redis+cluster://host:port,host:port (cluster seeds)"
)


@dataclass(frozen=True)
class RedisTarget:
    """What the settings name: one server (``url``) or a cluster (``seeds``); read replicas."""

    url: str
    seeds: tuple[tuple[str, int], ...] = ()  # non-empty: a Redis Cluster
    username: str | None = None
    password: str | None = None
    replicas: tuple[str, ...] = ()

    @property
    def is_cluster(self) -> bool:
        """True for a ``redis+cluster://`` URL."""
        return bool(self.seeds)


def _host_port(text: str, url_name: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1]:7000
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{url_name}: {text!r} is not host:port (in {URL_FORMS})")
    return host, int(port)


def _single(url: str, url_name: str) -> str:
    """``url`` when redis-py can use it as one server; else ValueError naming the setting."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is no number or out of range
    except ValueError:
        raise ValueError(f"{url_name}: malformed URL (expected {URL_FORMS})") from None
    if parts.scheme not in SINGLE_SCHEMES:
        raise ValueError(f"{url_name}: unknown scheme {parts.scheme!r} (expected {URL_FORMS})")
    if parts.scheme == "unix" and not parts.path:
        raise ValueError(f"{url_name}: unix:// needs a socket path, like unix:///run/redis.sock")
    if parts.scheme != "unix" and port is None and not parts.hostname and parts.netloc:
        raise ValueError(f"{url_name}: no host in the URL (expected {URL_FORMS})")
    db = parts.path.strip("/")
    if parts.scheme != "unix" and db and not db.isdigit():
        raise ValueError(f"{url_name}: the database must be a number, like redis://host:6379/0")
    return url


def parse_target(url: str, replicas: str = "") -> RedisTarget:
    """Read ``ANTEROOM_REDIS_URL`` and ``ANTEROOM_REDIS_REPLICAS``; ValueError naming the one
    that is malformed (checked at start-up, so a typo never surfaces as a request's error)."""
    url = url.strip()
    replica_urls = tuple(u.strip() for u in replicas.split(",") if u.strip())
    if url.startswith(CLUSTER_SCHEME + "://"):
        if replica_urls:
            raise ValueError(
                "ANTEROOM_REDIS_REPLICAS is for a single primary: a cluster's replicas are "
                "found through the cluster itself"
            )
        rest = url[len(CLUSTER_SCHEME) + 3 :].split("?", 1)[0].rstrip("/")
        auth, _, hosts = rest.rpartition("@")
        user, _, password = auth.partition(":")
        seeds = tuple(
            _host_port(h.strip(), "ANTEROOM_REDIS_URL") for h in hosts.split(",") if h.strip()
        )
        if not seeds:
            raise ValueError(f"ANTEROOM_REDIS_URL: a cluster URL needs seeds ({URL_FORMS})")
        return RedisTarget(
            url, seeds, unquote(user) or None, unquote(password) if auth else None
        )  # fmt: skip
    _single(url, "ANTEROOM_REDIS_URL")
    for replica in replica_urls:
        _single(replica, "ANTEROOM_REDIS_REPLICAS")
    return RedisTarget(url, replicas=replica_urls)


class ClusterClient(RedisCluster):
    """redis-py's ``RedisCluster`` with the two things Anteroom's read-only poll needs.

    - ``EVALSHA_RO`` / ``EVAL_RO`` find their slot from their declared keys, as redis-py does for
      ``EVALSHA``: otherwise each call first asks a node ``COMMAND GETKEYS`` (they have
      "movable keys"), one extra round trip per poll.
    - ``SCRIPT LOAD`` / ``SCRIPT EXISTS`` go to every node, replicas included: scripts are not
      replicated, and a replica that runs ``EVALSHA_RO`` must know the script.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for command in ("SCRIPT LOAD", "SCRIPT EXISTS"):
            self.command_flags[command] = self.ALL_NODES

    def determine_slot(self, *args: Any) -> int | None:
        """The slot a command goes to; read-only scripts by their declared keys."""
        if args and str(args[0]).upper() in ("EVAL_RO", "EVALSHA_RO"):
            return super().determine_slot("EVALSHA", *args[1:])  # type: ignore[no-any-return]
        return super().determine_slot(*args)  # type: ignore[no-any-return]


class ClusterUnreachable(rex.ConnectionError):
    """No seed of the cluster answered: nothing can be asked of any shard."""


class LazyCluster:
    """A :class:`ClusterClient` built at its first command, not at start-up.

    redis-py's ``RedisCluster`` asks a seed for the slot map as it is built, so an eager one
    would stop a worker from starting while the cluster is unreachable; a worker must start
    anyway and answer from what it knows (SPEC "Outages"). Until a build succeeds, each command
    tries again and fails as a connection error, which the breaker counts like any other.
    """

    def __init__(self, build: Callable[[], ClusterClient]) -> None:
        self._build = build
        self._client: ClusterClient | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> ClusterClient | None:
        """The cluster client if it was built, without building it."""
        return self._client

    def client(self) -> ClusterClient:
        """The cluster client, built now if it was not yet."""
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    try:
                        self._client = self._build()
                    except rex.RedisClusterException as exc:
                        raise ClusterUnreachable(f"Redis Cluster unreachable: {exc}") from exc
                client = self._client
        return client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client(), name)

    def get_encoder(self) -> Encoder:
        """The encoder scripts hash their source with (no connection needed)."""
        return Encoder("utf-8", "strict", decode_responses=True)

    def register_script(self, script: str) -> Script:
        """A script object that runs on this cluster once it is reached."""
        return Script(self, script)  # type: ignore[arg-type]

    def close(self) -> None:
        """Close the client if it was built."""
        if self._client is not None:
            self._client.close()


@dataclass(frozen=True)
class Links:
    """The clients of one process: ``writer`` for everything, ``reader`` for read-only scripts
    (a replica when there are any; else the writer itself)."""

    target: RedisTarget
    writer: Client
    reader: Client

    def shard_of(self, key: str) -> str | None:
        """The cluster node serving ``key`` now, from the client's slot map (no round trip);
        None for a single server, or before the cluster client has reached the cluster."""
        writer = self.writer
        if not isinstance(writer, LazyCluster) or writer.built is None:
            return None
        owners = writer.built.nodes_manager.slots_cache.get(key_slot(key.encode()))
        return str(owners[0].name) if owners else None

    def close(self) -> None:
        """Close both clients."""
        self.writer.close()
        if self.reader is not self.writer:
            self.reader.close()


def _options(timeout: float) -> dict[str, Any]:
    return {
        "decode_responses": True,
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
    }


def _cluster(target: RedisTarget, timeout: float, replicas: bool) -> LazyCluster:
    def build() -> ClusterClient:
        return ClusterClient(
            startup_nodes=[ClusterNode(host, port) for host, port in target.seeds],
            username=target.username,
            password=target.password,
            # A replica's copy is at most a replication lag behind: fine for a position, and
            # the full poll (on the primary) answers whatever must be exact.
            load_balancing_strategy=(
                LoadBalancingStrategy.ROUND_ROBIN_REPLICAS if replicas else None
            ),
            **_options(timeout),
        )

    return LazyCluster(build)


def _single_client(url: str, timeout: float) -> redis.Redis:
    # A command that fails on a connection error (a reset, a connection Redis closed) is sent
    # once more on a fresh connection before anyone counts it; a timeout is not retried (a
    # stalled Redis would cost twice the timeout).
    once = Retry(NoBackoff(), 1, supported_errors=(rex.ConnectionError,))
    # No CLIENT SETINFO on connecting: two round trips a connection (and a health-check PING
    # before them), paid by the request that opened it, for a label in CLIENT LIST.
    unnamed = DriverInfo(name=None, lib_version=None)
    client = redis.Redis.from_url(
        url, health_check_interval=30, retry=once, driver_info=unnamed, **_options(timeout)
    )
    pool = client.connection_pool
    if pool.connection_class is redis.Connection:
        pool.connection_class = CountingConnection
    elif pool.connection_class is redis.UnixDomainSocketConnection:
        pool.connection_class = CountingUnixConnection
    return client


def connect(url: str, timeout: float = 2.0) -> Client:
    """The writing client for ``url``: one server, or a cluster for ``redis+cluster://``."""
    target = parse_target(url)
    if target.is_cluster:
        return _cluster(target, timeout, replicas=False)
    return _single_client(target.url, timeout)


def connect_links(url: str, replicas: str = "", timeout: float = 2.0) -> Links:
    """The writer and the reader for the settings' ``url`` and ``replicas``.

    With ``ANTEROOM_REDIS_REPLICAS``, each process reads from one replica picked at random, so
    the workers and instances spread over them. On a cluster, a second cluster client routes
    read-only commands to the replicas of each slot.
    """
    target = parse_target(url, replicas)
    writer = connect(url, timeout)
    if target.is_cluster:
        reader: Client = _cluster(target, timeout, replicas=True)
    elif target.replicas:
        reader = _single_client(random.choice(target.replicas), timeout)
    else:
        reader = writer
    return Links(target, writer, reader)


def is_cluster(client: Any) -> bool:
    """True for a cluster client (multi-key commands must stay within one hash slot)."""
    return isinstance(client, RedisCluster | LazyCluster)


def limits_storage_uri(url: str) -> str:
    """The `limits` library's spelling of an ``ANTEROOM_REDIS_URL`` (it has its own cluster
    storage under the same ``redis+cluster://`` scheme)."""
    target = parse_target(url)
    if target.is_cluster:
        return target.url.split("?", 1)[0]
    if url.startswith("unix://"):
        return "redis+unix://" + url[len("unix://") :].split("?", 1)[0]
    return url
