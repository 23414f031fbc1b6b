"""The service's draw (SPEC "A draw anyone can check"): committed when the opening is scheduled,
made at opensAt by the service over the frozen pool, revealed after, and checkable by anyone
with ``anteroom verify-draw`` against the live room."""

from __future__ import annotations

import random

import pytest
import redis

from anteroom.engine import Engine
from anteroom.queue.room_draw import drawn_key
from anteroom.sdk import draw
from helpers import make_room

pytestmark = pytest.mark.redis

MINUTE = 60_000
START = 1_800_000_000_000


def scheduled(engine: Engine, **config: object) -> tuple[str, int]:
    """A room whose opening is scheduled a minute ahead; (room id, opensAt)."""
    room = make_room(engine, **config)
    engine.set_clock(room, START)  # pinned: times below are exact
    opens_at = START + MINUTE
    engine.open(room, opens_at)
    return room, opens_at


def salt_of(engine: Engine, room: str) -> bytes:
    """The opening's secret salt: read from Redis, as only a test may."""
    return bytes.fromhex(engine.redis.hget(engine.keys.room(room), "dsl") or "")


def test_scheduling_commits_the_draw_at_once_and_keeps_the_seed_secret(engine: Engine) -> None:
    room, _ = scheduled(engine)
    public = engine.get_room(room)["draw"]
    assert set(public) == {"commitment", "committedAt"}
    assert public["committedAt"] == engine.stats(room).now_ms
    seed = engine.redis.hget(engine.keys.room(room), "dsd")
    assert public["commitment"] == draw.commitment(seed)
    # Resuming a paused room keeps the committed seed (the API has no reschedule).
    engine.pause(room)
    engine.open(room)
    assert engine.get_room(room)["draw"] == public


def test_an_opening_now_has_no_pool_and_no_draw(engine: Engine) -> None:
    room = make_room(engine)
    engine.open(room)
    assert engine.get_room(room)["draw"] is None
    assert engine.tick(room).draw_due is False


def test_a_reroll_publishes_a_new_commitment_and_lists_the_old_as_withdrawn(
    engine: Engine,
) -> None:
    room, _ = scheduled(engine)
    first = engine.get_room(room)["draw"]
    engine.shift_clock(room, 5_000)
    second = engine.reroll_draw(room)
    assert second["commitment"] != first["commitment"]
    assert second["committedAt"] == first["committedAt"] + 5_000
    assert second["withdrawn"] == [
        {"commitment": first["commitment"], "committedAt": first["committedAt"],
         "withdrawnAt": second["committedAt"]}
    ]  # fmt: skip


def test_the_line_is_in_drawn_order_over_thousands_of_entrants(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room, _ = scheduled(engine, holdScore=70, ratePerMinute=60, maxWaiting=100_000)
    rng = random.Random(23)
    vids = [f"v{rng.getrandbits(64):016x}" for _ in range(3_000)]
    tickets = {}
    for i, vid in enumerate(vids):
        tickets[vid] = engine.enter(room, vid, "s", 80 if i % 10 == 0 else 10).ticket
    for vid in vids[1::97]:  # some leave before the draw: not entrants
        engine.leave(room, vid, tickets[vid], 1)
    gone = set(vids[1::97])
    engine.shift_clock(room, MINUTE)
    assert engine.poll(room, vids[2], tickets[vids[2]], 1).admission is None  # not drawn yet
    assert engine.tick(room).draw_due  # and the tick made the draw
    later = engine.enter(room, "late", "s", 10)  # after opensAt: FIFO, behind the pool

    public = engine.get_room(room)["draw"]
    seed, salt = public["seed"], salt_of(engine, room)
    entrants = [draw.entrant_id(salt, v) for v in vids if v not in gone]
    expected = draw.drawn_order(seed, entrants)
    assert engine.drawn_entrants(room) == expected
    assert public["entrants"] == len(expected) and public["root"] == draw.tree_root(expected)
    # Held or not, every pool spot has its drawn key; the line (eligible ones) is in that order.
    vid_of = {draw.entrant_id(salt, v): v for v in vids}
    eligible = [vid_of[e] for e in expected if vids.index(vid_of[e]) % 10 != 0]
    base = engine.keys.room_base(room)
    line = redis_client.zrange(base + "line", 0, -1)
    dealt = engine.stats(room).dealt_total  # pinned at opensAt: nothing earned yet
    assert dealt == 0 and line == [*eligible, "late"] and later.position == len(line)
    held = redis_client.zrange(base + "b:80", 0, -1, withscores=True)
    ranks = {e: r for r, e in enumerate(expected)}
    assert all(key == drawn_key(ranks[draw.entrant_id(salt, v)], len(expected)) for v, key in held)
    # The visitor sees the published place: the poll's position is the rank among the eligible.
    for place in (5, 400, 2_000):
        vid = line[place - 1]
        assert engine.poll(room, vid, tickets[vid], 1).position == place


def test_the_drain_admits_in_drawn_order(engine: Engine) -> None:
    room, _ = scheduled(engine, ratePerMinute=60)
    vids = [f"v{i}" for i in range(10)]
    tickets = {vid: engine.enter(room, vid, "s", 10).ticket for vid in vids}
    engine.shift_clock(room, MINUTE)
    engine.tick(room)
    salt = salt_of(engine, room)
    vid_of = {draw.entrant_id(salt, v): v for v in vids}
    expected = [vid_of[e] for e in engine.drawn_entrants(room)]
    admitted: list[str] = []
    for _ in range(12):
        engine.shift_clock(room, 1_000)
        for vid in expected:
            if vid not in admitted and engine.poll(room, vid, tickets[vid], 1).admission:
                admitted.append(vid)
    assert admitted == expected


def test_a_close_keeps_a_made_draw_and_drops_one_not_made(engine: Engine) -> None:
    room, _ = scheduled(engine)
    engine.enter(room, "a", "s", 10)
    engine.close(room)
    assert engine.get_room(room)["draw"] is None  # withdrawn with its pool
    engine.open(room, engine.stats(room).now_ms + MINUTE)
    engine.enter(room, "a", "s", 10)
    engine.shift_clock(room, MINUTE)
    engine.tick(room)
    made = engine.get_room(room)["draw"]
    engine.close(room)
    assert engine.get_room(room)["draw"] == made and len(engine.drawn_entrants(room)) == 1
