"""One room across three regions on this machine (tests/region_rig.py), its short version:
three Redis servers, two instances and a visitor process per region, a 3-member etcd reached
over 30 / 90 / 150 ms round trips, arrivals skewed 70 / 20 / 10 then shifting, and faults
injected while the visitors poll: the coordinator's instance killed, a region cut off from
etcd and back, a region's Redis lost. bench/regions.py runs it for minutes with the figures."""

from __future__ import annotations

import time
from pathlib import Path

from anteroom.queue.rooms.room_hash import stored
from region_rig import (
    RegionRig,
    admitted_between,
    order_inversions,
    starved_seconds,
)

RATE = 600  # a minute: 10 a second
INTERVAL_MS = 1_000
# one interval, a bucket and the deal's own tick (200 ms): the clocks are one machine's
BOUND_MS = INTERVAL_MS + 100 + 200


def wait_until(at: float) -> None:
    """Sleep until ``at`` (time.time()): the scenario's schedule, not a race's patch."""
    time.sleep(max(0.0, at - time.time()))


def lease_of(rig: RegionRig, region: str) -> tuple[int, int]:
    """(epoch, expiry ms) of the lease ``region``'s Redis holds."""
    r, engine = rig.regions[region], rig.engine(region)
    raw = engine.redis.hget(engine.keys.room(r.room_id), stored("regionLease")) or "0:0:0:0:0"
    epoch, _, _, expires, _ = raw.split(":")
    return int(epoch), int(expires)


def test_one_line_across_three_regions_through_its_faults(tmp_path: Path) -> None:
    with RegionRig(tmp_path, rate=RATE) as rig:
        deadline = time.time() + 10
        while rig.leader() is None:  # the instances start and one campaigns
            assert time.time() < deadline
            time.sleep(0.1)
        start = time.time()
        rig.start_visitors(
            [
                (0, {"eu": 14, "us": 4, "ap": 2}),
                (12, {"eu": 8, "us": 8, "ap": 4}),  # the day moves west
                (37, {}),
            ]
        )
        t0 = int(start * 1000)

        # 1. the coordinator's instance is killed at 12 s: another leads within 5 s
        wait_until(start + 12)
        before = rig.leader()
        assert before is not None
        killed = time.time()
        rig.kill_instance(before[0])
        while (now := rig.leader()) is None or now == before:
            assert time.time() - killed < 5, "no new coordinator within 5 s"
            time.sleep(0.05)
        failover_s = time.time() - killed
        assert now[1] > before[1]  # a higher epoch fences the old one

        # 2. ap is cut off from etcd at 20 s for 6 s: its lease runs out, its fallback holds
        wait_until(start + 20)
        rig.cut_off("ap")
        wait_until(start + 26)
        rig.rejoin("ap")
        rejoined = time.time()
        while lease_of(rig, "ap")[1] < int(time.time() * 1000) + 1_000:
            assert time.time() - rejoined < 4, "ap holds no fresh lease 4 s after it rejoined"
            time.sleep(0.1)

        # 3. us loses its Redis at 30 s: eu and ap go on
        wait_until(start + 30)
        rig.lose_redis("us")
        rig.wait_visitors()
        visitors = rig.visitors()

    def admitted(a: float, b: float, region: str | None = None) -> int:
        return admitted_between(visitors, t0 + int(a * 1000), t0 + int(b * 1000), region)

    # steady (4 to 12 s): the room's rate across regions (within one interval's admissions: the
    # headroom an idle coordinator keeps, dealt as the line forms), each region served, in
    # arrival order
    steady = admitted(4, 12)
    assert abs(steady - 80) <= 10, f"{steady} admitted in 8 s at 10 a second"
    assert admitted(0, 12) <= 120 + 10
    assert all(admitted(4, 12, region) > 0 for region in ("eu", "us", "ap"))
    early = [v for v in visitors if int(v["arrival"]) < t0 + 12_000]  # type: ignore[call-overload]
    assert order_inversions(early, BOUND_MS, t0 + 12_000) == 0
    assert starved_seconds(visitors, t0 + 4_000, t0 + 12_000, BOUND_MS) == 0

    # the coordinator's loss: nothing beyond the rate while leadership moved, then on again
    assert failover_s < 5
    assert admitted(12, 18) <= 60 + 10
    assert admitted(17, 20) > 0

    # the cut: once ap's lease ran out (3 s), ap admitted at its fallback share (a tenth of the
    # rate: 1 a second) and eu and us kept the rest of the rate
    assert admitted(23.5, 26, "ap") <= 3 + 1
    assert admitted(21, 26, "eu") + admitted(21, 26, "us") >= 0.7 * 50
    assert admitted(27, 30, "ap") > 0

    # us's Redis lost: its visitors' calls fail (the web tier answers them by its failMode),
    # eu and ap keep their line; us's fallback share (a fifth) is set aside for it
    assert any(int(v["errors"]) > 0 for v in visitors if v["region"] == "us")  # type: ignore[call-overload]
    assert admitted(33, 36, "eu") + admitted(33, 36, "ap") >= 0.5 * 30
