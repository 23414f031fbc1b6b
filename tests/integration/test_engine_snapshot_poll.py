"""The far poll answered from a per-process snapshot (far_poll.py): no Redis call per poll,
positions within the stated bound, and every rule taking effect within the snapshot's age.

Time is controlled, never slept: the room's clock is pinned and shifted in Redis, and the
snapshot cache's and booking's monotonic clock is a stand-in the tests move.
"""

from __future__ import annotations

import multiprocessing as mp
from collections import Counter
from typing import Any

import pytest
import redis

from anteroom.engine import Engine, QueueAnswer
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line import spot_record
from anteroom.queue.line.far_poll import EXACT_WITHIN
from anteroom.queue.line.line_blocks import block_of
from anteroom.sdk.tokens import TicketClaims
from helpers import make_room

pytestmark = pytest.mark.redis

START = 1_800_000_000_000
SPOTS = 2_600


class FakeClock:
    """Monotonic seconds the test moves."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class Calls:
    """Counts the engine's script calls (read-only and writing), on any Redis target."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ops: list[str] = []
        for name in ("_run", "_run_read"):
            original = getattr(engine, name)

            def counted(op: str, *args: Any, _original: Any = original) -> Any:
                self.ops.append(op)
                return _original(op, *args)

            monkeypatch.setattr(engine, name, counted)

    def since(self, mark: int) -> list[str]:
        return self.ops[mark:]


def claims(room: str, vid: str, answer: QueueAnswer) -> TicketClaims:
    """What the ticket the web layer signs for ``answer`` carries (visit/answers.queue_token)."""
    assert answer.ticket is not None
    return TicketClaims(
        room_id=room,
        visitor_id=vid,
        ticket=answer.ticket,
        generation=answer.generation,
        environment="test",
        session_id=answer.session_jti,
        score=answer.score,
        order_key=answer.order_key,
        kept_until=answer.kept_until_ms,
    )


@pytest.fixture
def clock(engine: Engine) -> FakeClock:
    fake = FakeClock()
    engine.snapshots.clock = fake
    engine.bookings.clock = fake
    return fake


def fill(engine: Engine, room: str, spots: int, start: int = 0) -> dict[str, QueueAnswer]:
    return {f"v{i}": engine.enter(room, f"v{i}", f"s{i}", 10) for i in range(start, spots)}


@pytest.fixture
def line(engine: Engine, clock: FakeClock) -> tuple[str, dict[str, QueueAnswer]]:
    room = make_room(engine, ratePerMinute=60, abandonAfterSec=300, maxWaiting=10_000)
    engine.set_clock(room, START)
    engine.open(room)
    return room, fill(engine, room, SPOTS)


def far_poll(engine: Engine, room: str, vid: str, answer: QueueAnswer) -> QueueAnswer:
    assert answer.ticket is not None
    return engine.poll(
        room,
        vid,
        answer.ticket,
        answer.generation,
        answer.session_jti,
        carried=claims(room, vid, answer),
    )


def test_a_far_poll_answers_what_redis_would_without_calling_it(
    engine: Engine, line: tuple[str, dict[str, QueueAnswer]], monkeypatch: pytest.MonkeyPatch
) -> None:
    room, answers = line
    calls = Calls(engine, monkeypatch)
    far = far_poll(engine, room, "v2500", answers["v2500"])
    assert calls.since(0) == ["snapshot"]  # the process's first look at the room
    mark = len(calls.ops)
    for vid in ("v2200", "v2300", "v2599", "v2500"):
        far = far_poll(engine, room, vid, answers[vid])
        exact = engine.poll(room, vid, answers[vid].ticket or 0, 1)
        assert (far.status, far.position, far.eta_seconds, far.poll_after_ms) == (
            exact.status,
            exact.position,
            exact.eta_seconds,
            exact.poll_after_ms,
        )
        assert (far.ticket, far.session_jti, far.score, far.order_key) == (
            exact.ticket,
            exact.session_jti,
            exact.score,
            exact.order_key,
        )
    assert [op for op in calls.since(mark) if op != "poll"] == []  # only the exact ones


def test_the_front_and_old_tickets_go_to_redis(
    engine: Engine, line: tuple[str, dict[str, QueueAnswer]], monkeypatch: pytest.MonkeyPatch
) -> None:
    room, answers = line
    calls = Calls(engine, monkeypatch)
    near = answers[f"v{EXACT_WITHIN}"]  # within the first 1,000 + a second of admissions
    assert far_poll(engine, room, f"v{EXACT_WITHIN}", near).position == near.position
    assert calls.since(0) == ["snapshot", "poll"]  # exact, in one round trip
    mark = len(calls.ops)
    old = answers["v2500"]
    no_far = TicketClaims(room, "v2500", old.ticket or 0, 1, "test", session_id="s1500")
    engine.poll(room, "v2500", old.ticket or 0, 1, old.session_jti, carried=no_far)
    assert calls.since(mark) == ["poll"]  # a ticket without qk/qu: the full poll, one call


def test_positions_stay_within_the_leavers_of_their_own_block(
    engine: Engine, line: tuple[str, dict[str, QueueAnswer]], clock: FakeClock
) -> None:
    room, answers = line
    for i in list(range(100, 160)) + list(range(2_400, 2_450)):  # leavers ahead, some in-block
        assert engine.leave(room, f"v{i}", i + 1, 1)
    clock.now += 1.0  # the next poll reads a new snapshot
    for vid in ("v2300", "v2460", "v2599"):
        far = far_poll(engine, room, vid, answers[vid])
        exact = engine.poll(room, vid, answers[vid].ticket or 0, 1).position or 0
        ticket = answers[vid].ticket or 0
        own_block_leavers = sum(
            1 for i in range(2_400, 2_450) if (i + 1) // 1000 == ticket // 1000 and i + 1 < ticket
        )
        assert far.position is not None
        assert 0 <= far.position - exact <= own_block_leavers


def test_the_snapshot_reads_the_live_line_not_every_block_the_room_had(
    engine: Engine, clock: FakeClock, redis_client: redis.Redis
) -> None:
    room = make_room(engine, ratePerMinute=60_000, maxWaiting=10_000)
    engine.set_clock(room, START)
    engine.open(room)
    answers = fill(engine, room, SPOTS)
    blocks = engine.keys.room_keys(room)["blk"]
    assert redis_client.hexists(blocks, "t0")
    while engine.stats(room).dealt_total < 1_200:  # the drain passes the first block
        engine.shift_clock(room, 1_000)
        engine.tick(room)
    assert not redis_client.hexists(blocks, "t0")  # an emptied ticket block is dropped
    assert int(redis_client.hget(blocks, "t1") or 0) > 0
    clock.now += 1.0
    far = far_poll(engine, room, "v2500", answers["v2500"])
    exact = engine.poll(room, "v2500", answers["v2500"].ticket or 0, 1).position or 0
    assert far.position is not None and 0 <= far.position - exact < 1_000


def test_the_snapshot_is_read_at_most_once_a_second(
    engine: Engine, line: tuple[str, dict[str, QueueAnswer]], clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    room, answers = line
    calls = Calls(engine, monkeypatch)
    first = far_poll(engine, room, "v2500", answers["v2500"])
    for _ in range(10):  # ten seconds of the room's ticker: one admission each
        engine.shift_clock(room, 1_000)
        engine.tick(room)
    clock.now += 0.5
    assert far_poll(engine, room, "v2500", answers["v2500"]).position == first.position
    clock.now += 0.5
    moved = far_poll(engine, room, "v2500", answers["v2500"])
    assert moved.position == (first.position or 0) - 10
    assert calls.ops.count("snapshot") == 2


def test_revocation_close_hold_and_pause_take_effect_within_the_snapshots_age(
    engine: Engine, line: tuple[str, dict[str, QueueAnswer]], clock: FakeClock
) -> None:
    room, answers = line
    far_poll(engine, room, "v2500", answers["v2500"])
    engine.revoke(room, vid="v2500", life_ms=3_600_000)
    engine.revoke(room, jti="s2501", life_ms=3_600_000)
    clock.now += 1.0
    for vid in ("v2500", "v2501"):
        with pytest.raises(eng.SessionRevoked):
            far_poll(engine, room, vid, answers[vid])
    engine.pause(room)
    clock.now += 1.0
    paused = far_poll(engine, room, "v2502", answers["v2502"])
    assert (paused.status, paused.room_status, paused.eta_seconds) == ("waiting", "paused", None)
    engine.open(room)
    engine.update_room(room, {"holdScore": 10})  # score 10 is held now
    clock.now += 1.0
    assert far_poll(engine, room, "v2503", answers["v2503"]).status == "held"
    engine.close(room)
    clock.now += 1.0
    with pytest.raises(eng.TicketGone):
        far_poll(engine, room, "v2504", answers["v2504"])


def test_last_seen_is_booked_in_one_call_per_room_and_a_gone_spot_hears_so(
    engine: Engine, line: tuple[str, dict[str, QueueAnswer]], clock: FakeClock,
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    room, answers = line
    calls = Calls(engine, monkeypatch)
    engine.shift_clock(room, 200_000)  # kept-until is 300 s after entry: short of 3 polls now
    for i in range(2_300, 2_320):
        far_poll(engine, room, f"v{i}", answers[f"v{i}"])
    assert "book_seen_many" not in calls.ops and "poll" not in calls.ops
    assert engine.leave(room, "v2305", 2_306, 1)
    clock.now += 1.0
    assert engine.flush_bookings() == 20
    assert calls.ops.count("book_seen_many") == 1
    record = redis_client.hget(engine.keys.room_keys(room)["spots"], "v2310") or ""
    assert (
        int(spot_record.parse(record)["seen"]) > START + 200_000 + 300_000
    )  # kept beyond abandonAfterSec
    assert engine.bookings.is_gone(room, "v2305", 2_306)
    with pytest.raises(eng.TicketGone):
        far_poll(engine, room, "v2305", answers["v2305"])


def test_a_far_visitor_polling_from_snapshots_is_never_swept(
    engine: Engine, clock: FakeClock
) -> None:
    room = make_room(engine, ratePerMinute=60, abandonAfterSec=60, maxWaiting=10_000)
    engine.set_clock(room, START)
    engine.open(room)
    answers = fill(engine, room, SPOTS)
    engine.pause(room)  # nobody is admitted: the sweep alone may remove spots
    answer = answers["v2500"]
    for _ in range(8):
        engine.shift_clock(room, answer.poll_after_ms)
        clock.now += answer.poll_after_ms / 1000
        while not engine.sweep(room, 10_000)[1]:
            pass
        answer = far_poll(engine, room, "v2500", answer)
        assert answer.status == "waiting"
        engine.flush_bookings()
    assert engine.poll(room, "v2500", 2_501, 1).status == "waiting"
    assert engine.stats(room).waiting < SPOTS  # those who never polled were swept


def sweep_pass(engine: Engine, room: str) -> None:
    while not engine.sweep(room, 10_000)[1]:
        pass


def test_a_far_visitor_books_every_other_poll_and_a_leaver_goes_within_five_intervals(
    engine: Engine, clock: FakeClock, redis_client: redis.Redis
) -> None:
    # one admission a minute: v2500 is hours from the front and told to poll every 5 minutes
    room = make_room(engine, ratePerMinute=1, abandonAfterSec=300, maxWaiting=10_000)
    engine.set_clock(room, START)
    engine.open(room)
    answers = fill(engine, room, SPOTS)
    answer, calls = answers["v2500"], engine.bookings.calls
    for _ in range(8):
        engine.shift_clock(room, answer.poll_after_ms)
        clock.now += answer.poll_after_ms / 1000
        answer = far_poll(engine, room, "v2500", answer)  # the others, silent, stay unswept
        assert answer.status == "waiting"
        engine.flush_bookings()
    interval = answer.poll_after_ms
    assert interval >= 150_000  # far: the interval at which every poll used to book
    assert engine.bookings.calls - calls == 4  # every other poll books, not every one
    # the visitor leaves without a word: kept 3 intervals after its last poll, gone by 5
    engine.pause(room)  # once the silent ones are swept, nobody is admitted in its stead
    spots = engine.keys.room_keys(room)["spots"]
    engine.shift_clock(room, 3 * interval - 1_000)
    sweep_pass(engine, room)
    assert redis_client.hexists(spots, "v2500")
    engine.shift_clock(room, 2 * interval + 61_000)  # and a sweep pass starts within a minute
    sweep_pass(engine, room)
    assert not redis_client.hexists(spots, "v2500")


def far_worker(url: str, room: str, vids: list[str], rounds: int, start: Any, out: Any) -> None:
    """One serving process: answers its visitors' far polls from its own snapshots and books
    their last-seen in batches, while the others do the same and spots ahead leave."""
    engine = Engine(connect(url, timeout=30))
    answers = {vid: engine.enter(room, vid, f"s{vid[1:]}", 10) for vid in vids}  # found again
    start.wait()
    positions, failures = [], []
    for _ in range(rounds):
        for vid in vids:
            try:
                answers[vid] = far_poll(engine, room, vid, answers[vid])
                positions.append(answers[vid].position or 0)
            except eng.EngineError as exc:
                failures.append(f"{vid}: {exc.code}")
        engine.flush_bookings()
    out.put({"positions": positions, "failures": failures})


def leaver(url: str, room: str, tickets: list[int], start: Any) -> None:
    engine = Engine(connect(url, timeout=30))
    start.wait()
    for ticket in tickets:
        engine.leave(room, f"v{ticket - 1}", ticket, 1)
        engine.tick(room)


def test_several_processes_answering_far_polls_keep_the_line_counted(
    engine: Engine, redis_url: str, redis_client: redis.Redis
) -> None:
    room = make_room(engine, ratePerMinute=60, abandonAfterSec=300, maxWaiting=10_000)
    engine.open(room)  # the room's own clock: processes read snapshots as they come
    fill(engine, room, SPOTS)
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(5), ctx.Queue()
    workers = [
        ctx.Process(
            target=far_worker,
            args=(redis_url, room, [f"v{i}" for i in range(2_100 + w, SPOTS, 4)], 3, start, out),
        )
        for w in range(4)
    ]
    leaving = list(range(1_200, 2_000, 3))  # spots ahead of every far visitor leave meanwhile
    workers.append(ctx.Process(target=leaver, args=(redis_url, room, leaving, start)))
    for process in workers:
        process.start()
    results = [out.get(timeout=120) for _ in range(4)]
    for process in workers:
        process.join(timeout=60)
    assert [r["failures"] for r in results] == [[], [], [], []]
    assert min(p for r in results for p in r["positions"]) > EXACT_WITHIN
    keys = engine.keys.room_keys(room)
    line = redis_client.zrange(keys["line"], 0, -1, withscores=True)
    counted = {b: int(n) for b, n in redis_client.hgetall(keys["blk"]).items() if int(n)}
    assert counted == dict(Counter(block_of(int(key)) for _, key in line))
    for vid in (f"v{i}" for i in range(2_100, SPOTS)):  # every booking landed, none was lost
        record = redis_client.hget(keys["spots"], vid)
        assert record is not None and spot_record.parse(record)["state"] == "w"
