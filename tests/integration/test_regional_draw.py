"""A pre-queue draw across regions (docs/regions-policies.md), on a real 3-member etcd and one
real Redis per region: one commitment made once however many schedule it, each region drawing
its own pool with it, verify-draw checking every region and the global root, and the pools
admitted across regions in the merged draw's order through the coordinator's leases."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from anteroom.engine import Engine
from anteroom.queue.draw.receipt_keys import ReceiptSigner
from anteroom.queue.draw.room_receipts import DrawnOpening
from anteroom.queue.regions import shared_draw
from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.queue.regions.global_line import BUCKET_MS, Summary, split_by_arrival
from anteroom.queue.regions.pool_order import line_arrival
from anteroom.queue.regions.shared_draw import RegionPartConflict, SharedDraw
from anteroom.sdk import draw, regional_draw
from anteroom.sdk.tokens import Keyring
from etcd_cluster import EtcdCluster, redis_per_region
from helpers import make_room, verify_draw

pytestmark = pytest.mark.redis

REGIONS = ("ap", "eu", "us")
SIZES = {"ap": 12, "eu": 40, "us": 25}
START = 1_800_000_000_000
MINUTE = 60_000


@pytest.fixture(scope="module")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 3) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def region_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One Redis server per region."""
    with redis_per_region(tmp_path_factory, REGIONS) as urls:
        yield urls


@pytest.fixture
def engines(region_servers: dict[str, str]) -> Iterator[dict[str, Engine]]:
    clients = {r: redis.Redis.from_url(u, decode_responses=True) for r, u in region_servers.items()}
    for client in clients.values():
        client.flushall()
    yield {r: Engine(c) for r, c in clients.items()}
    for client in clients.values():
        client.close()


def _commit(endpoints: list[str], room: str, opens_at: int) -> str:
    shared = shared_draw.commit(Etcd(endpoints), room, opens_at, list(REGIONS))
    return json.dumps([shared.seed, list(shared.regions)])


def test_regions_scheduling_at_once_commit_one_seed(etcd_cluster: EtcdCluster) -> None:
    # Six schedulers, each through its own member, race to commit the same opening.
    room, opens_at = "race-drop", START + MINUTE
    args = [([etcd_cluster.endpoints[i % 3]], room, opens_at) for i in range(6)]
    with multiprocessing.get_context("fork").Pool(6) as pool:
        answers = pool.starmap(_commit, args)
    assert len(set(answers)) == 1
    seed, regions = json.loads(answers[0])
    assert regions == list(REGIONS)
    stored = Etcd(etcd_cluster.endpoints).get(
        shared_draw.opening_key(room, opens_at) + "commitment"
    )
    assert stored is not None and json.loads(stored.value)["seed"] == seed
    # another opening of the room is another commitment
    other = shared_draw.commit(Etcd(etcd_cluster.endpoints), room, opens_at + 1, list(REGIONS))
    assert other.seed != seed
    found = shared_draw.lookup(Etcd(etcd_cluster.endpoints), room, opens_at)
    assert found is not None and found.seed == seed and found.regions == REGIONS
    assert shared_draw.lookup(Etcd(etcd_cluster.endpoints), room, opens_at + 2) is None


def scheduled_everywhere(
    engines: dict[str, Engine], etcd: Etcd, slug: str, **config: object
) -> tuple[SharedDraw, dict[str, str]]:
    """The room in every region, its opening scheduled with the one shared commitment."""
    opens_at = START + MINUTE
    rooms = {}
    for region, engine in engines.items():
        room = make_room(engine, slug=slug, **config)
        engine.set_clock(room, START)  # pinned: the regions' clocks agree exactly
        shared = shared_draw.schedule(etcd, engine, room, opens_at, region, list(REGIONS))
        rooms[region] = room
    return shared, rooms


def entered(engines: dict[str, Engine], rooms: dict[str, str]) -> dict[str, dict[str, int]]:
    """Each region's pool entering before the opening; their tickets by vid."""
    return {
        r: {
            f"{r}-v{i}": engines[r].enter(rooms[r], f"{r}-v{i}", "s", 10).ticket
            for i in range(SIZES[r])
        }
        for r in REGIONS
    }


def drawn_everywhere(
    engines: dict[str, Engine], rooms: dict[str, str], etcd: Etcd, shared: SharedDraw
) -> None:
    """Each region draws at opensAt, publishes its part, and keeps the regions' parts."""
    for region, engine in engines.items():
        engine.shift_clock(rooms[region], MINUTE)
        assert engine.tick(rooms[region]).draw_due
        kept = shared_draw.after_draw(etcd, engine, rooms[region], shared, region, f"{region}.json")
        assert kept == (region == REGIONS[-1])  # until every region has drawn, nothing to keep
    for region, engine in engines.items():
        assert shared_draw.after_draw(etcd, engine, rooms[region], shared, region, f"{region}.json")


def test_each_region_draws_its_pool_with_the_one_seed_and_verify_draw_checks_them_all(
    engines: dict[str, Engine], etcd_cluster: EtcdCluster, tmp_path: Path
) -> None:
    etcd = Etcd(etcd_cluster.endpoints)
    shared, rooms = scheduled_everywhere(engines, etcd, "drop-checked")
    for region, engine in engines.items():  # one commitment, published in every region
        public = engine.get_room(rooms[region])["draw"]
        assert public["commitment"] == shared.commitment and public["region"] == region
        assert "seed" not in public
    entered(engines, rooms)
    drawn_everywhere(engines, rooms, etcd, shared)
    lists = {r: engines[r].drawn_entrants(rooms[r]) for r in REGIONS}
    for region in REGIONS:
        (tmp_path / f"{region}.json").write_text(json.dumps(lists[region]))
        assert lists[region] == draw.drawn_order(shared.seed, lists[region])
    # eu's document, as its fairness.json shows it, and a receipt its process signs
    room = engines["eu"].get_room(rooms["eu"])
    public = room["draw"]
    assert public["globalRoot"] == regional_draw.global_root(
        [regional_draw.RegionRoot(r, draw.tree_root(lists[r]), SIZES[r]) for r in REGIONS]
    )
    signer = ReceiptSigner(Keyring.generate("k1"))
    salt = bytes.fromhex(engines["eu"].redis.hget(engines["eu"].keys.room(rooms["eu"]), "dsl"))
    opening = DrawnOpening(room, public["root"], salt, lists["eu"], signer)
    receipt = opening.receipt("eu-v7")
    assert receipt is not None and draw.read_receipt(receipt).region == "eu"
    document = {
        "room": room["slug"], "opensAt": room["opensAt"], "entrantsUrl": "eu.json",
        "receiptKeys": signer.public_keys,
    } | public  # fmt: skip
    (tmp_path / "fairness.json").write_text(json.dumps(document))
    done = verify_draw("--fairness", str(tmp_path / "fairness.json"), "--receipt", receipt)
    assert done.returncode == 0, done.stderr
    everyone = [e for ids in lists.values() for e in ids]
    mine = draw.read_receipt(receipt).entrant
    rank = draw.drawn_order(shared.seed, everyone).index(mine) + 1
    assert f"global rank {rank} of {len(everyone)}" in done.stdout
    # a region whose published list is not the one its root was made of is named
    (tmp_path / "us.json").write_text(json.dumps(lists["us"][1:] + lists["us"][:1]))
    tampered = verify_draw("--fairness", str(tmp_path / "fairness.json"), "--receipt", receipt)
    assert tampered.returncode == 1 and "region-order-mismatch" in tampered.stderr


def test_a_shared_draw_is_not_re_rolled_in_one_region_and_a_part_is_recorded_once(
    engines: dict[str, Engine], etcd_cluster: EtcdCluster
) -> None:
    etcd = Etcd(etcd_cluster.endpoints)
    shared, rooms = scheduled_everywhere(engines, etcd, "drop-fixed")
    before = engines["ap"].get_room(rooms["ap"])["draw"]["commitment"]
    with pytest.raises(Exception, match="NoDraw"):
        engines["ap"].reroll_draw(rooms["ap"])
    assert engines["ap"].get_room(rooms["ap"])["draw"]["commitment"] == before
    part = shared_draw.publish_part(etcd, shared, "ap", "ab" * 32, 3, "ap.json")
    assert shared_draw.publish_part(etcd, shared, "ap", "ab" * 32, 3, "other.json") == part
    with pytest.raises(RegionPartConflict):
        shared_draw.publish_part(etcd, shared, "ap", "cd" * 32, 3, "ap.json")


def test_the_regions_pools_are_admitted_in_the_merged_draws_order(
    engines: dict[str, Engine], etcd_cluster: EtcdCluster
) -> None:
    etcd = Etcd(etcd_cluster.endpoints)
    shared, rooms = scheduled_everywhere(engines, etcd, "drop-merged", ratePerMinute=6_000)
    for region in REGIONS:  # regional from the start: only a lease's drain admits
        engines[region].apply_lease(rooms[region], 1, 0, 0, 0, 0)
    tickets = entered(engines, rooms)
    drawn_everywhere(engines, rooms, etcd, shared)
    # The merged draw, and each entrant's place on the global line's time axis.
    vid_of = {}
    for region in REGIONS:
        key = engines[region].keys.room(rooms[region])
        salt = bytes.fromhex(engines[region].redis.hget(key, "dsl"))
        vid_of |= {draw.entrant_id(salt, v): (region, v) for v in tickets[region]}
    lists = {r: engines[r].drawn_entrants(rooms[r]) for r in REGIONS}
    merged = [vid_of[e] for _, e in regional_draw.merged_order(shared.seed, lists)]
    # a cut between two buckets (a shared bucket is split by count: the stated blur)
    scores = {}
    for region in REGIONS:
        line = engines[region].redis.zrange(
            engines[region].keys.room_base(rooms[region]) + "line", 0, -1, withscores=True
        )
        scores |= {(region, v): line_arrival(int(s), 0) // BUCKET_MS for v, s in line}
    assert [scores[spot] for spot in merged] == sorted(scores[spot] for spot in merged)
    take = next(k for k in range(30, len(merged)) if scores[merged[k - 1]] != scores[merged[k]])
    summaries = []
    for region in REGIONS:
        now, dealt, active, waiting, rate, capacity, buckets, tail = engines[region].region_summary(
            rooms[region], 1_000, BUCKET_MS
        )
        summaries.append(
            Summary(
                region, now, dealt, active, waiting, tuple(buckets), rate, capacity, tuple(tail)
            )
        )
    shares, watermark = split_by_arrival(summaries, take)
    assert watermark is not None
    for region, s in zip(REGIONS, summaries, strict=True):
        engines[region].apply_lease(
            rooms[region], 2, s.admitted + shares[region], watermark, 10_000, 0
        )
        engines[region].shift_clock(rooms[region], 2_000)
        engines[region].tick(rooms[region])
    admitted = set()
    for region in REGIONS:
        waiting = {entry.visitor for entry in engines[region].line(rooms[region], 200)}
        admitted |= {(region, v) for v in tickets[region] if v not in waiting}
    assert admitted == set(merged[:take])
    assert {r for r, _ in admitted} == set(REGIONS)  # each region took its part
