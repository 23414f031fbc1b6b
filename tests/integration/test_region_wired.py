"""The policies across regions wired into the service (docs/regions-policies.md): two regions,
each the real app on its own real Redis with ANTEROOM_REGION set, one real etcd. An invite's use
is counted once whichever region's API it reaches, an opening scheduled through each region's
management API takes the one commitment, each region's service publishes its part of the draw
so both fairness documents show the global root that verify-draw checks, and a drawn pool's
places shown follow the merged draw."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.serving import make_server

from anteroom.config import Settings
from anteroom.queue.regions import shared_draw
from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.queue.regions.region_cell import write_spec
from anteroom.sdk import draw, regional_draw, tokens
from anteroom.service_container import Services
from anteroom.web.app_factory import close_app, create_app
from etcd_cluster import EtcdCluster, redis_per_region
from helpers import TEST_KEYS, Operator, free_port, verify_draw
from visitor_client import Visitor

pytestmark = pytest.mark.redis

REGIONS = ("eu", "us")
START = 1_800_000_000_000
MINUTE = 60_000
ROOM = {"name": "Spring drop", "redirectUrl": "https://shop.example/co", "ratePerMinute": 1}


@dataclass
class Region:
    """One region's service: its app (also served over HTTP at ``url``), key and operator."""

    name: str
    app: Flask
    client: FlaskClient
    services: Services
    url: str
    public_key: str
    op: Operator

    def fairness(self, slug: str) -> dict[str, Any]:
        answer = self.client.get(f"/queue/{slug}/fairness.json?key={self.public_key}")
        assert answer.status_code == 200, answer.text
        return answer.json  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def etcd_member(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def region_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with redis_per_region(tmp_path_factory, REGIONS) as urls:
        yield urls


@pytest.fixture
def regions(
    region_urls: dict[str, str], etcd_member: EtcdCluster, tmp_path: Path
) -> Iterator[dict[str, Region]]:
    """Each region's app with ANTEROOM_REGION, on its own flushed Redis, served over HTTP too
    (verify-draw fetches the other region's list from the URL its part names)."""
    etcd = Etcd(etcd_member.endpoints)
    for kv in etcd.get_prefix("/anteroom/"):  # no room of an earlier test spans regions
        etcd.delete(kv.key)
    out, servers = {}, []
    for region, url in region_urls.items():
        with redis.Redis.from_url(url) as client:
            client.flushall()
        port = free_port()
        (tmp_path / region).mkdir()
        settings = Settings(
            redis_url=url, keys=TEST_KEYS, pow_difficulty=4, data_dir=str(tmp_path / region),
            region=region, etcd_endpoints=etcd_member.endpoints[0],
            public_url=f"http://127.0.0.1:{port}",
        )  # fmt: skip
        app = create_app(settings, {"TESTING": True})
        server = make_server("127.0.0.1", port, app, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        services: Services = app.extensions["anteroom"]
        record, secret = services.keystore.create("test")
        client = app.test_client()
        out[region] = Region(
            region, app, client, services, f"http://127.0.0.1:{port}", record.public_key,
            Operator(client, secret, ROOM),
        )  # fmt: skip
    yield out
    for server in servers:
        server.shutdown()
    for region in out.values():
        close_app(region.app)


def spanned(regions: dict[str, Region], etcd: Etcd, slug: str) -> dict[str, str]:
    """Room ``slug`` created through each region's API, its clock pinned at START, and made to
    span both regions (its spec in etcd); its id in each region."""
    rooms = {}
    for name, region in regions.items():
        rooms[name] = region.op.create(slug=slug)["id"]
        region.services.engine.set_clock(rooms[name], START)
    write_spec(etcd, slug, {r: (room, 0.0) for r, room in rooms.items()})
    # each region's cell has read the spec once it reports the room
    deadline = time.monotonic() + 10
    while any(etcd.get(f"/anteroom/rooms/{slug}/summary/{r}") is None for r in REGIONS):
        assert time.monotonic() < deadline, "a region never reported the room"
        time.sleep(0.05)
    return rooms


def issue(region: Region, room_id: str, uses: int) -> str:
    body = {"count": 1, "expiresAt": START + 3_600_000, "uses": uses, "lane": "priority"}
    answer = region.op.call("POST", f"/queues/{room_id}/invites", body)
    assert answer.status_code == 201, answer.text
    return str(answer.json["invites"][0])


def invite_id(region: Region, invite: str) -> str:
    claims = tokens.decode(region.services.keyring, invite, tokens.INVITE)
    return tokens.InviteClaims.from_wire(claims).invite_id


def test_an_invite_let_in_by_one_region_is_spent_in_the_other_through_the_api(
    regions: dict[str, Region], etcd_member: EtcdCluster
) -> None:
    etcd = Etcd(etcd_member.endpoints)
    eu, us = regions["eu"], regions["us"]
    rooms = spanned(regions, etcd, "invited")
    for name, region in regions.items():
        assert region.op.patch(rooms[name], {"action": "open"}).status_code == 200
    once = issue(eu, rooms["eu"], uses=1)
    first = Visitor(eu.client, eu.public_key, address="198.51.100.1").enter("invited", once)
    assert first.status_code == 200, first.text
    # signed by eu's room, good in us's room of the same room across regions, but spent
    refused = Visitor(us.client, us.public_key, address="198.51.100.2").enter("invited", once)
    assert (refused.status_code, refused.json["error"]) == (409, "InviteSpent")
    # withdrawn through eu's API: refused in us, where it was never spent
    five = issue(eu, rooms["eu"], uses=5)
    gone = eu.op.call("DELETE", f"/queues/{rooms['eu']}/invites/{invite_id(eu, five)}")
    assert gone.status_code == 204, gone.text
    late = Visitor(us.client, us.public_key, address="198.51.100.3").enter("invited", five)
    assert (late.status_code, late.json["error"]) == (410, "InviteWithdrawn")
    # a room of eu alone: its invites counted in eu's Redis only, nothing asked of etcd
    solo = eu.op.create(slug="solo")["id"]
    assert eu.op.patch(solo, {"action": "open"}).status_code == 200
    alone = issue(eu, solo, uses=1)
    assert Visitor(eu.client, eu.public_key).enter("solo", alone).status_code == 200
    again = Visitor(eu.client, eu.public_key, address="198.51.100.4").enter("solo", alone)
    assert (again.status_code, again.json["error"]) == (409, "InviteSpent")
    assert etcd.get_prefix(f"/anteroom/invites/{invite_id(eu, alone)}/") == []
    assert etcd.get_prefix(f"/anteroom/invites/{invite_id(eu, once)}/") != []


def test_an_opening_scheduled_through_each_regions_api_takes_the_one_commitment(
    regions: dict[str, Region], etcd_member: EtcdCluster
) -> None:
    etcd = Etcd(etcd_member.endpoints)
    rooms = spanned(regions, etcd, "scheduled")
    opens_at = START + MINUTE
    shown = {}
    for name, region in regions.items():
        answer = region.op.patch(rooms[name], {"action": "open", "opensAt": opens_at})
        assert answer.status_code == 200, answer.text
        shown[name] = answer.json["draw"]
    shared = shared_draw.lookup(etcd, "scheduled", opens_at)
    assert shared is not None and shared.regions == REGIONS
    for name, region in regions.items():
        assert shown[name]["commitment"] == shared.commitment
        document = region.fairness("scheduled")
        assert document["commitment"] == shared.commitment and document["region"] == name
    # a room of one region alone commits a seed of its own, nothing in etcd
    eu = regions["eu"]
    solo = eu.op.create(slug="scheduled-solo")["id"]
    eu.services.engine.set_clock(solo, START)
    alone = eu.op.patch(solo, {"action": "open", "opensAt": opens_at})
    assert alone.status_code == 200, alone.text
    assert alone.json["draw"]["commitment"] != shared.commitment
    assert "region" not in alone.json["draw"]
    assert shared_draw.lookup(etcd, "scheduled-solo", opens_at) is None


def drawn_across(
    regions: dict[str, Region], etcd: Etcd, slug: str, sizes: dict[str, int]
) -> tuple[dict[str, str], dict[str, list[Visitor]]]:
    """Room ``slug`` scheduled in both regions through their APIs, ``sizes`` visitors entering
    each region's pool, opensAt reached on each room's clock: each region's service draws and
    publishes its part. Returns the room ids and the visitors, once both documents show the
    global root."""
    rooms = spanned(regions, etcd, slug)
    for name, region in regions.items():
        answer = region.op.patch(rooms[name], {"action": "open", "opensAt": START + MINUTE})
        assert answer.status_code == 200, answer.text
    visitors: dict[str, list[Visitor]] = {}
    for index, (name, region) in enumerate(regions.items()):
        visitors[name] = []
        for i in range(sizes[name]):
            visitor = Visitor(region.client, region.public_key, address=f"198.51.{index}.{i + 1}")
            assert visitor.enter(slug).status_code == 200
            visitors[name].append(visitor)
    for name, region in regions.items():
        region.services.engine.shift_clock(rooms[name], MINUTE)  # each region's ticker draws
    deadline = time.monotonic() + 20
    while not all("globalRoot" in region.fairness(slug) for region in regions.values()):
        assert time.monotonic() < deadline, "the global root never reached both documents"
        time.sleep(0.1)
    return rooms, visitors


def test_each_regions_fairness_document_shows_the_global_root_and_verify_draw_passes(
    regions: dict[str, Region], etcd_member: EtcdCluster
) -> None:
    etcd = Etcd(etcd_member.endpoints)
    sizes = {"eu": 6, "us": 4}
    _, visitors = drawn_across(regions, etcd, "verified", sizes)
    documents = {name: region.fairness("verified") for name, region in regions.items()}
    assert documents["eu"]["globalRoot"] == documents["us"]["globalRoot"]
    parts = [regional_draw.RegionRoot(r, documents[r]["root"], sizes[r]) for r in REGIONS]
    assert documents["eu"]["globalRoot"] == regional_draw.global_root(parts)
    assert documents["eu"]["regions"] == documents["us"]["regions"]
    for name, region in regions.items():
        receipt = visitors[name][0].poll().json["receipt"]
        url = f"{region.url}/queue/verified/fairness.json?key={region.public_key}"
        checked = verify_draw("--fairness", url, "--receipt", receipt)
        assert checked.returncode == 0, checked.stderr
        # the other region's list fetched from the URL its part names
        other = next(r for r in REGIONS if r != name)
        assert f"region {other}: draw of {sizes[other]} entrants checked" in checked.stdout
        assert f"of {sum(sizes.values())} ({draw.read_receipt(receipt).rank} of" in checked.stdout


def test_a_drawn_pools_places_across_regions_follow_the_merged_draw(
    regions: dict[str, Region], etcd_member: EtcdCluster
) -> None:
    etcd = Etcd(etcd_member.endpoints)
    _, visitors = drawn_across(regions, etcd, "merged", {"eu": 7, "us": 5})
    document = regions["eu"].fairness("merged")
    lists = {}
    for name, region in regions.items():
        url = regions[name].fairness("merged")["entrantsUrl"]
        lists[name] = region.client.get("/queue/merged/" + url).json
    merged = regional_draw.merged_order(document["seed"], lists)
    deadline = time.monotonic() + 10
    while True:
        places, expected = {}, {}
        for name, group in visitors.items():
            for visitor in group:
                answer = visitor.poll().json
                assert answer["status"] == "waiting", answer  # nobody admitted meanwhile
                entrant = draw.read_receipt(answer["receipt"]).entrant
                places[entrant] = answer["position"]
                expected[entrant] = merged.index((name, entrant)) + 1
        if places == expected or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # the regions' summaries of the drawn lines reach each other
    assert places == expected


def test_an_opening_scheduled_while_etcd_is_out_of_reach_is_refused_503_changing_nothing(
    region_urls: dict[str, str], tmp_path: Path
) -> None:
    # Whether the room spans regions is etcd's to say: without it, no seed of its own is
    # committed (it would split the one commitment), and the operator is told to try again.
    with redis.Redis.from_url(region_urls["eu"]) as client:
        client.flushall()
    settings = Settings(
        redis_url=region_urls["eu"], keys=TEST_KEYS, data_dir=str(tmp_path), region="eu",
        etcd_endpoints=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    app = create_app(settings, {"TESTING": True})
    try:
        services: Services = app.extensions["anteroom"]
        op = Operator(app.test_client(), services.keystore.create("test")[1], ROOM)
        room = op.create(slug="cut-off")["id"]
        services.engine.set_clock(room, START)
        answer = op.patch(room, {"action": "open", "opensAt": START + MINUTE})
        assert answer.status_code == 503 and answer.json["error"] == "Unavailable"
        assert "etcd" in answer.json["message"]
        after = op.get(room)
        assert after["status"] == "idle" and after["draw"] is None
    finally:
        close_app(app)
