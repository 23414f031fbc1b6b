"""The service in a region (ANTEROOM_REGION, ANTEROOM_ETCD_ENDPOINTS): a live server reports its
room to etcd, takes its leases as coordinator, names its region in tickets, and its admissions
verify at any edge holding the shared keyring."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from anteroom.config import Settings
from anteroom.engine import Engine
from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.queue.regions.region_cell import write_spec
from anteroom.queue.rooms.room_hash import stored
from anteroom.sdk import tokens
from anteroom.store.keystore import KeyStore
from anteroom.verify import verify_admission
from etcd_cluster import EtcdCluster
from helpers import TEST_KEYS, make_room
from visitor_client import Visitor


@pytest.fixture
def etcd_member(tmp_path: Path) -> Iterator[EtcdCluster]:
    with EtcdCluster(tmp_path / "etcd", 1) as cluster:
        yield cluster


def test_a_region_needs_etcd_and_a_plain_name() -> None:
    with pytest.raises(ValueError, match="ANTEROOM_ETCD_ENDPOINTS"):
        Settings.from_env({"ANTEROOM_REGION": "eu"})
    with pytest.raises(ValueError, match="ANTEROOM_REGION"):
        Settings.from_env({"ANTEROOM_REGION": "EU west", "ANTEROOM_ETCD_ENDPOINTS": "http://x:1"})


def test_a_live_server_in_a_region_reports_leads_and_admits_under_its_lease(
    live_server, redis_client: redis.Redis, engine: Engine, etcd_member: EtcdCluster
) -> None:
    key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    room = make_room(engine, slug="drop", ratePerMinute=600, redirectUrl="https://shop.example/")
    engine.open(room)
    etcd = Etcd(etcd_member.endpoints)
    write_spec(etcd, "drop", {"eu": (room, 0.0)})
    server = live_server(ANTEROOM_REGION="eu", ANTEROOM_ETCD_ENDPOINTS=etcd_member.endpoints[0])

    deadline = time.monotonic() + 15
    while etcd.get("/anteroom/rooms/drop/lease/eu") is None:  # reported, led, leased
        assert time.monotonic() < deadline, "no lease within 15 s"
        time.sleep(0.1)
    assert etcd.get("/anteroom/rooms/drop/summary/eu") is not None
    leader = etcd.get("/anteroom/leader")
    assert leader is not None and leader.value.decode().startswith("eu-")
    assert redis_client.hget(engine.keys.room(room), stored("regionLease"))

    visitor = Visitor(server.url, key)
    entered = visitor.enter("drop")
    assert entered.status_code == 200, entered.text
    assert entered.json["status"] == "waiting"  # a regional room: nobody walks straight in
    claims = tokens.TicketClaims.from_wire(
        tokens.decode(tokens.Keyring.parse(TEST_KEYS), visitor.ticket, tokens.TICKET)
    )
    assert claims.region == "eu"
    deadline = time.monotonic() + 10
    while (answer := visitor.poll()).json["status"] != "admitted":
        assert answer.status_code == 200, answer.text
        assert time.monotonic() < deadline, "not admitted under the region's lease"
        time.sleep(0.3)
    # any edge with the shared keyring takes it, whichever region dealt it
    assert verify_admission(answer.json["token"], TEST_KEYS, room="drop").valid
