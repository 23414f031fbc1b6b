"""Python reads revocations by one rule (queue/line/revocations.py), on the room's clock.

A revocation's end is written in ms of the room's clock; a room whose clock is shifted (tests,
rehearsals) must be judged on that clock by identify and by the fail-open path, as its scripts
judge it, not on the web server's clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from anteroom.engine import Engine
from anteroom.identity import sessions as identity
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.line import revocations
from anteroom.queue.rooms.room_directory import RoomDirectory
from anteroom.service_container import Services
from helpers import open_room

pytestmark = pytest.mark.redis

HOUR = 3_600_000


def test_the_rule_counts_an_entry_while_its_end_is_ahead_and_a_jti_only_when_there_is_one() -> None:
    entries = {"v:v1": 2000, "j:s1": 3000, "j:": 9000}
    assert revocations.is_revoked(entries, "v1", "", 1999)
    assert not revocations.is_revoked(entries, "v1", "", 2000)
    assert revocations.is_revoked(entries, "v2", "s1", 2500)
    assert not revocations.is_revoked(entries, "v2", "", 2500)  # no jti: no j: entry counts
    assert revocations.room_now_ms(1000, 50, 0) == 1050
    assert revocations.room_now_ms(1000, 50, 7000) == 7050  # pinned: the server's time unused


def test_a_room_whose_clock_runs_behind_still_holds_a_revocation_the_server_clock_has_passed(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room_id = open_room(engine, env="shop", slug="drop")
    engine.shift_clock(room_id, -2 * HOUR)
    engine.revoke(room_id, vid="v1", life_ms=HOUR)  # ends an hour before the server's now
    assert revocations.revoked_in_rooms(redis_client, engine.keys, [room_id], "v1", "")
    engine.shift_clock(room_id, 2 * HOUR)
    assert not revocations.revoked_in_rooms(redis_client, engine.keys, [room_id], "v1", "")


def test_identify_judges_a_revoked_session_on_each_rooms_clock(services: Services) -> None:
    engine = services.engine
    open_room(engine, env="shop", slug="other")  # its clock unshifted, the entry not there
    room_id = open_room(engine, env="shop", slug="drop")
    engine.shift_clock(room_id, -2 * HOUR)
    engine.revoke(room_id, jti="s1", life_ms=HOUR)
    assert identity.is_revoked(services.identity, "shop", "s1", "v9")
    engine.shift_clock(room_id, 2 * HOUR)
    assert not identity.is_revoked(services.identity, "shop", "s1", "v9")


def test_the_directory_judges_revocations_on_the_rooms_clock_offline_too(
    engine: Engine, redis_client: redis.Redis, tmp_path: Path
) -> None:
    room_id = open_room(engine, env="shop", slug="drop", failMode="open")
    engine.shift_clock(room_id, -2 * HOUR)
    engine.revoke(room_id, vid="v1", life_ms=HOUR)
    path = tmp_path / "known-rooms.json"
    writer = RoomDirectory(redis_client, engine.keys, Breaker(), path)
    writer.refresh_once()
    assert writer.is_revoked(room_id, "", "v1")
    offline = RoomDirectory(None, engine.keys, Breaker(), path)  # Redis out of reach
    assert offline.is_revoked(room_id, "", "v1") and not offline.is_revoked(room_id, "", "v2")
    engine.shift_clock(room_id, 2 * HOUR)
    writer.refresh_once()
    assert not writer.is_revoked(room_id, "", "v1")
