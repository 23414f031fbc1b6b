"""Queueing modes in the scripts (docs/operators.md, "Queueing modes"): fifo, passthrough and reject
on entry, and a switch of mode that never loses or reorders anyone already waiting."""

from __future__ import annotations

import pytest

from anteroom.engine import Engine
from anteroom.queue.line import room_engine as eng
from anteroom.queue.rooms import room_config as rooms
from helpers import carried_claims, make_room

pytestmark = pytest.mark.redis


def pinned_room(engine: Engine, **config: object) -> str:
    """An open room whose clock moves only when the test moves it (its bank starts empty)."""
    room = make_room(engine, **config)
    engine.set_clock(room, engine.stats(room).now_ms)
    engine.open(room)
    return room


def line_of(engine: Engine, room: str) -> list[tuple[str, int]]:
    """The waiting spots in drain order, as (visitor, ticket)."""
    return [(entry.visitor, entry.ticket) for entry in engine.line(room)]


def fill(engine: Engine, room: str, n: int, prefix: str = "v") -> list[str]:
    vids = [f"{prefix}{i:03d}" for i in range(n)]
    for vid in vids:
        engine.enter(room, vid, "s-" + vid, 10)
    return vids


def deal_number(engine: Engine, room: str, vid: str) -> int:
    """The admission's deal number, read by entering again (the same spot answers)."""
    answer = engine.enter(room, vid, "s-" + vid, 10)
    assert answer.status == "admitted" and answer.admission is not None, answer
    return answer.admission.deal_number


def test_a_room_is_fifo_unless_told_and_takes_only_known_modes(engine: Engine) -> None:
    room = make_room(engine)
    assert engine.get_room(room)["mode"] == "fifo"
    for bad in ("RANDOM", "FIFO", "", None, 1):
        with pytest.raises(rooms.ValidationError) as caught:
            engine.update_room(room, {"mode": bad})
        assert set(caught.value.fields) == {"mode"}
    assert engine.get_room(room)["mode"] == "fifo"


def test_fifo_keeps_to_the_rate(engine: Engine) -> None:
    room = pinned_room(engine, ratePerMinute=1)
    answers = [engine.enter(room, f"v{i}", f"s{i}", 10) for i in range(3)]
    assert [a.status for a in answers] == ["waiting"] * 3  # nothing earned yet
    assert engine.stats(room).dealt_total == 0


def test_passthrough_admits_everyone_at_once_and_counts_them(engine: Engine) -> None:
    room = pinned_room(engine, ratePerMinute=1, mode="passthrough")
    answers = [engine.enter(room, f"v{i}", f"s{i}", 10) for i in range(50)]
    assert all(a.status == "admitted" and a.admission for a in answers)
    assert sorted(a.admission.deal_number for a in answers if a.admission) == list(range(1, 51))
    stats = engine.stats(room)
    assert stats.dealt_total == 50 and stats.active == 50 and stats.waiting == 0
    assert engine.redis.hget(engine.keys.room(room), "nent") == "50"


def test_passthrough_still_holds_suspect_scores(engine: Engine) -> None:
    room = pinned_room(engine, mode="passthrough", holdScore=70)
    assert engine.enter(room, "bot", "s", 90).status == "held"
    assert engine.enter(room, "person", "s2", 10).status == "admitted"


def test_passthrough_stays_within_capacity_in_arrival_order(engine: Engine) -> None:
    room = pinned_room(engine, ratePerMinute=1, capacity=5, admissionTtlSec=30, mode="passthrough")
    vids = fill(engine, room, 12)
    assert engine.stats(room).active == 5
    assert [vid for vid, _ in line_of(engine, room)] == vids[5:]  # the rest wait, in order
    # Five admissions expire: the next five go in at once, whatever the rate, in their order.
    engine.shift_clock(room, 31_000)
    assert engine.tick(room).dealt == 5
    assert [vid for vid, _ in line_of(engine, room)] == vids[10:]
    assert [deal_number(engine, room, vid) for vid in vids[5:10]] == list(range(6, 11))


def test_reject_takes_no_new_entry_and_keeps_those_waiting(engine: Engine) -> None:
    room = pinned_room(engine, ratePerMinute=60)
    fill(engine, room, 10)
    before = line_of(engine, room)
    engine.update_room(room, {"mode": "reject"})
    with pytest.raises(eng.RoomClosed):
        engine.enter(room, "late", "s-late", 10)
    assert engine.redis.hget(engine.keys.room(room), "nent") == "10"  # refused: not an entry
    # Someone already waiting who comes back (a reload) keeps the same spot and place.
    again = engine.enter(room, "v003", "s-v003", 10)
    assert again.status == "waiting" and again.ticket == dict(before)["v003"]
    assert again.position == 4
    assert line_of(engine, room) == before
    # The line still moves at the rate: a reject room drains those it holds.
    engine.shift_clock(room, 3_000)
    assert engine.tick(room).dealt == 1
    assert line_of(engine, room) == before[1:]


def test_switching_modes_loses_and_reorders_nobody(engine: Engine) -> None:
    room = pinned_room(engine, ratePerMinute=1)
    fill(engine, room, 30)
    before = line_of(engine, room)
    for mode in ("reject", "fifo", "reject", "fifo"):
        engine.update_room(room, {"mode": mode})
        assert line_of(engine, room) == before
        assert engine.get_room(room)["mode"] == mode
    # New arrivals after the switch back stand behind everyone already waiting.
    engine.enter(room, "late", "s-late", 10)
    assert line_of(engine, room)[:30] == before and line_of(engine, room)[30][0] == "late"


def test_a_switch_to_passthrough_admits_those_waiting_in_their_order(engine: Engine) -> None:
    room = pinned_room(engine, ratePerMinute=1)
    vids = fill(engine, room, 30)
    order = [vid for vid, _ in line_of(engine, room)]
    assert order == vids
    engine.update_room(room, {"mode": "passthrough"})
    # Nobody moves until the next tick (or an entry or poll near the head), and then all go.
    engine.shift_clock(room, 1_000)
    assert engine.tick(room).dealt == 30
    assert line_of(engine, room) == []
    assert [deal_number(engine, room, vid) for vid in order] == list(range(1, 31))
    assert engine.stats(room).dealt_total == 30
    # A newcomer now goes straight in.
    assert engine.enter(room, "late", "s-late", 10).status == "admitted"


def test_back_to_fifo_from_passthrough_keeps_to_the_rate(engine: Engine) -> None:
    room = pinned_room(engine, ratePerMinute=60, mode="passthrough")
    fill(engine, room, 5)
    engine.update_room(room, {"mode": "fifo"})
    # The bank passthrough left (at most a second's worth) is the most that may go at once.
    answers = [engine.enter(room, f"w{i}", f"sw{i}", 10) for i in range(5)]
    assert sum(a.status == "admitted" for a in answers) <= 1


def test_a_far_poll_in_a_passthrough_room_moves_the_line(engine: Engine) -> None:
    # Switched with nothing earned: the far poll must not answer from the bank alone.
    room = pinned_room(engine, ratePerMinute=1, maxWaiting=10_000)
    fill(engine, room, 300)
    engine.update_room(room, {"mode": "passthrough"})
    answer = engine.poll(room, "v299", 300, 1)  # far from the head: the far poll first
    assert answer.status == "waiting" and answer.position == 100  # 200 dealt on the way
    assert engine.stats(room).dealt_total == 200


def test_a_passthrough_room_is_never_answered_from_the_snapshot(engine: Engine) -> None:
    room = pinned_room(engine, ratePerMinute=1, maxWaiting=10_000)
    answers = {vid: engine.enter(room, vid, "s-" + vid, 10) for vid in fill_ids(2_600)}
    last = answers["v2599"]
    carried = carried_claims(room, "v2599", last)
    engine.update_room(room, {"mode": "passthrough"})
    answer = engine.poll(room, "v2599", last.ticket or 0, 1, last.session_jti, carried=carried)
    assert answer.position == 2_400  # Redis's answer, after its drain of 200
    assert engine.stats(room).dealt_total == 200


def fill_ids(n: int) -> list[str]:
    return [f"v{i}" for i in range(n)]
