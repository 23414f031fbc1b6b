"""Fair order: the pre-queue (a lottery until its draw), post-open arrivals, held spots and
holdScore changes."""

from __future__ import annotations

import pytest
import redis

from anteroom.engine import Engine
from helpers import admitted_in_turn, make_room

pytestmark = pytest.mark.redis


def prequeue(engine: Engine, slug: str = "drop", **config: object) -> tuple[str, int]:
    """A room opening in a minute; returns (room id, opensAt)."""
    room = make_room(engine, slug=slug, **config)
    opens_at = engine.stats(room).now_ms + 60_000
    engine.open(room, opens_at)
    return room, opens_at


def drain_order(engine: Engine, room: str) -> list[str]:
    return [entry.visitor for entry in engine.line(room)]


def test_pool_order_is_a_lottery_not_arrival_order(engine: Engine) -> None:
    room, opens_at = prequeue(engine)
    arrivals = [f"v{i:02d}" for i in range(40)]
    for vid in arrivals:
        answer = engine.enter(room, vid, "s-" + vid, 10)
        assert answer.status == "waiting" and answer.opens_at_ms == opens_at
    order = drain_order(engine, room)
    assert sorted(order) == arrivals and order != arrivals
    # Positions answered to visitors agree with the line as the drain sees it.
    for entry in engine.line(room)[:5]:
        assert engine.poll(room, entry.visitor, entry.ticket, 1).position == entry.position


def test_two_openings_shuffle_differently(engine: Engine) -> None:
    orders = []
    for _ in range(2):
        room, _ = prequeue(engine)
        for i in range(40):
            engine.enter(room, f"v{i:02d}", f"s{i}", 10)
        orders.append(drain_order(engine, room))
        engine.delete_room(room)
    assert orders[0] != orders[1]


def test_post_open_arrivals_queue_behind_the_whole_pool(engine: Engine) -> None:
    room, _ = prequeue(engine, ratePerMinute=1)
    pool = [f"early{i}" for i in range(20)]
    for vid in pool:
        engine.enter(room, vid, "s", 10)
    engine.shift_clock(room, 60_500)
    late = [f"late{i}" for i in range(10)]
    answers = [engine.enter(room, vid, "s", 10) for vid in late]
    order = drain_order(engine, room)
    admitted = 20 - sum(1 for v in order if v.startswith("early"))
    assert order[-10:] == late
    assert {v for v in order[: 20 - admitted]} <= set(pool)
    assert [a.position for a in answers] == list(range(21 - admitted, 31 - admitted))


def test_pool_waits_for_its_draw_then_drains_in_drawn_order(engine: Engine) -> None:
    room, _ = prequeue(engine, ratePerMinute=60)
    for i in range(10):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    tickets = {e.visitor: e.ticket for e in engine.line(room)}
    engine.shift_clock(room, 61_000)
    assert engine.poll(room, "v0", tickets["v0"], 1).admission is None  # nobody before the draw
    assert engine.stats(room).dealt_total == 0
    engine.draw(room)  # the room ticker's job at opensAt (test_draw_service.py checks the order)
    expected = drain_order(engine, room)
    assert admitted_in_turn(engine, room, expected, tickets) == expected


def test_held_spot_keeps_a_ticket_but_is_never_drained(engine: Engine) -> None:
    room = make_room(engine, holdScore=70, ratePerMinute=60)
    engine.open(room)
    held = engine.enter(room, "suspect", "s0", 80)
    assert (held.status, held.position, held.eta_seconds) == ("held", None, None)
    assert held.poll_after_ms == 15_000 and held.ticket == 1
    engine.enter(room, "human", "s1", 10)
    engine.shift_clock(room, 1_000)
    assert engine.poll(room, "human", 2, 1).status == "admitted"
    engine.shift_clock(room, 10_000)
    assert engine.poll(room, "suspect", 1, 1).status == "held"
    stats = engine.stats(room)
    assert (stats.held, stats.waiting, stats.dealt_total) == (1, 0, 1)


def test_hold_score_change_applies_at_once_and_keeps_the_original_place(engine: Engine) -> None:
    room = make_room(engine, holdScore=70, ratePerMinute=1)
    engine.open(room)
    engine.enter(room, "a", "sa", 10)
    engine.enter(room, "b", "sb", 75)
    engine.enter(room, "c", "sc", 20)
    assert engine.poll(room, "c", 3, 1).position == 2
    engine.update_room(room, {"holdScore": 80})  # raising it releases b into its own place
    assert engine.poll(room, "b", 2, 1).position == 2
    assert engine.poll(room, "c", 3, 1).position == 3
    assert [e.visitor for e in engine.line(room)] == ["a", "b", "c"]
    engine.update_room(room, {"holdScore": 15})  # lowering it holds c and b at once
    assert engine.poll(room, "b", 2, 1).status == "held"
    assert engine.poll(room, "c", 3, 1).status == "held"
    assert engine.poll(room, "a", 1, 1).position == 1
    assert engine.stats(room).held == 2


def test_a_new_session_score_keeps_the_place(engine: Engine) -> None:
    room = make_room(engine, holdScore=70, ratePerMinute=1)
    engine.open(room)
    engine.enter(room, "a", "sa", 10)
    engine.enter(room, "b", "sb", 10)
    engine.enter(room, "c", "sc", 10)
    assert engine.enter(room, "b", "sb2", 90).status == "held"
    assert engine.poll(room, "c", 3, 1).position == 2
    back = engine.enter(room, "b", "sb3", 30)
    assert (back.ticket, back.position) == (2, 2)


def test_a_hold_score_change_regroups_a_long_line_in_bounded_steps(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room = make_room(engine, holdScore=70, ratePerMinute=1)
    engine.open(room, engine.stats(room).now_ms + 3_600_000)  # a pool: nobody is admitted
    for i in range(1_300):
        engine.enter(room, f"v{i}", "s", 80 if i % 2 else 10)  # odd tickets held
    base = engine.keys.room_base(room)
    keys = redis_client.zrange(base + "line", 0, -1, withscores=True)
    keys += redis_client.zrange(base + "b:80", 0, -1, withscores=True)
    original = [vid for vid, _ in sorted(keys, key=lambda pair: pair[1])]
    eligible = [e.visitor for e in engine.line(room, 200)]
    assert redis_client.zcard(base + "line") == 650

    engine.update_room(room, {"holdScore": 90})  # releases 650: one step moves them all
    assert redis_client.zcard(base + "line") == 1_300
    assert [e.visitor for e in engine.line(room, 200)] == original[:200]  # at their own places

    engine.update_room(room, {"holdScore": 50})  # holds 650 again: a step reads 1,000 spots
    assert 650 < redis_client.zcard(base + "line") < 1_300  # only part of it regrouped yet
    assert [e.visitor for e in engine.line(room, 200)] == eligible  # never shows a held spot
    for _ in range(2):  # polls carry the rest, a bounded step each
        engine.poll(room, "v0", 1, 1)
    assert redis_client.zcard(base + "line") == 650 and engine.stats(room).held == 650
    last = eligible[-1]  # positions are exact again
    assert engine.poll(room, last, int(last[1:]) + 1, 1).position == 200
