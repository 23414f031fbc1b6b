"""The data's layout version: written on an empty store, taken as the current one for data from
before it existed, refused when newer than this code, upgraded once across instances when older."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from anteroom.config import Settings
from anteroom.ops import cli
from anteroom.queue.connection.redis_link import Client, connect
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.store import layout_version
from anteroom.store.layout_version import CURRENT, LayoutRefused
from anteroom.web.app_factory import close_app, create_app
from helpers import TEST_KEYS

KEYS = KeySpace("anteroom:")
STEP_RUNS = "anteroom:test:step-runs"


def test_an_empty_store_is_given_the_current_version(redis_client: redis.Redis) -> None:
    client = connect(url_of(redis_client))
    assert layout_version.ensure(client, KEYS) == CURRENT
    assert redis_client.get(KEYS.layout()) == str(CURRENT)
    assert redis_client.keys("*") == [KEYS.layout()]  # no lock left behind


def test_data_without_a_version_is_taken_as_version_1(redis_client: redis.Redis) -> None:
    redis_client.hset(KEYS.room("r1"), "name", "written before the version key existed")
    redis_client.set("other-app:layout", "7")  # another prefix's keys are not ours
    client = connect(url_of(redis_client))
    assert layout_version.ensure(client, KEYS) == 1 == CURRENT  # today's data: the current layout
    assert redis_client.get(KEYS.layout()) == "1"
    redis_client.delete(KEYS.layout())
    # With a (test-only) version 2, data without a version must be upgraded from 1.
    ran: list[int] = []
    found = layout_version.ensure(client, KEYS, current=2, steps={2: lambda c, k: ran.append(2)})
    assert (found, ran) == (1, [2])
    assert redis_client.get(KEYS.layout()) == "2"
    assert (
        layout_version.ensure(client, KEYS, current=2, steps={2: lambda c, k: ran.append(3)}) == 2
    )
    assert ran == [2]  # once upgraded, a later start has nothing to do


def test_a_newer_layout_is_refused_and_anteroom_serve_exits_2(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    redis_client.set(KEYS.layout(), CURRENT + 1)
    redis_client.hset(KEYS.room("r1"), "name", "kept")
    client = connect(url_of(redis_client))
    with pytest.raises(LayoutRefused):
        layout_version.ensure(client, KEYS)
    env = {
        **os.environ,
        "ANTEROOM_REDIS_URL": url_of(redis_client),
        "ANTEROOM_KEYS": TEST_KEYS,
        "ANTEROOM_DATA_DIR": str(tmp_path),
        "ANTEROOM_BIND": "127.0.0.1:1",  # never reached: it refuses before binding
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    env.pop("ANTEROOM_DEMO", None)
    done = subprocess.run(
        [sys.executable, "-m", "anteroom.ops.cli", "serve"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"layout version {CURRENT + 1}" in done.stderr
    assert f"understands up to version {CURRENT}" in done.stderr
    assert "Upgrade this instance" in done.stderr and "roll the other instances back" in done.stderr
    assert redis_client.get(KEYS.layout()) == str(CURRENT + 1)  # left as it was
    assert redis_client.hget(KEYS.room("r1"), "name") == "kept"


ROOMS = 500


def test_the_app_factory_checks_too(settings: Settings, redis_client: redis.Redis) -> None:
    close_app(create_app(settings))
    assert redis_client.get(KEYS.layout()) == str(CURRENT)
    redis_client.set(KEYS.layout(), CURRENT + 1)  # a newer instance wrote since
    with pytest.raises(LayoutRefused, match=f"layout version {CURRENT + 1}"):
        create_app(settings)


def count_run(client: Client, keys: KeySpace) -> None:
    """A test-only upgrade step to version 2: renames a field of every room (as a real step
    would rewrite a stored shape), and counts its runs in Redis."""
    client.incr(STEP_RUNS)
    for n in range(ROOMS):
        key = keys.room(f"r{n}")
        value = client.hget(key, "old")
        if value is not None:
            client.hset(key, "new", value)
            client.hdel(key, "old")


def start_and_check(url: str, barrier: Any, results: Any) -> None:
    """One instance's start: the check, then the version it leaves."""
    client = connect(url)
    barrier.wait()  # all four reach the check together
    layout_version.ensure(client, KEYS, current=2, steps={2: count_run}, wait_s=20)
    results.put(layout_version.read(client, KEYS))


def test_an_older_layout_is_upgraded_once_when_four_instances_start_at_once(
    redis_client: redis.Redis,
) -> None:
    redis_client.set(KEYS.layout(), 1)
    with redis_client.pipeline(transaction=False) as pipe:
        for n in range(ROOMS):
            pipe.hset(KEYS.room(f"r{n}"), "old", n)
        pipe.execute()
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    starts = [
        ctx.Process(target=start_and_check, args=(url_of(redis_client), barrier, results))
        for _ in range(4)
    ]
    for start in starts:
        start.start()
    found = [results.get(timeout=30) for _ in starts]
    for start in starts:
        start.join(timeout=10)
        assert start.exitcode == 0
    assert found == [2, 2, 2, 2]  # each went on only once the upgrade was done
    assert redis_client.get(STEP_RUNS) == "1"
    assert redis_client.get(KEYS.layout()) == "2"
    assert not redis_client.exists(KEYS.layout_lock())
    assert redis_client.hgetall(KEYS.room("r499")) == {"new": "499"}
    # Started again: nothing left to do.
    assert layout_version.ensure(connect(url_of(redis_client)), KEYS, 2, {2: count_run}) == 2
    assert redis_client.get(STEP_RUNS) == "1"


def test_anteroom_version_prints_the_package_versions(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"anteroom {metadata.version('anteroom')} ")
    assert f"anteroom-sdk {metadata.version('anteroom-sdk')}" in out


def url_of(client: redis.Redis) -> str:
    kw = client.connection_pool.connection_kwargs
    return f"redis://{kw['host']}:{kw['port']}/{kw.get('db', 0)}"


def test_on_a_cluster_data_on_any_shard_is_found(redis_cluster: Any) -> None:
    client = connect(str(redis_cluster.url))
    fresh, used = KeySpace(f"lv{os.getpid()}a:"), KeySpace(f"lv{os.getpid()}b:")
    assert layout_version.ensure(client, fresh) == CURRENT  # nothing under that prefix
    # One room's hash, on another shard than the one the version key lands on.
    shard = client.get_node_from_key(used.layout())
    room = next(
        f"r{n}" for n in range(100) if client.get_node_from_key(used.room(f"r{n}")) != shard
    )
    client.hset(used.room(room), "name", "written before the version key existed")
    ran: list[int] = []
    assert layout_version.ensure(client, used, 2, {2: lambda c, k: ran.append(2)}) == 1
    assert ran == [2] and layout_version.read(client, used) == 2
