"""One committed draw for a room across regions, kept in etcd (docs/regions-policies.md).

A regional room's opening is scheduled in every region, by operators or tooling that may race
each other. The first to reach etcd commits: a transaction creates the opening's commitment key
only while it is absent, holding a fresh seed, the beacon round named with it and the regions
the draw spans; every other scheduler reads the record the winner wrote and takes that seed. So
however many regions or instances schedule the opening, one seed is committed, and each region's
room stores it (and publishes its commitment) as a room in one region does.

The seed sits in etcd in the clear until the draw: etcd is the operators' own trust domain, like
each region's Redis, which holds it in the clear as well. Whoever may read the room's etcd keys
may read the seed before the draw; restrict them with etcd's auth as the Redis is restricted.

After its draw, each region publishes its part (root, count, list URL) under the opening, also
created once: a region's pool is frozen at the draw, so a draw re-made by another process of that
region finds the same part, and a different one is refused (:class:`RegionPartConflict`). Once
every region named in the commitment has published, :func:`regions_done` gives the list and the
global root each region's fairness document shows.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from anteroom.queue.draw.draw_beacon import round_at
from anteroom.queue.line.room_engine import Engine
from anteroom.queue.regions.etcd_kv import Etcd, if_absent, put_op, range_kvs, range_op
from anteroom.sdk import draw
from anteroom.sdk.regional_draw import REGION, RegionRoot, global_root

PREFIX = "/anteroom/draws/"


class RegionPartConflict(Exception):
    """A region published a part of the draw that differs from the one already recorded."""


@dataclass(frozen=True)
class SharedDraw:
    """An opening's one commitment across regions (the seed secret until the draw)."""

    room: str  # the room's name across regions (its slug: the same in every region)
    opens_at: int  # epoch ms: every region's room opens then
    seed: str
    regions: tuple[str, ...]
    beacon_url: str = ""
    beacon_round: int = 0

    @property
    def commitment(self) -> str:
        """SHA-256 of the seed, as every region publishes it."""
        return draw.commitment(self.seed)


def opening_key(room: str, opens_at: int) -> str:
    """The etcd prefix of one opening's draw."""
    return f"{PREFIX}{room}/{opens_at}/"


def commit(
    etcd: Etcd,
    room: str,
    opens_at: int,
    regions: list[str],
    beacon_url: str = "",
    beacon_round: int = 0,
) -> SharedDraw:
    """The opening's shared draw: committed now with a fresh seed, or the one committed first.

    Only the first caller's ``regions`` and beacon count; a later caller gets them as the
    first wrote them, so every region takes the same seed and round.
    """
    for region in regions:
        if not REGION.match(region):
            raise ValueError(f"a region's name is 1-32 of a-z, 0-9 and -: {region!r}")
    candidate = SharedDraw(
        room, opens_at, draw.new_seed(), tuple(sorted(set(regions))), beacon_url, beacon_round
    )
    key = opening_key(room, opens_at) + "commitment"
    ok, answer = etcd.txn(
        [if_absent(key)], [put_op(key, json.dumps(asdict(candidate)))], [range_op(key)]
    )
    if ok:
        return candidate
    stored = json.loads(range_kvs(answer)[0].value)
    return SharedDraw(**(stored | {"regions": tuple(stored["regions"])}))


def lookup(etcd: Etcd, room: str, opens_at: int) -> SharedDraw | None:
    """The opening's shared draw as committed, or None (not committed)."""
    held = etcd.get(opening_key(room, opens_at) + "commitment")
    if held is None:
        return None
    stored = json.loads(held.value)
    return SharedDraw(**(stored | {"regions": tuple(stored["regions"])}))


def publish_part(
    etcd: Etcd, shared: SharedDraw, region: str, head: str, entrants: int, entrants_url: str
) -> RegionRoot:
    """Record ``region``'s part of the draw once; the part recorded (this one, or the same one
    recorded before). :class:`RegionPartConflict` when a different part was recorded."""
    if region not in shared.regions:
        raise ValueError(f"{region!r} is not a region of this draw")
    part = RegionRoot(region, head, entrants, entrants_url)
    part.leaf()  # checks its form
    key = opening_key(shared.room, shared.opens_at) + f"regions/{region}"
    value = json.dumps({"root": head, "entrants": entrants, "entrantsUrl": entrants_url})
    ok, answer = etcd.txn([if_absent(key)], [put_op(key, value)], [range_op(key)])
    if ok:
        return part
    held = json.loads(range_kvs(answer)[0].value)
    if (held["root"], held["entrants"]) != (head, entrants):
        raise RegionPartConflict(f"{region} recorded {held['root']} of {held['entrants']}")
    return RegionRoot(region, held["root"], held["entrants"], held["entrantsUrl"])


def parts(etcd: Etcd, shared: SharedDraw) -> list[RegionRoot]:
    """The regions' parts published so far, in region order."""
    prefix = opening_key(shared.room, shared.opens_at) + "regions/"
    found = []
    for kv in etcd.get_prefix(prefix):
        held = json.loads(kv.value)
        region = kv.key[len(prefix) :]
        found.append(RegionRoot(region, held["root"], held["entrants"], held["entrantsUrl"]))
    return found


def regions_done(etcd: Etcd, shared: SharedDraw) -> dict[str, object] | None:
    """``{"globalRoot", "regions": [...]}`` for the fairness documents once every region of
    the draw has published its part; None before."""
    found = parts(etcd, shared)
    if sorted(p.region for p in found) != list(shared.regions):
        return None
    return {
        "globalRoot": global_root(found),
        "regions": [
            {"region": p.region, "root": p.root, "entrants": p.entrants,
             "entrantsUrl": p.entrants_url}
            for p in found
        ],
    }  # fmt: skip


def schedule(
    etcd: Etcd, engine: Engine, room_id: str, opens_at: int, region: str, regions: list[str]
) -> SharedDraw:
    """Schedule this region's room to open at ``opens_at`` with the opening's one shared draw
    (committed here, or taken from the region that committed first). The beacon round is the
    committer's: the first round of its room's ``drawBeacon`` at or after ``opens_at``."""
    room = engine.get_room(room_id)
    beacon = room["drawBeacon"]
    url, round_number = (beacon["url"], round_at(beacon, opens_at)) if beacon else ("", 0)
    shared = commit(etcd, room["slug"], opens_at, regions, url, round_number)
    engine.open(room_id, opens_at, shared=(region, shared.seed, shared.beacon_url,
                                          shared.beacon_round))  # fmt: skip
    return shared


def after_draw(
    etcd: Etcd, engine: Engine, room_id: str, shared: SharedDraw, region: str, entrants_url: str
) -> bool:
    """Once this region's draw is made: record its part, and when every region's is recorded
    keep them with the global root for its fairness document. True once kept (call again,
    e.g. each round, until it is); False while the draw is not made or others are missing.
    ``entrants_url``: the absolute public URL of this region's list (verify-draw fetches every
    region's list from the document of any one)."""
    made = engine.get_room(room_id)["draw"]
    if not made or not made.get("root"):
        return False
    publish_part(etcd, shared, region, made["root"], made["entrants"], entrants_url)
    done = regions_done(etcd, shared)
    return done is not None and engine.set_draw_regions(room_id, done)
