"""The service in a region (ANTEROOM_REGION, ANTEROOM_ETCD_ENDPOINTS): a live server reports its
room to etcd, takes its leases as coordinator, shows places in the global line, names its
region in tickets, and its admissions verify at any edge holding the shared keyring."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
import redis

from anteroom.config import Settings
from anteroom.engine import Engine
from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.queue.regions.global_line import BUCKET_MS, Summary
from anteroom.queue.regions.region_cell import write_spec
from anteroom.queue.rooms.room_hash import stored
from anteroom.sdk import tokens
from anteroom.store.keystore import KeyStore
from anteroom.verify import verify_admission
from anteroom.web.app_factory import create_app
from etcd_cluster import EtcdCluster
from helpers import TEST_KEYS, make_room
from visitor_client import FlaskTransport, Visitor


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
    # us, another region (its summary written here): 50 who arrived a minute ago wait there
    write_spec(etcd, "drop", {"eu": (room, 0.0), "us": ("q-elsewhere", 0.0)})
    early = int(time.time() * 1000) - 60_000
    us = Summary("us", early + 60_000, 0, 0, 50, ((early - early % BUCKET_MS, 50),), 600, 0)
    etcd.put("/anteroom/rooms/drop/summary/us", json.dumps(asdict(us) | {"wall": us.at_ms}))
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
    # its place is in the global line: behind us's 50, who arrived before it
    assert entered.json["position"] == 51
    assert visitor.poll().json["position"] == 51
    claims = tokens.TicketClaims.from_wire(
        tokens.decode(tokens.Keyring.parse(TEST_KEYS), visitor.ticket, tokens.TICKET)
    )
    assert claims.region == "eu"
    # us leaves the room's spec: eu's line is the whole line, and it moves
    write_spec(etcd, "drop", {"eu": (room, 0.0)})
    deadline = time.monotonic() + 10
    while (answer := visitor.poll()).json["status"] != "admitted":
        assert answer.status_code == 200, answer.text
        assert time.monotonic() < deadline, "not admitted under the region's lease"
        time.sleep(0.3)
    # any edge with the shared keyring takes it, whichever region dealt it
    assert verify_admission(answer.json["token"], TEST_KEYS, room="drop").valid


def test_a_call_with_a_ticket_of_another_region_is_told_where_to_go(
    redis_server, redis_client: redis.Redis, engine: Engine, etcd_member: EtcdCluster,
    tmp_path: Path,
) -> None:  # fmt: skip
    """A routing slip (a global load balancer's) must not cost a visitor its place: the other
    region says where the spot is, rather than TicketGone (which sends it to the back)."""
    key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    room = make_room(engine, slug="drop", ratePerMinute=1, notify=True)
    engine.open(room)

    def region(name: str) -> FlaskTransport:
        settings = Settings(
            redis_url=redis_server.url, keys=TEST_KEYS, pow_difficulty=4,
            data_dir=str(tmp_path / name), region=name, etcd_endpoints=etcd_member.endpoints[0],
        )  # fmt: skip
        return FlaskTransport(create_app(settings).test_client())

    eu, us = region("eu"), region("us")
    ahead, visitor = Visitor(eu, key), Visitor(eu, key)
    ahead.enter("drop")
    assert visitor.enter("drop").json["status"] == "waiting"
    place = visitor.poll().json["position"]
    visitor.transport = us
    for call in (
        visitor.poll,
        lambda: visitor.post("queue/leave", {"apiKey": key, "queueToken": visitor.ticket}),
        lambda: visitor.post(
            "queue/notify", {"apiKey": key, "queueToken": visitor.ticket, "email": "a@b.example"}
        ),
    ):
        answer = call()
        assert answer.status_code == 421, answer.text
        assert answer.json["error"] == "WrongRegion" and "'eu'" in answer.json["message"]
        assert answer.headers["Retry-After"] == "1"
    visitor.transport = eu  # the spot is where it was, in its place
    assert visitor.poll().json["position"] == place
