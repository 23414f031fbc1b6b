"""The coordinator's leadership and fencing epoch, on a real 3-member etcd (etcd_cluster.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from anteroom.queue.regions.etcd_kv import Etcd, EtcdUnavailable, put_op
from anteroom.queue.regions.leadership import Leadership
from etcd_cluster import EtcdCluster
from helpers import free_port


@pytest.fixture(scope="module")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 3) as cluster:
        yield cluster


@pytest.fixture
def etcd(etcd_cluster: EtcdCluster) -> Etcd:
    return Etcd(etcd_cluster.endpoints)


def test_keys_round_trip_through_any_member(etcd_cluster: EtcdCluster) -> None:
    first, second = Etcd(etcd_cluster.endpoints[:1]), Etcd(etcd_cluster.endpoints[2:])
    first.put("/t/kv/a", "one")
    first.put("/t/kv/b", b"\x00two")
    assert second.get("/t/kv/a").value == b"one"
    assert [kv.value for kv in second.get_prefix("/t/kv/")] == [b"one", b"\x00two"]
    second.delete("/t/kv/a")
    assert first.get("/t/kv/a") is None


def test_a_member_that_does_not_answer_is_passed_over(etcd_cluster: EtcdCluster) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    etcd = Etcd([dead, *etcd_cluster.endpoints], timeout=0.5)
    etcd.put("/t/over", "x")
    assert etcd.get("/t/over").value == b"x"
    with pytest.raises(EtcdUnavailable):
        Etcd([dead], timeout=0.5).get("/t/over")


def test_one_leader_at_a_time_and_each_new_epoch_is_higher(etcd: Etcd) -> None:
    key = f"/t/leader/{time.monotonic_ns()}"
    a, b = Leadership(etcd, key, "a", ttl=1), Leadership(etcd, key, "b", ttl=1)
    assert a.campaign().candidate == "a"
    assert b.campaign().candidate == "a"  # b sees a lead
    assert a.leading and not b.leading
    first = a.epoch
    assert a.renew()
    a.resign()
    assert b.campaign().candidate == "b"
    assert b.epoch > first


def test_a_leader_that_stops_renewing_loses_office_and_its_writes(etcd: Etcd) -> None:
    key = f"/t/leader/{time.monotonic_ns()}"
    a, b = Leadership(etcd, key, "a", ttl=1), Leadership(etcd, key, "b", ttl=1)
    a.campaign()
    old_epoch = a.epoch
    # a stalls (no renewal): its lease lapses, b takes over once etcd has deleted the key
    deadline = time.monotonic() + 5
    while b.campaign().candidate != "b":
        assert time.monotonic() < deadline, "the lapsed leader's key was never released"
        time.sleep(0.2)
    assert b.epoch > old_epoch
    # a wakes up still believing it leads: its guarded write is refused, and it steps down
    assert a.leading
    assert not a.guarded([put_op(key + "/state", "from a")])
    assert not a.leading
    assert etcd.get(key + "/state") is None
    assert b.guarded([put_op(key + "/state", "from b")])
    assert etcd.get(key + "/state").value == b"from b"
    assert not a.renew()


def test_leadership_survives_one_members_loss(etcd_cluster: EtcdCluster) -> None:
    etcd = Etcd(etcd_cluster.endpoints, timeout=0.5)
    key = f"/t/leader/{time.monotonic_ns()}"
    a = Leadership(etcd, key, "a", ttl=2)
    a.campaign()
    etcd_cluster.stop(0)
    try:
        deadline = time.monotonic() + 5  # the survivors elect a raft leader in about a second
        while True:
            try:
                assert a.renew()
                break
            except Exception:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert Leadership(etcd, key, "b").campaign().candidate == "a"
    finally:
        etcd_cluster.start(0)
