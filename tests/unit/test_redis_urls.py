"""ANTEROOM_REDIS_URL and ANTEROOM_REDIS_REPLICAS: what each form names, and a clear error at
start-up for a malformed one (never a request's 500)."""

from __future__ import annotations

import pytest

from anteroom.config import Settings
from anteroom.ops import cli
from anteroom.queue.connection.cluster_client import is_cluster
from anteroom.queue.connection.redis_link import connect_links
from anteroom.queue.connection.redis_urls import limits_storage_uri, parse_target
from anteroom.queue.connection.storage_errors import StorageUnavailable, storage_errors
from helpers import free_port


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "redis://:secret@redis.internal:6380/2",
        "rediss://cache.example.com:6380/0",
        "unix:///run/redis/redis.sock?db=0",
        "redis://localhost",
    ],
)
def test_a_single_server_url_is_one_server(url: str) -> None:
    target = parse_target(url)
    assert not target.is_cluster
    assert target.url == url
    assert target.replicas == ()


def test_a_cluster_url_names_its_seeds_and_credentials() -> None:
    target = parse_target("redis+cluster://app:s%3Acret@10.0.0.1:7000, 10.0.0.2:7001,[::1]:7002")
    assert target.is_cluster
    assert target.seeds == (("10.0.0.1", 7000), ("10.0.0.2", 7001), ("::1", 7002))
    assert (target.username, target.password) == ("app", "s:cret")
    assert parse_target("redis+cluster://h:7000").password is None


def test_replicas_of_a_single_primary_are_listed() -> None:
    target = parse_target("redis://primary:6379/0", " redis://r1:6379/0 ,redis://r2:6379/0,")
    assert target.replicas == ("redis://r1:6379/0", "redis://r2:6379/0")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://redis:6379", "unknown scheme 'http'"),
        ("redis://redis:63x9/0", "malformed URL"),
        ("redis://redis:6379/zero", "the database must be a number"),
        ("unix://", "needs a socket path"),
        ("redis+cluster://", "needs seeds"),
        ("redis+cluster://10.0.0.1", "'10.0.0.1' is not host:port"),
        ("redis+cluster://10.0.0.1:7000,10.0.0.2:99999", "'10.0.0.2:99999' is not host:port"),
        ("redis+cluster://:7000", "':7000' is not host:port"),
    ],
)
def test_a_malformed_url_is_refused_naming_the_setting(url: str, says: str) -> None:
    with pytest.raises(ValueError, match="ANTEROOM_REDIS_URL") as refused:
        parse_target(url)
    assert says in str(refused.value)


def test_a_malformed_replica_or_replicas_of_a_cluster_are_refused() -> None:
    with pytest.raises(ValueError, match="ANTEROOM_REDIS_REPLICAS: unknown scheme 'tcp'"):
        parse_target("redis://primary:6379/0", "redis://r1:6379/0,tcp://r2:6379")
    with pytest.raises(ValueError, match="ANTEROOM_REDIS_REPLICAS is for a single primary"):
        parse_target("redis+cluster://h:7000", "redis://r1:6379/0")


def test_settings_from_the_environment_check_the_urls_at_start_up() -> None:
    env = {"ANTEROOM_REDIS_URL": "redis+cluster://h:7000,h:7001"}
    assert Settings.from_env(env).redis_url == "redis+cluster://h:7000,h:7001"
    replicas = {"ANTEROOM_REDIS_URL": "redis://p:6379/0", "ANTEROOM_REDIS_REPLICAS": "redis://r:1"}
    assert Settings.from_env(replicas).redis_replicas == "redis://r:1"
    with pytest.raises(ValueError, match="ANTEROOM_REDIS_URL: 'h' is not host:port"):
        Settings.from_env({"ANTEROOM_REDIS_URL": "redis+cluster://h"})


def test_the_command_line_stops_with_the_reason_for_a_malformed_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTEROOM_REDIS_URL", "redis+cluster://10.0.0.1:7000,10.0.0.2")
    assert cli.main(["serve"]) == 2
    assert "ANTEROOM_REDIS_URL: '10.0.0.2' is not host:port" in capsys.readouterr().err


def test_the_limits_storage_gets_its_own_spelling_of_each_form() -> None:
    assert limits_storage_uri("redis://h:6379/0") == "redis://h:6379/0"
    assert limits_storage_uri("unix:///run/r.sock?db=0") == "redis+unix:///run/r.sock"
    assert limits_storage_uri("redis+cluster://a:1,b:2") == "redis+cluster://a:1,b:2"


def test_the_reader_is_a_replica_when_there_are_any_else_the_writer() -> None:
    alone = connect_links("redis://127.0.0.1:6379/0")
    assert alone.reader is alone.writer
    both = connect_links("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6390/0")
    assert both.reader is not both.writer
    assert both.reader.connection_pool.connection_kwargs["port"] == 6390  # type: ignore[union-attr]
    assert both.writer.connection_pool.connection_kwargs["port"] == 6379  # type: ignore[union-attr]
    alone.close()
    both.close()


def test_a_cluster_client_connects_at_its_first_command_not_at_start_up() -> None:
    # A worker must start while the cluster is unreachable (docs/deploying.md, "When Redis fails"):
    # building the clients touches nothing, and a command fails as an outage the breaker
    # understands.
    nobody = free_port()
    links = connect_links(f"redis+cluster://127.0.0.1:{nobody}", timeout=0.5)
    assert links.reader is not links.writer
    assert is_cluster(links.writer)
    with pytest.raises(StorageUnavailable, match="Redis Cluster unreachable"), storage_errors():
        links.writer.get("anything")
    links.close()
