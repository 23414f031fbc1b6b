"""An invite across regions (queue/regions/invite_uses.py): its uses counted once in etcd, so an
invite of one use lets one identity in, whichever region each presenter reaches. A real
3-member etcd and one real Redis per region; the race run by several processes."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator

import pytest
import redis

from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.line import room_engine as eng
from anteroom.queue.regions import invite_uses
from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.sdk.tokens import InviteClaims
from etcd_cluster import EtcdCluster
from helpers import free_port, open_room

pytestmark = pytest.mark.redis

REGIONS = ("eu", "us")
FAR = 2**50


@pytest.fixture(scope="module")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 3) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def region_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    servers = {
        r: EmbeddedRedis(tmp_path_factory.mktemp(f"redis-{r}"), port=free_port()).start()
        for r in REGIONS
    }
    yield {r: str(s.url) for r, s in servers.items()}
    for server in servers.values():
        server.stop()


def region_engine(url: str, endpoints: list[str]) -> Engine:
    engine = Engine(redis.Redis.from_url(url, decode_responses=True))
    engine.invite_gate = invite_uses.gate(Etcd(endpoints))
    return engine


@pytest.fixture
def regions(
    region_urls: dict[str, str], etcd_cluster: EtcdCluster
) -> dict[str, tuple[Engine, str]]:
    """Each region's engine (its invite gate on the shared etcd) and its room, open."""
    out = {}
    for region, url in region_urls.items():
        engine = region_engine(url, etcd_cluster.endpoints)
        engine.redis.flushall()
        out[region] = (engine, open_room(engine, ratePerMinute=1))
    return out


def invite(invite_id: str, uses: int = 1) -> InviteClaims:
    # one room across regions: the invite verifies in each (the keyring is shared)
    return InviteClaims("q-across", "test", invite_id, FAR, uses, "priority")


def test_an_invite_of_one_use_lets_one_identity_in_across_regions(
    regions: dict[str, tuple[Engine, str]],
) -> None:
    (eu, eu_room), (us, us_room) = regions["eu"], regions["us"]
    one = invite("iv-one")
    assert eu.enter(eu_room, "alice", "s", 10, invite=one).ticket
    with pytest.raises(eng.InviteSpent):
        us.enter(us_room, "bob", "s", 10, invite=one)
    # the identity that holds the use enters again anywhere, using none
    assert us.enter(us_room, "alice", "s", 10, invite=one).ticket
    with pytest.raises(eng.InviteSpent):
        eu.enter(eu_room, "carol", "s", 10, invite=one)


def test_a_withdrawal_recorded_across_regions_refuses_the_invite_everywhere(
    regions: dict[str, tuple[Engine, str]], etcd_cluster: EtcdCluster
) -> None:
    (us, us_room) = regions["us"]
    invite_uses.withdraw(Etcd(etcd_cluster.endpoints), "q-across", "iv-gone")
    with pytest.raises(eng.InviteWithdrawn):
        us.enter(us_room, "dave", "s", 10, invite=invite("iv-gone", uses=5))


def _enter(url: str, endpoints: list[str], room: str, vid: str) -> bool:
    engine = region_engine(url, endpoints)
    try:
        engine.enter(room, vid, "s", 10, invite=invite("iv-race", uses=3))
    except eng.InviteSpent:
        return False
    return True


def test_racing_presenters_in_both_regions_get_exactly_its_uses(
    regions: dict[str, tuple[Engine, str]],
    region_urls: dict[str, str],
    etcd_cluster: EtcdCluster,
) -> None:
    args = [
        (region_urls[r], [etcd_cluster.endpoints[i % 3]], regions[r][1], f"v{i}")
        for i, r in enumerate(REGIONS * 5)
    ]
    with multiprocessing.get_context("fork").Pool(10) as pool:
        entered = pool.starmap(_enter, args)
    assert sum(entered) == 3


def test_a_region_cut_off_from_etcd_counts_the_invite_itself(
    regions: dict[str, tuple[Engine, str]],
) -> None:
    (eu, eu_room) = regions["eu"]
    eu.invite_gate = invite_uses.gate(Etcd([f"http://127.0.0.1:{free_port()}"], timeout=0.2))
    cut_off = invite("iv-cut")
    assert eu.enter(eu_room, "erin", "s", 10, invite=cut_off).ticket
    with pytest.raises(eng.InviteSpent):  # the region's own count still holds it there
        eu.enter(eu_room, "frank", "s", 10, invite=cut_off)


def test_a_skip_lane_newcomer_waits_for_the_lease_and_is_admitted_first(
    regions: dict[str, tuple[Engine, str]],
) -> None:
    # A region cannot see the others' sessions, so a skip invite (or a bypass rule) may not
    # walk straight in within the room's capacity there: it goes first under the next lease.
    eu, room = regions["eu"]
    start = 1_800_000_000_000
    eu.set_clock(room, start)
    eu.apply_lease(room, 1, 0, 0, 60_000, 0)  # the coordinator grants nothing yet
    for i in range(3):
        eu.enter(room, f"early{i}", "s", 10)
        eu.shift_clock(room, 100)
    skip = InviteClaims("q-across", "test", "iv-skip", FAR, 1, "skip")
    eu.invite_gate = None  # this check is the region's own
    answer = eu.enter(room, "vip", "s", 10, invite=skip)
    assert answer.admission is None  # not straight in: over the lease's ceiling of nothing
    # the coordinator's next lease: one admission, up to arrivals at 0 ms (a lane's place)
    summary = eu.region_summary(room, 100, 100)
    assert summary[6][0] == (0, 1)  # the summary counts the invitee at the head, at 0
    eu.apply_lease(room, 2, summary[1] + 1, 99, 60_000, 0)
    eu.shift_clock(room, 1_000)
    eu.tick(room)
    waiting = [e.visitor for e in eu.line(room)]
    assert waiting == ["early0", "early1", "early2"]
