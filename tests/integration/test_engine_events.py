"""Scheduled events in the scripts (docs/operators.md, "Scheduled events"): an event's overrides
apply from its startsAt to its endsAt on the room's clock, crossed inside the scripts (the ticker's
tick, with nobody polling), once, burst-free, and the room's own settings apply outside."""

from __future__ import annotations

import multiprocessing as mp
from collections import Counter
from typing import Any

import pytest

from anteroom.engine import Engine
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line import spot_record
from anteroom.queue.line.far_poll import answer_far
from anteroom.queue.line.line_blocks import block_of
from anteroom.queue.rooms import room_events
from helpers import carried_claims, make_room

pytestmark = pytest.mark.redis

SECOND = 1_000


def pinned_room(engine: Engine, **config: Any) -> tuple[str, int]:
    """An open room on a pinned clock (it moves only when the test moves it), and its now."""
    room = make_room(engine, abandonAfterSec=86_400, **config)
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)
    engine.open(room)
    return room, now


def schedule(engine: Engine, room: str, *events: dict[str, Any]) -> list[dict[str, Any]]:
    """Write ``events`` (ids given here) as the management API does, through the engine."""
    listed = [{"id": room_events.new_id()} | e for e in events]
    version = engine.get_room(room)["eventsVersion"]
    engine.set_events(room, version, sorted(listed, key=lambda e: e["startsAt"]))
    return listed


def fill(engine: Engine, room: str, n: int) -> None:
    for i in range(n):
        engine.enter(room, f"v{i:04d}", f"s{i}", 10)


def dealt_per_second(engine: Engine, room: str, seconds: int) -> list[int]:
    """Tick once a second for ``seconds`` (as the ticker does); what each tick dealt."""
    out = []
    for _ in range(seconds):
        engine.shift_clock(room, SECOND)
        out.append(engine.tick(room).dealt)
    return out


def test_an_event_sets_the_rate_for_its_window_only_with_nobody_polling(engine: Engine) -> None:
    room, t0 = pinned_room(engine, ratePerMinute=60)
    fill(engine, room, 400)
    schedule(
        engine,
        room,
        {
            "startsAt": t0 + 10 * SECOND,
            "endsAt": t0 + 20 * SECOND,
            "overrides": {"ratePerMinute": 600},
        },
    )
    dealt = dealt_per_second(engine, room, 30)
    # one a second at the room's rate, ten a second in the event's window, one again after
    assert sum(dealt[:10]) == 10
    assert sum(dealt[10:20]) == 100
    assert sum(dealt[20:]) == 10
    assert engine.redis.hget(engine.keys.room(room), "evo") is None  # nothing left to come


def test_a_jump_across_a_whole_event_is_burst_free(engine: Engine) -> None:
    room, t0 = pinned_room(engine, ratePerMinute=60)
    fill(engine, room, 100)
    schedule(
        engine,
        room,
        {
            "startsAt": t0 + 5 * SECOND,
            "endsAt": t0 + 65 * SECOND,
            "overrides": {"ratePerMinute": 6000},
        },
    )
    engine.shift_clock(room, 3_600 * SECOND)  # nobody called for an hour: both edges passed
    assert engine.tick(room).dealt == 1  # the bank holds one second of the rate now in force


def test_reject_in_an_event_refuses_newcomers_and_keeps_those_waiting(engine: Engine) -> None:
    room, t0 = pinned_room(engine, ratePerMinute=1)
    fill(engine, room, 3)
    before = [e.visitor for e in engine.line(room)]
    schedule(
        engine,
        room,
        {"startsAt": t0 + SECOND, "endsAt": t0 + 60 * SECOND, "overrides": {"mode": "reject"}},
    )
    engine.enter(room, "early", "s-early", 10)  # before startsAt: taken
    engine.shift_clock(room, SECOND)
    with pytest.raises(eng.RoomClosed):
        engine.enter(room, "late", "s-late", 10)
    assert [e.visitor for e in engine.line(room)] == [*before, "early"]
    engine.shift_clock(room, 59 * SECOND)
    assert engine.enter(room, "after", "s-after", 10).status == "waiting"


def test_capacity_and_admission_life_follow_the_event(engine: Engine) -> None:
    room, t0 = pinned_room(engine, ratePerMinute=6000, admissionTtlSec=300)
    overrides = {"mode": "passthrough", "capacity": 2, "admissionTtlSec": 60}
    schedule(engine, room, {"startsAt": t0, "endsAt": t0 + 60 * SECOND, "overrides": overrides})
    answers = [engine.enter(room, f"v{i}", f"s{i}", 10) for i in range(4)]
    assert [a.status for a in answers] == ["admitted", "admitted", "waiting", "waiting"]
    admission = answers[0].admission
    assert admission is not None and admission.expires_ms - admission.issued_ms == 60 * SECOND


def test_a_stale_write_of_the_events_is_refused(engine: Engine) -> None:
    room, t0 = pinned_room(engine)
    version = engine.get_room(room)["eventsVersion"]
    event = {"id": "ev1", "startsAt": t0 + SECOND, "endsAt": t0 + 2 * SECOND}
    engine.set_events(room, version, [event | {"overrides": {"ratePerMinute": 5}}])
    with pytest.raises(eng.EventsChanged):
        engine.set_events(room, version, [])  # written by someone else since it was read
    assert [e["id"] for e in engine.get_room(room)["events"]] == ["ev1"]


def _tick_until(url: str, room: str, end_ms: int, worker: int, started: Any, out: Any) -> None:
    """A process ticking and entering as another instance would, until the clock reaches
    ``end_ms`` (the test moves it)."""
    engine = Engine(connect(url, timeout=30))
    started.wait()
    calls = 0
    while engine.stats(room).now_ms < end_ms:
        engine.tick(room)
        calls += 1  # newcomers run the enter script, which crosses boundaries too
        engine.enter(room, f"w{worker}-{calls}", "s", 10)
    out.put(calls)


@pytest.mark.slow
def test_several_instances_cross_each_boundary_once(engine: Engine, redis_url: str) -> None:
    """Four processes tick the room while the test moves its clock through an event: the
    admissions dealt are those of the rates in force, not a boundary crossed four times."""
    room, t0 = pinned_room(engine, ratePerMinute=60)
    fill(engine, room, 300)
    event = {"startsAt": t0 + 5 * SECOND, "endsAt": t0 + 10 * SECOND}
    schedule(engine, room, event | {"overrides": {"ratePerMinute": 1200}})
    end = t0 + 15 * SECOND
    ctx = mp.get_context("spawn")
    started, out = ctx.Barrier(5), ctx.Queue()
    workers = [
        ctx.Process(target=_tick_until, args=(redis_url, room, end, w, started, out))
        for w in range(4)
    ]
    for worker in workers:
        worker.start()
    started.wait(timeout=120)
    while engine.stats(room).now_ms < end:
        engine.shift_clock(room, 100)  # a tenth of a second at a time
        engine.tick(room)
    calls = [out.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    # 5 s at 1/s, 5 s at 20/s, 5 s at 1/s, give or take one admission at each edge
    assert 108 <= engine.stats(room).dealt_total <= 112
    assert all(calls)  # every other instance ran its scripts while the clock went through


def test_a_far_ticket_is_never_answered_across_an_event_s_boundary(engine: Engine) -> None:
    """The far poll (the snapshot it is answered from, and the full poll it hands on to) keeps
    to the settings in force: once an event turning the room random has started, a far ticket
    gets odds."""
    room, t0 = pinned_room(engine, ratePerMinute=1, maxWaiting=10_000)
    answers = {f"v{i:04d}": engine.enter(room, f"v{i:04d}", f"s{i}", 10) for i in range(2_600)}
    last = answers["v2599"]
    assert last.position == 2_600 and last.order_key is not None  # a far ticket
    carried = carried_claims(room, "v2599", last)
    schedule(
        engine,
        room,
        {"startsAt": t0 + SECOND, "endsAt": t0 + 60 * SECOND, "overrides": {"mode": "random"}},
    )

    def poll() -> Any:
        return engine.poll(room, "v2599", last.ticket or 0, 1, last.session_jti, carried=carried)

    assert poll().position == 2_600  # answered from a snapshot of the fifo room
    snapshot = engine.snapshots.get(room)
    assert snapshot is not None and snapshot.boundary_ms == t0 + SECOND
    # a snapshot read before the boundary never answers at or after it (its clock runs on)
    assert answer_far(snapshot, t0 + SECOND - 1, "v2599", last.ticket or 0, 1, carried)
    assert answer_far(snapshot, t0 + SECOND, "v2599", last.ticket or 0, 1, carried) is None
    engine.shift_clock(room, SECOND)
    engine.snapshots.forget(room)  # a second has passed: the next far poll reads it again
    answer = poll()  # nobody has crossed the boundary yet: the full poll crosses it
    assert answer.position is None and answer.odds == pytest.approx(1 / 2_600, rel=1e-3)


def test_an_event_s_mode_stands_under_the_safety_net_as_the_room_s_own(engine: Engine) -> None:
    """A calm safety net admits everyone whatever the mode but reject; an event's mode takes the
    room's own place under it (calm: everyone in; reject: nobody new)."""
    net = {"activeSessions": 1_000, "arrivalsPerMinute": 1_000, "coolDownSec": 60}
    room, t0 = pinned_room(engine, ratePerMinute=1, safetyNet=net)
    assert engine.enter(room, "a", "sa", 10).status == "admitted"  # calm: passthrough
    schedule(
        engine, room, {"startsAt": t0, "endsAt": t0 + 60 * SECOND, "overrides": {"mode": "reject"}}
    )
    with pytest.raises(eng.RoomClosed):
        engine.enter(room, "b", "sb", 10)
    engine.shift_clock(room, 60 * SECOND)  # the event is over: calm admits again
    assert engine.enter(room, "c", "sc", 10).status == "admitted"
    engine.update_room(room, {"mode": "reject"})  # the room's own reject holds while calm too
    with pytest.raises(eng.RoomClosed):
        engine.enter(room, "d", "sd", 10)


def prequeue_room(engine: Engine, ahead: int = 3) -> tuple[str, int, dict[str, Any]]:
    """A room at one admission a second with ``ahead`` in line, and an event whose pre-queue
    opens 10 s from now and starts at 20 s (rate 600 from then)."""
    room, t0 = pinned_room(engine, ratePerMinute=60)
    for i in range(ahead):
        engine.enter(room, f"early{i}", f"se{i}", 10)
    event = {"startsAt": t0 + 20 * SECOND, "endsAt": t0 + 60 * SECOND,
             "preQueueOpensAt": t0 + 10 * SECOND, "overrides": {"ratePerMinute": 600}}  # fmt: skip
    (written,) = schedule(engine, room, event)
    return room, t0, written


def drawn_order(engine: Engine, room: str, vids: list[str], first_ticket: int) -> list[str]:
    """The pre-queue's draw as docs/draw.md states it, computed here from the room's secret seed."""
    import hashlib

    seed = engine.redis.hget(engine.keys.room(room), "seed")

    def number(vid: str) -> int:
        return int(hashlib.sha1(f"{seed}:{first_ticket}:{vid}".encode()).hexdigest()[:13], 16)

    return sorted(vids, key=lambda v: (number(v), v))


def test_an_event_s_pre_queue_waits_for_its_start_and_is_drawn_among_itself(
    engine: Engine,
) -> None:
    room, t0, _ = prequeue_room(engine)
    dealt_per_second(engine, room, 10)  # the three ahead go in at the room's rate
    assert engine.stats(room).dealt_total == 3 and engine.stats(room).waiting == 0
    # the pre-queue opens: newcomers wait, even with nobody ahead and admissions earned
    entrants = [f"p{i:03d}" for i in range(300)]
    answers = {vid: engine.enter(room, vid, "s-" + vid, 10) for vid in entrants}
    first = answers["p000"]
    assert first.status == "waiting" and first.position is None and first.order_key is None
    assert first.opens_at_ms == t0 + 20 * SECOND  # the page counts down to the draw
    assert dealt_per_second(engine, room, 9) == [0] * 9  # nobody before startsAt
    # at startsAt: drawn among themselves, then admitted at the event's rate in that order
    engine.shift_clock(room, SECOND)
    engine.tick(room)
    expected = drawn_order(engine, room, entrants, first.ticket or 0)
    assert expected != entrants  # (a draw: 300 in arrival order would be 1 in 300!)
    gone = engine.stats(room).dealt_total - 3  # admitted since, from the top of the draw
    assert [e.visitor for e in engine.line(room)] == expected[gone : gone + 200]
    later = [engine.enter(room, f"z{i}", f"sz{i}", 10) for i in range(3)]
    waiting = engine.stats(room).waiting
    assert [a.position for a in later] == [waiting - 2, waiting - 1, waiting]  # behind them all
    again = engine.enter(room, expected[250], "s-" + expected[250], 10)
    assert again.position is not None and again.order_key is not None  # placed now
    before = engine.stats(room).dealt_total
    dealt_per_second(engine, room, 2)
    assert engine.stats(room).dealt_total - before == 20  # at the event's rate
    head = engine.line(room)[0].visitor
    assert head == expected[engine.stats(room).dealt_total - 3]


def test_those_in_line_before_a_pre_queue_stay_ahead_of_it(engine: Engine) -> None:
    room, _, _ = prequeue_room(engine, ahead=30)  # 30 ahead at 1 a second: some still wait
    engine.shift_clock(room, 10 * SECOND)
    engine.enter(room, "p1", "s-p1", 10)
    engine.enter(room, "p2", "s-p2", 10)
    engine.shift_clock(room, 10 * SECOND)
    engine.tick(room)
    line = [e.visitor for e in engine.line(room)]
    assert line[: len(line) - 2] == [f"early{i}" for i in range(30 - len(line) + 2, 30)]
    assert sorted(line[-2:]) == ["p1", "p2"]


def test_a_far_ticket_in_a_pre_queue_is_answered_by_redis(engine: Engine) -> None:
    room, t0, _ = prequeue_room(engine, ahead=0)
    engine.shift_clock(room, 10 * SECOND)
    answers = [engine.enter(room, f"p{i:04d}", f"s{i}", 10) for i in range(300)]
    last = answers[-1]
    answer = engine.poll(room, "p0299", last.ticket or 0, 1, last.session_jti)
    assert answer.position is None and answer.opens_at_ms == t0 + 20 * SECOND


def test_what_an_event_earned_before_its_end_is_dealt_after_it_when_ticked_off_the_edge(
    engine: Engine,
) -> None:
    """Ticks a second apart, the event's end half a second after one: the half second it
    earned at its own rate is dealt by the next tick, not cut down to the room's rate."""
    room, t0 = pinned_room(engine, ratePerMinute=1)
    fill(engine, room, 200)
    schedule(
        engine,
        room,
        {"startsAt": t0 + 500, "endsAt": t0 + 10_500, "overrides": {"ratePerMinute": 600}},
    )
    dealt = dealt_per_second(engine, room, 12)
    assert sum(dealt) == 100, dealt  # ten seconds at ten a second, whatever the ticks' phase


def _enter_through(url: str, room: str, end_ms: int, worker: int, started: Any, out: Any) -> None:
    """Another instance: ticks, enters newcomers and takes small steps of any pre-queue draw
    due (as a ticker sharing it with the others would), until the clock reaches ``end_ms``."""
    engine = Engine(connect(url, timeout=30))
    started.wait()
    entered = []
    while engine.stats(room).now_ms < end_ms:
        engine.tick(room)
        engine.draw_prequeue(room, batch=7)
        vid = f"w{worker}-{len(entered)}"
        engine.enter(room, vid, "s", 10)
        entered.append(vid)
    out.put(entered)


@pytest.mark.slow
def test_several_instances_share_a_pre_queue_and_its_draw(engine: Engine, redis_url: str) -> None:
    """Four processes enter and tick while the test moves the clock through an event's
    pre-queue and its start: everyone is admitted or in line once, the pre-queue's entrants in
    their drawn order, behind those before them and ahead of those after, drawn once."""
    # fast enough that those before the pre-queue are all let in during it: the drain must stop
    room, t0 = pinned_room(engine, ratePerMinute=6_000)
    event = {"startsAt": t0 + 5 * SECOND, "endsAt": t0 + 60 * SECOND,
             "preQueueOpensAt": t0 + 2 * SECOND, "overrides": {"ratePerMinute": 600}}  # fmt: skip
    schedule(engine, room, event)
    end = t0 + 8 * SECOND
    ctx = mp.get_context("spawn")
    started, out = ctx.Barrier(5), ctx.Queue()
    workers = [
        ctx.Process(target=_enter_through, args=(redis_url, room, end, w, started, out))
        for w in range(4)
    ]
    for worker in workers:
        worker.start()
    started.wait(timeout=120)
    while engine.stats(room).now_ms < end:
        engine.shift_clock(room, 50)
        engine.tick(room)
    entered = [vid for _ in workers for vid in out.get(timeout=60)]
    for worker in workers:
        worker.join(timeout=30)
    keys = engine.keys.room_keys(room)
    first, last = (int(x) for x in engine.redis.hmget(keys["room"], "pqf", "pqt"))
    assert engine.redis.hget(keys["room"], "pqs") is None  # the draw is made and done
    # every visitor once: admitted (by deal number) or waiting in line (by order key)
    spots = {
        vid: spot_record.parse(raw) for vid, raw in engine.redis.hgetall(keys["spots"]).items()
    }
    line = dict(engine.redis.zrange(keys["line"], 0, -1, withscores=True))
    assert sorted(spots) == sorted(entered)
    admitted = {vid for vid, f in spots.items() if f["state"] == "a"}
    assert set(line) == set(entered) - admitted
    assert len(admitted) == engine.stats(room).dealt_total
    ticket = {vid: int(f["ticket"]) for vid, f in spots.items()}
    before = sorted((v for v in entered if ticket[v] < first), key=ticket.__getitem__)
    inside = [v for v in entered if first <= ticket[v] <= last]
    after = sorted((v for v in entered if ticket[v] > last), key=ticket.__getitem__)
    assert len(before) > 10 and len(inside) > 10 and len(after) > 10  # each group had some
    served = sorted(
        entered, key=lambda v: (0, int(spots[v]["dealNumber"])) if v in admitted else (1, line[v])
    )
    assert served == before + drawn_order(engine, room, inside, first) + after
    # drawn once: the range's keys, each taken once (a second placing would have moved some
    # again), and the line's block counts match it
    drawn_keys = sorted(int(line[v]) - 2**52 for v in inside if v in line)
    assert len(set(drawn_keys)) == len(drawn_keys)
    assert drawn_keys == list(range(first + len(inside) - len(drawn_keys), first + len(inside)))
    counted = {b: int(n) for b, n in engine.redis.hgetall(keys["blk"]).items() if int(n)}
    assert counted == dict(Counter(block_of(int(key)) for key in line.values()))


def test_a_pre_queue_opening_before_the_last_one_is_drawn_opens_once_it_is(
    engine: Engine,
) -> None:
    """A short event's pre-queue closes at its start; the next event's opens half a second
    later, before the tick that makes the first draw: it opens when that draw is made."""
    room, t0 = pinned_room(engine, ratePerMinute=60)
    first = {"startsAt": t0 + 2 * SECOND, "endsAt": t0 + 2 * SECOND + 200,
             "preQueueOpensAt": t0 + SECOND, "overrides": {"ratePerMinute": 600}}  # fmt: skip
    second = {"startsAt": t0 + 60 * SECOND, "endsAt": t0 + 120 * SECOND,
              "preQueueOpensAt": t0 + 2_500, "overrides": {"ratePerMinute": 600}}  # fmt: skip
    schedule(engine, room, first, second)
    engine.set_clock(room, t0 + SECOND)
    engine.enter(room, "a", "sa", 10)  # in the first pre-queue
    engine.set_clock(room, t0 + 2_600)  # both edges passed with nobody calling
    engine.enter(room, "b", "sb", 10)  # its first draw not made yet: an ordinary place
    engine.tick(room)  # makes the first draw, then opens the second pre-queue
    late = engine.enter(room, "c", "sc", 10)
    assert late.status == "waiting" and late.position is None  # in the second pre-queue
    assert late.opens_at_ms == t0 + 60 * SECOND
    engine.set_clock(room, t0 + 59 * SECOND)
    for _ in range(3):
        engine.tick(room)  # a, then b, admitted at the room's rate; c waits for its draw
    assert engine.poll(room, "c", late.ticket or 0, 1, "sc").status == "waiting"
