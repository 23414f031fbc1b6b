"""Shared fixtures: one real redis-server per test session, flushed before each test; the app
over the Flask test client; live servers (``live_server``), whose logs show when a test fails.

The engine suites (``CLUSTER_SUITES``) run twice: on the embedded server and on a local Redis
Cluster of three primaries and three replicas (``redis_cluster``, started once per session from
Debian's redis-server). Their ``redis_client``, ``redis_url`` and ``engine`` follow the run.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from redis.cluster import ClusterNode

from anteroom.config import Settings
from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.cluster_client import ClusterClient
from anteroom.queue.connection.redis_urls import parse_target
from anteroom.queue.draw import outbound_fetch
from anteroom.service_container import Services
from anteroom.web.app_factory import close_app, create_app
from dns_server import DnsServer, crawler_records, dnsmasq
from helpers import TEST_KEYS, free_port
from live_server import LOG_LINES, LiveServer, LiveServers, servers_since
from redis_cluster import LocalCluster, local_cluster

# Engine suites run on both backends. Not test_engine_writes: it reads the embedded server's
# append-only file, and the cluster's nodes keep none.
CLUSTER_SUITES = frozenset(
    {
        "test_engine_basics",
        "test_engine_concurrency",
        "test_engine_fail_open_checkin",
        "test_engine_far_poll",
        "test_engine_lifecycle",
        "test_engine_model",
        "test_engine_order",
        "test_engine_rate",
        "test_parking",
        # a region's Redis may be a Cluster: its lease and summary scripts hold there too
        "test_region_gate",
    }
)


# Tests that read one server's INFO (commandstats, the append-only file): a cluster spreads them.
EMBEDDED_ONLY = frozenset(
    {
        "test_a_ticket_without_an_order_key_takes_the_full_poll_in_one_round_trip",
        "test_the_snapshot_read_writes_nothing",
        "test_a_due_booking_of_a_deep_spot_is_written_by_its_one_poll",
    }
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run the engine suites' tests once per backend: ``[embedded]`` and ``[cluster]``."""
    if "redis_target" in metafunc.fixturenames and metafunc.module.__name__ in CLUSTER_SUITES:
        both = metafunc.function.__name__ not in EMBEDDED_ONLY
        metafunc.parametrize(
            "redis_target", ["embedded", "cluster"] if both else ["embedded"], indirect=True
        )


class ClusterTestClient(ClusterClient):
    """The service's cluster client, whose KEYS asks every primary (as tests list keys)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.command_flags["KEYS"] = self.PRIMARIES


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), port=free_port()).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    """A Redis Cluster of 3 primaries + 3 replicas for the session (tests/redis_cluster.py)."""
    with local_cluster() as cluster:
        yield cluster


@pytest.fixture
def redis_target(request: pytest.FixtureRequest) -> str:
    """ "embedded" (the default) or "cluster", for the suites in ``CLUSTER_SUITES``."""
    return str(getattr(request, "param", "embedded"))


@pytest.fixture
def redis_url(redis_target: str, request: pytest.FixtureRequest) -> str:
    """ANTEROOM_REDIS_URL of this test's backend."""
    if redis_target == "cluster":
        return str(request.getfixturevalue("redis_cluster").url)
    return str(request.getfixturevalue("redis_server").url)


@pytest.fixture
def redis_client(redis_target: str, redis_url: str) -> Iterator[redis.Redis]:
    # A generous timeout on the cluster: long scripts on a loaded machine are not an outage.
    if redis_target == "cluster":
        seeds = parse_target(redis_url).seeds
        client = ClusterTestClient(
            startup_nodes=[ClusterNode(host, port) for host, port in seeds],
            decode_responses=True,
            socket_timeout=30,
        )
    else:
        client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushall()
    yield client  # type: ignore[misc]
    client.close()


@pytest.fixture(autouse=True)
def strict_outbound() -> Iterator[None]:
    """Each test starts with the process's outbound policy strict (an app built in a test sets
    its own), and leaves it so."""
    outbound_fetch.set_policy(outbound_fetch.Outbound())
    yield
    outbound_fetch.set_policy(outbound_fetch.Outbound())


@pytest.fixture
def dev_outbound() -> None:
    """This test process's outbound fetches (a stand-in beacon on 127.0.0.1) may reach this
    machine, as ``ANTEROOM_OUTBOUND_ALLOW_LOOPBACK`` lets a development server."""
    outbound_fetch.set_policy(outbound_fetch.Outbound(allow_loopback=True))


@pytest.fixture
def engine(redis_client: redis.Redis) -> Engine:
    return Engine(redis_client)


@pytest.fixture
def settings(redis_server: EmbeddedRedis, tmp_path: Path) -> Settings:
    # Each app's rooms snapshot goes to the test's own folder, not ./var of the checkout.
    return Settings(
        redis_url=redis_server.url, keys=TEST_KEYS, pow_difficulty=4, data_dir=str(tmp_path)
    )


@pytest.fixture
def app(settings: Settings, redis_client: redis.Redis) -> Iterator[Flask]:
    app = create_app(settings, {"TESTING": True})
    yield app
    # Closed here, not by the garbage collector: the app is in reference cycles, and a cycle's
    # finalizers may close a socket before its client, which warns (an error in this suite).
    close_app(app)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def services(app: Flask) -> Services:
    return app.extensions["anteroom"]  # type: ignore[no-any-return]


def _live_servers(
    redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServers]:
    started: list[LiveServer] = []

    def start(redis_url: str | None = None, data_dir: Path | None = None, **env: str) -> LiveServer:
        server = LiveServer(
            redis_url or redis_server.url, data_dir or tmp_path_factory.mktemp("live"), **env
        )
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def live_server(
    redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServers]:
    """``live_server(**env)`` starts ``anteroom serve``, ready; all stop after the test."""
    yield from _live_servers(redis_server, tmp_path_factory)


@pytest.fixture(scope="module")
def module_live_server(
    redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServers]:
    """``live_server`` for servers a whole module shares; all stop after its last test."""
    yield from _live_servers(redis_server, tmp_path_factory)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing test shows the logs of the servers (live or other) that ran during it."""
    report = yield
    if report.failed:
        for server in servers_since(call.start):
            report.sections.append(
                (f"log of {server.name} on {server.url}", server.output(LOG_LINES))
            )
    return report


@pytest.fixture(scope="session")
def dns_server() -> Iterator[DnsServer]:
    """Debian's dnsmasq on a free port with the crawler records of tests/dns_server.py."""
    with dnsmasq(crawler_records()) as server:
        yield server
