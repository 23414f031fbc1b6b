"""Mode random in the scripts (docs/operators.md, "Queueing modes"): each admission drawn among the
eligible waiting with the opening's secret seed, answers with odds instead of a place, and switches
that never lose or reorder anyone."""

from __future__ import annotations

import multiprocessing as mp

import pytest
from test_engine_concurrency import PER_PROCESS, PROCESSES, run_worker
from test_engine_modes import deal_number, fill, fill_ids, line_of, pinned_room

from anteroom.engine import Engine
from helpers import carried_claims, open_room
from reference_model import draw_rank

pytestmark = pytest.mark.redis

SEED = "5eed" * 8  # a fixed opening seed: every draw below is the same on every run


def seeded_room(engine: Engine, **config: object) -> str:
    """A pinned open room in mode random whose opening seed is SEED."""
    room = pinned_room(engine, **({"mode": "random"} | config))
    engine.redis.hset(engine.keys.room(room), "seed", SEED)
    return room


def run_seconds(engine: Engine, room: str, seconds: int) -> int:
    """Let the room's clock run ``seconds``, ticking each second (the bank holds a second's
    worth); returns the number admitted."""
    dealt = 0
    for _ in range(seconds):
        engine.shift_clock(room, 1_000)
        dealt += engine.tick(room).dealt
    return dealt


def admitted(engine: Engine, room: str, vids: list[str]) -> list[str]:
    """Those of ``vids`` admitted, in deal order (read by entering again)."""
    gone = {vid for vid, _ in line_of(engine, room)}
    return sorted((v for v in vids if v not in gone), key=lambda v: deal_number(engine, room, v))


def test_admissions_are_spread_over_the_whole_line(engine: Engine) -> None:
    room = seeded_room(engine, ratePerMinute=60)
    vids = fill(engine, room, 100)
    assert run_seconds(engine, room, 20) == 20  # the rate still holds: one a second
    ranks = sorted(vids.index(v) for v in admitted(engine, room, vids))
    # fifo would have admitted ranks 0-19; a draw reaches the back of the line as often as
    # the front (each quarter of the line gets some, the mean is near the middle)
    assert ranks != list(range(20))
    assert all(any(q * 25 <= r < (q + 1) * 25 for r in ranks) for q in range(4)), ranks
    assert 30 <= sum(ranks) / len(ranks) <= 70


def test_the_draw_is_reproducible_from_the_seed(engine: Engine) -> None:
    room = seeded_room(engine, ratePerMinute=60)
    vids = fill(engine, room, 40)
    run_seconds(engine, room, 10)
    # what we recompute from the seed and the line: rank H(seed, k) mod n of what is left
    line, expected = list(vids), []
    for k in range(1, 11):
        expected.append(line.pop(draw_rank(SEED, k, len(line))))
    assert admitted(engine, room, vids) == expected
    # and another room with another seed draws others
    other = pinned_room(engine, slug="other", ratePerMinute=60, mode="random")
    fill(engine, other, 40)
    run_seconds(engine, other, 10)
    assert admitted(engine, other, vids) != expected


def test_a_waiting_spot_has_odds_and_no_place(engine: Engine) -> None:
    room = seeded_room(engine, ratePerMinute=30)
    fill(engine, room, 120)
    answer = engine.enter(room, "v100", "s-v100", 10)
    assert answer.status == "waiting" and answer.position is None and answer.eta_seconds is None
    assert answer.odds == 0.25  # 30 a minute over 120 waiting
    # a far ticket's poll is still answered by the full poll, with odds
    polled = engine.poll(room, "v100", answer.ticket or 0, answer.generation, near_head=False)
    assert polled.position is None and polled.odds == 0.25
    # capacity bounds the odds: 4 free places a minute over 120
    engine.update_room(room, {"capacity": 4})
    assert engine.enter(room, "v100", "s-v100", 10).odds == pytest.approx(4 / 120, rel=1e-3)
    # a fifo room's answers carry none
    engine.update_room(room, {"mode": "fifo"})
    fifo = engine.enter(room, "v100", "s-v100", 10)
    assert fifo.odds is None and fifo.position == 101


def test_a_far_ticket_in_a_random_room_is_never_answered_from_the_snapshot(
    engine: Engine,
) -> None:
    room = pinned_room(engine, ratePerMinute=1, maxWaiting=10_000)
    answers = {vid: engine.enter(room, vid, "s-" + vid, 10) for vid in fill_ids(2_600)}
    last = answers["v2599"]
    assert last.position == 2_600 and last.order_key is not None  # a far ticket
    carried = carried_claims(room, "v2599", last)
    engine.update_room(room, {"mode": "random"})
    answer = engine.poll(room, "v2599", last.ticket or 0, 1, last.session_jti, carried=carried)
    assert answer.position is None and answer.odds == pytest.approx(1 / 2_600, rel=1e-3)


def test_random_cadence_notices_an_admission_within_its_life(engine: Engine) -> None:
    room = seeded_room(engine, ratePerMinute=60, admissionTtlSec=30, pollBudgetPerSecond=100)
    fill(engine, room, 50)
    # 50 spots at 100 polls a second could each poll every 0.5 s: 2 s is the floor
    assert engine.enter(room, "v010", "s-v010", 10).poll_after_ms == 2_000
    fill(engine, room, 3_000, prefix="w")  # 3,050 at 100 a second: 30.5 s, but the life is 30 s
    assert engine.enter(room, "v010", "s-v010", 10).poll_after_ms == 10_000


def test_capacity_holds_in_a_random_room(engine: Engine) -> None:
    room = seeded_room(engine, ratePerMinute=600, capacity=5, admissionTtlSec=30)
    fill(engine, room, 30)
    run_seconds(engine, room, 3)
    assert engine.stats(room).active == 5 and len(line_of(engine, room)) == 25
    engine.shift_clock(room, 31_000)  # five expire: five more drawn
    assert engine.tick(room).dealt == 5
    assert engine.stats(room).active == 5 and engine.stats(room).peak_active == 5


def test_switching_to_random_and_back_keeps_the_line_in_its_order(engine: Engine) -> None:
    room = seeded_room(engine, ratePerMinute=60, mode="fifo")
    fill(engine, room, 30)
    before = line_of(engine, room)
    engine.update_room(room, {"mode": "random"})
    assert line_of(engine, room) == before  # a switch moves nobody
    assert run_seconds(engine, room, 5) == 5
    engine.update_room(room, {"mode": "fifo"})
    after = line_of(engine, room)
    assert len(after) == 25 and after == [spot for spot in before if spot in after]
    assert after != before[5:]  # the draw did not take the first five
    # held spots stay held through a draw, and abandoned ones go as the fifo drain drops them
    engine.update_room(room, {"mode": "random", "holdScore": 50})
    engine.shift_clock(room, 400_000)  # everyone left unpolled past abandonAfterSec
    assert engine.enter(room, "bot", "s-bot", 90).status == "held"
    assert engine.tick(room).dealt == 0  # the abandoned are dropped, never admitted
    assert engine.stats(room).held == 1 and line_of(engine, room) == []


def test_out_of_order_counts_ignore_draws(engine: Engine) -> None:
    room = seeded_room(engine, ratePerMinute=60)
    fill(engine, room, 20)
    run_seconds(engine, room, 10)
    fields = engine.redis.hmget(engine.keys.room(room), "nlate", "nooo")
    assert fields == ["10", "0"]  # counted as later arrivals, never as out of order


@pytest.mark.slow
def test_eight_processes_in_a_random_room(redis_url: str, engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60_000, capacity=3, admissionTtlSec=300, mode="random")
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    entered = ctx.Barrier(PROCESSES)
    workers = [
        ctx.Process(target=run_worker, args=(redis_url, room, w, start, entered, out))
        for w in range(PROCESSES)
    ]
    for p in workers:
        p.start()
    start.set()
    results = [out.get(timeout=120) for _ in workers]
    for p in workers:
        p.join(timeout=30)
    assert all(not r["left_waiting"] for r in results), "every visitor got in"
    stats = engine.stats(room)
    assert stats.peak_active <= 3
    deals = sorted((d, t) for r in results for _, t, d in r["admitted"])
    assert [d for d, _ in deals] == list(range(1, PROCESSES * PER_PROCESS + 1))
    assert [t for _, t in deals] != sorted(t for _, t in deals)  # drawn, not in ticket order
