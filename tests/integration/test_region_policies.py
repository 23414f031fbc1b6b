"""Policies across regions (docs/regions-policies.md), on a real 3-member etcd and one real Redis
per region: an invite's uses counted once in etcd (queue/regions/invite_uses.py), whichever
region each presenter reaches (the race run by several processes); the skip lane under the
lease; an event's rate as the global budget's."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator

import pytest
import redis

from anteroom.engine import Engine
from anteroom.queue.line import room_engine as eng
from anteroom.queue.regions import invite_uses
from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.queue.regions.global_line import (
    BUCKET_MS,
    CoordinatorState,
    Summary,
    plan_round,
    room_terms,
)
from anteroom.queue.rooms import invite_book, room_events
from anteroom.sdk.tokens import InviteClaims
from etcd_cluster import EtcdCluster, redis_per_region
from helpers import free_port, make_room, open_room

pytestmark = pytest.mark.redis

REGIONS = ("eu", "us")
FAR = 2**50


@pytest.fixture(scope="module")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 3) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def region_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with redis_per_region(tmp_path_factory, REGIONS) as urls:
        yield urls


def region_engine(url: str, endpoints: list[str]) -> Engine:
    engine = Engine(redis.Redis.from_url(url, decode_responses=True))
    engine.invite_gate = invite_uses.gate(Etcd(endpoints))
    return engine


@pytest.fixture
def regions(
    region_urls: dict[str, str], etcd_cluster: EtcdCluster
) -> Iterator[dict[str, tuple[Engine, str]]]:
    """Each region's engine (its invite gate on the shared etcd) and its room, open."""
    out = {}
    for region, url in region_urls.items():
        engine = region_engine(url, etcd_cluster.endpoints)
        engine.redis.flushall()
        out[region] = (engine, open_room(engine, ratePerMinute=1))
    yield out
    for engine, _ in out.values():
        engine.redis.close()


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
    (eu, eu_room), (us, us_room) = regions["eu"], regions["us"]
    gone = invite("iv-gone", uses=5)
    eu.invite_withdrawn = invite_uses.withdrawal(Etcd(etcd_cluster.endpoints))
    eu.record_invites(eu_room, ["iv-gone"], invite_book.terms("priority", 5, FAR, 1))
    assert us.enter(us_room, "dave", "s", 10, invite=gone).ticket
    eu.withdraw_invite(eu_room, "iv-gone", 2)  # the operator withdraws it in eu
    with pytest.raises(eng.InviteWithdrawn):
        us.enter(us_room, "erin", "s", 10, invite=gone)


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


def summary_of(engine: Engine, room: str, region: str) -> Summary:
    now, dealt, active, waiting, rate, capacity, buckets, tail = engine.region_summary(
        room, 1_000, BUCKET_MS
    )
    return Summary(region, now, dealt, active, waiting, tuple(buckets), rate, capacity, tuple(tail))


def test_an_events_rate_is_the_global_budgets_once_every_region_is_in_it(
    regions: dict[str, tuple[Engine, str]],
) -> None:
    # The schedule is the room's setting, the same in every region; each region's ticker starts
    # the event on its own clock, and the coordinator takes the least rate any region reports.
    t0 = 1_800_000_000_000
    for engine, room in regions.values():
        engine.set_clock(room, t0)
        version = engine.get_room(room)["eventsVersion"]
        event = {"id": room_events.new_id(), "startsAt": t0 + 10_000, "endsAt": t0 + 20_000,
                 "overrides": {"ratePerMinute": 600}}  # fmt: skip
        engine.set_events(room, version, [event])
    (eu, eu_room), (us, us_room) = regions["eu"], regions["us"]

    def terms() -> int:
        return room_terms([summary_of(eu, eu_room, "eu"), summary_of(us, us_room, "us")])[0]

    assert terms() == 1
    eu.shift_clock(eu_room, 10_500)
    eu.tick(eu_room)  # eu's clock is past the start; us's (behind by the skew) is not yet
    assert summary_of(eu, eu_room, "eu").rate == 600 and terms() == 1
    us.shift_clock(us_room, 10_500)
    us.tick(us_room)
    assert terms() == 600
    # the coordinator's budget grows at the event's rate: ten a second
    state, at = CoordinatorState(), 5_000  # the coordinator's own clock
    plan = plan_round([summary_of(eu, eu_room, "eu"), summary_of(us, us_room, "us")], state, 1, at)
    assert plan.budget == 0  # a first round starts the bank
    summaries = [summary_of(eu, eu_room, "eu"), summary_of(us, us_room, "us")]
    assert plan_round(summaries, state, 1, at + 1_000).budget == 10
    # once one region has ended the event, the stricter rate holds again
    eu.shift_clock(eu_room, 10_000)
    eu.tick(eu_room)
    assert terms() == 1


def test_a_calm_safety_net_admits_no_one_beyond_the_regions_lease(
    regions: dict[str, tuple[Engine, str]],
) -> None:
    # The net is judged per region, on its own sessions and arrivals; calm (passthrough) it
    # admits whatever the rate in one region, but across regions the lease still bounds it.
    eu, _ = regions["eu"]
    net = {"activeSessions": 1_000, "arrivalsPerMinute": 1_000, "coolDownSec": 60}
    room = make_room(eu, slug="netted", safetyNet=net, ratePerMinute=1)
    start = 1_800_000_000_000
    eu.set_clock(room, start)
    eu.open(room)
    eu.apply_lease(room, 1, 2, start + 10_000, 60_000, 0)  # two admissions, arrivals to +10 s
    statuses = []
    for i in range(6):
        statuses.append(eu.enter(room, f"calm{i}", "s", 10).status)
        eu.shift_clock(room, 100)
    assert eu.get_room(room)["safetyNet"]["state"] == "calm"
    assert "admitted" not in statuses  # nobody straight in, calm or not
    eu.shift_clock(room, 1_000)
    eu.tick(room)
    assert [e.visitor for e in eu.line(room)] == [f"calm{i}" for i in range(2, 6)]
    assert eu.stats(room).dealt_total == 2  # passthrough, yet within the lease's ceiling
