"""The rooms directory: one refresher per process (forks too), Redis errors survived, snapshots."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.rooms.room_directory import SNAPSHOT_MAX_AGE_SEC, RoomDirectory
from anteroom.store.keystore import KeyStore
from helpers import free_port, open_room

pytestmark = pytest.mark.redis


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def refreshers() -> int:
    return sum(t.name == "anteroom-rooms" and t.is_alive() for t in threading.enumerate())


@pytest.fixture
def directory(redis_server: EmbeddedRedis, redis_client: redis.Redis) -> Iterator[RoomDirectory]:
    client = connect(redis_server.url)
    d = RoomDirectory(client, Engine(redis_client).keys, Breaker(), None, 60)
    yield d
    d.stop(wait=5)
    client.close()


def test_one_refresher_per_process_and_a_new_one_after_a_fork(
    directory: RoomDirectory, engine: Engine
) -> None:
    open_room(engine, env="shop", slug="drop")
    before = refreshers()
    callers = [threading.Thread(target=directory.ensure_running) for _ in range(8)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    directory.ensure_running()
    assert refreshers() == before + 1
    assert directory.wait_for_rounds(1, timeout=10)
    assert directory.room_by_slug("shop", "drop")

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fork keeps no thread, so the first caller starts one
        ok = False
        try:
            alive_after_fork = refreshers()
            directory.ensure_running()
            directory.ensure_running()
            ok = alive_after_fork == 0 and refreshers() == 1
            ok = ok and directory.wait_for_rounds(directory.rounds + 1, timeout=10)
        finally:
            os.write(write_end, b"1" if ok else b"0")
            os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 1) == b"1"
    os.waitpid(pid, 0)
    os.close(read_end)


def test_a_change_made_anywhere_reaches_the_directory_long_before_its_next_round(
    directory: RoomDirectory, engine: Engine
) -> None:
    # The directory's rounds are a minute apart here: only the change counter can bring the
    # change (any other worker's management call, here the engine's) within seconds.
    room = open_room(engine, env="shop", slug="notice")
    directory.ensure_running()
    assert directory.wait_for_rounds(1, timeout=10)
    rounds = directory.rounds
    engine.update_room(room, {"notice": {"en": "Sizes S and M are sold out."}})
    assert directory.wait_for_rounds(rounds + 1, timeout=10)
    assert directory.room_by_id(room)["notice"] == {"en": "Sizes S and M are sold out."}
    rounds = directory.rounds
    engine.pause(room)
    assert directory.wait_for_rounds(rounds + 1, timeout=10)
    assert directory.room_by_id(room)["status"] == "paused"
    # Nothing changed: no round before the interval.
    rounds = directory.rounds
    assert not directory.wait_for_rounds(rounds + 1, timeout=1)


def test_the_refresher_survives_redis_errors(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis", port=free_port()).start()
    try:
        client = connect(server.url)
        engine = Engine(client)
        open_room(engine, env="shop", slug="before")
        clock = FakeClock()
        d = RoomDirectory(client, engine.keys, Breaker(clock=clock), None, interval=0.01)
        d.ensure_running()
        assert d.wait_for_rounds(1, timeout=10)
        server.stop()
        assert d.wait_for_rounds(1, timeout=10, failed=True)
        assert d.room_by_slug("shop", "before")  # what was read stays known
        server.start()
        clock.now += 3.1  # the breaker's pause is over
        open_room(engine, env="shop", slug="after")
        rounds = d.rounds
        assert d.wait_for_rounds(rounds + 2, timeout=10)
        assert d.room_by_slug("shop", "after") and d.room_by_slug("shop", "before")
        d.stop(wait=5)
        client.close()
    finally:
        server.stop()


def test_snapshots_load_unless_too_old_or_unreadable(
    redis_server: EmbeddedRedis, redis_client: redis.Redis, engine: Engine, tmp_path: Path
) -> None:
    room_id = open_room(engine, env="shop", slug="drop", failMode="open")
    public_key = KeyStore(redis_client, engine.keys).create("shop")[0].public_key
    engine.revoke(room_id, vid="v1", life_ms=3_600_000)
    path = tmp_path / "data" / "known-rooms.json"
    writer = RoomDirectory(redis_client, engine.keys, Breaker(), path)
    writer.refresh_once()
    assert oct(path.stat().st_mode & 0o777) == "0o600"

    def reader(clock: float | None = None) -> RoomDirectory:
        now = time.time() if clock is None else clock
        return RoomDirectory(None, engine.keys, Breaker(), path, clock=lambda: now)

    loaded = reader()
    room = loaded.room_by_slug("shop", "drop")
    assert room and room["failMode"] == "open" and loaded.room_by_id(room_id) == room
    assert loaded.environment_of(public_key) == "shop"
    assert loaded.is_revoked(room_id, "", "v1") and not loaded.is_revoked(room_id, "", "v2")
    assert reader(time.time() + SNAPSHOT_MAX_AGE_SEC + 60).room_by_id(room_id) is None
    path.write_text(json.dumps({"v": 1, "rooms": 7}))
    assert reader().room_by_id(room_id) is None  # a broken snapshot is ignored, not fatal
