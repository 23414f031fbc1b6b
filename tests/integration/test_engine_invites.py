"""Invite links in the engine (docs/operators.md, "Invite links"), against a real Redis: the two
lanes, the errors, one use per identity, and the `uses` bound under concurrent processes."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import pytest

from anteroom.engine import Engine
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line.line_blocks import LineBlocks
from anteroom.sdk.tokens import InviteClaims
from helpers import open_room

pytestmark = pytest.mark.redis

FAR = 2**50  # an expiry no test's room clock reaches


def invite(room: str, lane: str = "skip", uses: int = 1, expires: int = FAR,
           invite_id: str = "iv-a") -> InviteClaims:  # fmt: skip
    return InviteClaims(room, "test", invite_id, expires, uses, lane)


def line_of(engine: Engine, room: str) -> list[str]:
    return [e.visitor for e in engine.line(room)]


def test_skip_lane_goes_straight_in_past_the_line_and_the_rate(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=1)
    for i in range(3):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    answer = engine.enter(room, "guest", "sg", 10, invite=invite(room))
    assert answer.status == "admitted"
    # nobody else moved: the public line keeps its order and places
    assert line_of(engine, room) == ["v0", "v1", "v2"]
    assert engine.poll(room, "v0", 1, 1).position == 1
    # the skip was over and above the rate: the next admission is still owed to v0 in turn
    engine.shift_clock(room, 60_000)
    assert engine.poll(room, "v0", 1, 1).status == "admitted"


def test_skip_lane_waits_at_the_head_when_capacity_is_full(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60, capacity=1)
    engine.shift_clock(room, 1_000)
    assert engine.enter(room, "v0", "s0", 10).status == "admitted"
    engine.enter(room, "v1", "s1", 10)
    answer = engine.enter(room, "guest", "sg", 10, invite=invite(room))
    assert answer.status == "waiting" and answer.position == 1
    assert line_of(engine, room) == ["guest", "v1"]
    engine.leave(room, "v0", 1, 1)
    engine.shift_clock(room, 1_000)
    assert engine.poll(room, "guest", answer.ticket, 1).status == "admitted"
    assert engine.poll(room, "v1", 2, 1).position == 1


def test_priority_lane_is_ahead_of_the_public_line_in_invite_order(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=1)
    for i in range(3):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    first = engine.enter(room, "p1", "sp1", 10, invite=invite(room, "priority", uses=5))
    second = engine.enter(room, "p2", "sp2", 10, invite=invite(room, "priority", uses=5))
    assert (first.status, first.position, second.position) == ("waiting", 1, 2)
    assert line_of(engine, room) == ["p1", "p2", "v0", "v1", "v2"]
    assert engine.poll(room, "v2", 3, 1).position == 5
    # the drain takes them first, at the room's rate
    engine.shift_clock(room, 60_000)
    assert engine.poll(room, "p1", first.ticket, 1).status == "admitted"
    assert engine.poll(room, "v0", 1, 1).position == 2
    # the line's block counts place them ahead too (the far poll's snapshot)
    blocks = {
        k: int(v) for k, v in engine.redis.hgetall(engine.keys.room_base(room) + "blk").items()
    }
    ahead = LineBlocks.from_counts(blocks).place(-(2**52) + second.ticket)
    assert ahead == (0, 0)


def test_priority_lane_in_the_pre_queue_stays_ahead_of_the_draw(engine: Engine) -> None:
    room = open_room(engine)  # opened now: no pool; a pre-queue needs a future opensAt
    engine.close(room)
    now = engine.stats(room).now_ms
    engine.open(room, now + 60_000)
    for i in range(5):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    engine.enter(room, "p1", "sp1", 10, invite=invite(room, "priority"))
    engine.shift_clock(room, 61_000)
    engine.draw(room)
    line = line_of(engine, room)
    assert line[0] == "p1" and sorted(line[1:]) == [f"v{i}" for i in range(5)]
    assert len(engine.drawn_entrants(room)) == 5  # the invitee is not in the draw


def test_each_identity_spends_once_and_keeps_its_spot(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=1)
    engine.enter(room, "v0", "s0", 10)
    token = invite(room, "priority", uses=2)
    first = engine.enter(room, "a", "sa", 10, invite=token)
    again = engine.enter(room, "a", "sa2", 10, invite=token)  # a reload: same spot, no use
    assert (again.ticket, again.position) == (first.ticket, 1)
    engine.enter(room, "b", "sb", 10, invite=token)
    with pytest.raises(eng.InviteSpent):
        engine.enter(room, "c", "sc", 10, invite=token)
    assert engine.stats(room).tickets == 3  # the refused entry took nothing
    # one who spent it, gone and back, is not a new use, and joins the public line: the
    # invite put it in its lane once
    engine.leave(room, "a", first.ticket, 1)
    back = engine.enter(room, "a", "sa3", 10, invite=token)
    assert back.position == 3 and line_of(engine, room) == ["b", "v0", "a"]
    assert engine.stats(room).tickets == 4


def test_a_skip_invite_admits_its_holder_once(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=1, admissionTtlSec=60, sessionRenewal=False)
    engine.enter(room, "v0", "s0", 10)
    token = invite(room)
    first = engine.enter(room, "guest", "sg", 10, invite=token)
    assert first.status == "admitted"
    engine.leave(room, "guest", first.ticket, 1)  # leaves, then enters again with the link
    again = engine.enter(room, "guest", "sg", 10, invite=token)
    assert (again.status, again.position) == ("waiting", 2)
    # its admission over rather than left: likewise
    other = engine.enter(room, "other", "so", 10, invite=invite(room, invite_id="iv-b"))
    assert other.status == "admitted"
    engine.shift_clock(room, 121_000)
    back = engine.enter(room, "other", "so", 10, invite=invite(room, invite_id="iv-b"))
    assert back.status == "waiting" and line_of(engine, room)[-1] == "other"


def test_an_expired_invite_is_refused_on_the_room_clock(engine: Engine) -> None:
    room = open_room(engine)
    now = engine.stats(room).now_ms
    token = invite(room, expires=now + 10_000)
    engine.shift_clock(room, 10_000)
    with pytest.raises(eng.InviteExpired):
        engine.enter(room, "a", "sa", 10, invite=token)
    assert engine.stats(room).tickets == 0


def test_invited_admissions_leave_the_fairness_counts_alone(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60)
    engine.enter(room, "v0", "s0", 10)
    engine.enter(room, "guest", "sg", 10, invite=invite(room))
    engine.shift_clock(room, 1_000)
    assert engine.poll(room, "v0", 1, 1).status == "admitted"
    # v0 is the one later arrival admitted, in turn; the skip counts as neither kind
    raw = engine.redis.hmget(engine.keys.room(room), "npre", "nlate", "nooo")
    assert [int(x or 0) for x in raw] == [0, 1, 0]


def _spend(url: str, room: str, worker: int, uses: int, start: Any, out: Any) -> None:
    """Ten identities of one process try the shared invite as soon as every process is ready."""
    engine = Engine(connect(url, timeout=30))
    token = invite(room, "skip", uses=uses, invite_id="iv-shared")
    got = []
    start.wait()
    for i in range(10):
        vid = f"w{worker}-v{i}"
        try:
            engine.enter(room, vid, "s-" + vid, 10, invite=token)
            got.append(vid)
        except eng.InviteSpent:
            pass
    out.put(got)


def test_uses_bound_holds_across_processes(engine: Engine, redis_url: str) -> None:
    room = open_room(engine, ratePerMinute=1)
    uses, processes = 7, 4
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(processes), ctx.Queue()
    workers = [
        ctx.Process(target=_spend, args=(redis_url, room, w, uses, start, out))
        for w in range(processes)
    ]
    for p in workers:
        p.start()
    got = [vid for _ in workers for vid in out.get(timeout=120)]
    for p in workers:
        p.join(timeout=30)
    assert len(got) == len(set(got)) == uses  # exactly `uses` distinct identities got in
    assert engine.stats(room).active == uses


def test_priority_invitees_come_first_in_a_random_room_too(engine: Engine) -> None:
    """The draw is among the public line: invitees in a lane are dealt first, in their order."""
    room = open_room(engine, ratePerMinute=60, mode="random")
    for i in range(40):
        engine.enter(room, f"v{i:02d}", f"s{i}", 10)
    guests = [
        engine.enter(room, f"p{i}", f"sp{i}", 10, invite=invite(room, "priority", uses=5))
        for i in range(3)
    ]
    for _ in range(3):
        engine.shift_clock(room, 1_000)
        engine.tick(room)
    assert all(
        engine.poll(room, f"p{i}", g.ticket, 1).status == "admitted" for i, g in enumerate(guests)
    )
    assert engine.stats(room).dealt_total == 3  # nobody from the public line before them
