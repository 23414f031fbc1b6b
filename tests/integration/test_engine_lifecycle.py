"""Abandonment, the sweep that enter and poll carry along, revocation and Redis restarts."""

from __future__ import annotations

import pytest
import redis

from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.line import room_engine as eng
from anteroom.queue.rooms import invite_book
from anteroom.sdk.tokens import InviteClaims
from helpers import free_port, make_room, open_room

START = 1_800_000_000_000

pytestmark = pytest.mark.redis


def test_abandoned_spot_behind_the_front_costs_nothing(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=1, abandonAfterSec=60)
    engine.enter(room, "gone1", "s", 10)
    engine.enter(room, "gone2", "s", 10)
    engine.enter(room, "here", "s", 10)
    engine.shift_clock(room, 59_000)
    engine.poll(room, "here", 3, 1)
    engine.shift_clock(room, 2_000)
    answer = engine.poll(room, "here", 3, 1)
    assert answer.status == "admitted"  # the two abandoned spots ahead were skipped for free
    assert engine.stats(room).dealt_total == 1


def test_polls_carry_the_sweep_through_a_long_line_in_bounded_steps(engine: Engine) -> None:
    # At 12,000 a minute the front (10 s of admissions) is 2,000 long: every spot here is told
    # to poll every 1-2 s, so abandonAfterSec alone decides when it goes.
    room = make_room(engine, ratePerMinute=12_000, abandonAfterSec=60)
    engine.set_clock(room, START)
    engine.open(room)
    for i in range(1_200):
        engine.enter(room, f"v{i}", "s", 10)  # the first entry began (and ended) a pass
    engine.pause(room)  # keep the drain out of it: only the sweep may drop spots here
    engine.shift_clock(room, 30_000)
    engine.poll(room, "v600", 601, 1)  # one spot deep in the line is still here
    engine.enter(room, "late", "s", 10)
    assert engine.stats(room).waiting == 1_201  # no pass before a minute is up
    engine.shift_clock(room, 35_000)
    left, polls = [], 0
    while not left or left[-1] > 2:
        engine.poll(room, "v600", 601, 1)
        left.append(engine.stats(room).waiting)
        polls += 1
        assert polls < 40
    assert 1_201 - left[0] <= 2 * 100  # each call scans a bounded step of the line
    assert polls > 1 and left[-1] == 2  # only v600 and the later arrival are left
    assert engine.poll(room, "v600", 601, 1).position == 1
    pass_began = 65_000

    # "late" is abandoned from 90 s, but the next pass may only begin at 125 s.
    engine.shift_clock(room, 120_000 - pass_began)
    engine.poll(room, "v600", 601, 1)
    assert engine.sweep(room) == (0, True) and engine.stats(room).waiting == 2
    engine.shift_clock(room, 5_000)
    engine.poll(room, "v600", 601, 1)  # this poll begins the pass itself
    assert engine.stats(room).waiting == 1
    assert engine.sweep(room) == (0, True)


def test_explicit_sweep_steps_share_the_once_a_minute_pass(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=12_000, abandonAfterSec=60)  # all at the front
    engine.set_clock(room, START)
    engine.open(room)
    for i in range(600):
        engine.enter(room, f"v{i}", "s", 10)
    engine.shift_clock(room, 61_000)
    dropped, finished, calls = 0, False, 0
    while not finished:
        step, finished = engine.sweep(room, count=200)
        dropped += step
        calls += 1
    assert calls > 1 and dropped == 600 and engine.stats(room).waiting == 0
    engine.enter(room, "next", "s", 10)  # the entry does not begin another pass yet
    engine.shift_clock(room, 59_999)
    assert engine.sweep(room) == (0, True)


def test_an_entry_to_a_full_line_first_sweeps_its_abandoned_places(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=1, abandonAfterSec=60, maxWaiting=3)
    engine.set_clock(room, START)
    engine.open(room)
    for vid in ("a", "b", "c"):
        engine.enter(room, vid, "s", 10)
    with pytest.raises(eng.QueueFull):
        engine.enter(room, "d", "s", 10)
    engine.pause(room)  # keep the drain out of it: only the sweep may drop spots here
    engine.shift_clock(room, 40_000)
    engine.poll(room, "b", 2, 1)
    engine.shift_clock(room, 21_000)  # a and c were last seen 61 s ago
    answer = engine.enter(room, "d", "s", 10)
    assert answer.status == "waiting" and answer.position == 2  # behind b, who kept polling
    engine.enter(room, "e", "s", 10)
    with pytest.raises(eng.QueueFull):
        engine.enter(room, "f", "s", 10)


def test_revocations_expire_with_the_sweep(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=1)
    engine.set_clock(room, START)
    engine.open(room)
    engine.enter(room, "here", "s", 10)  # begins a pass: the next may begin a minute later
    engine.revoke(room, vid="v1", life_ms=30_000)
    engine.revoke(room, vid="v2", life_ms=30_000)
    engine.shift_clock(room, 40_000)
    # Past its time a revocation no longer counts, though no pass has forgotten it yet.
    assert engine.enter(room, "v1", "s1", 10).status == "waiting"
    assert set(engine.revocations(room)) == {"v:v2"}  # v1's was deleted where it was met
    engine.shift_clock(room, 20_000)
    engine.poll(room, "here", 1, 1)  # carries the pass that forgets expired revocations
    assert engine.revocations(room) == {}


def test_revoke_by_vid_drops_the_spot(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=1)
    engine.enter(room, "v1", "s1", 10)
    engine.enter(room, "v2", "s2", 10)
    assert engine.revoke(room, vid="v1", life_ms=3_600_000)
    # The spot is gone at once (its place frees), yet its poll says why.
    with pytest.raises(eng.SessionRevoked):
        engine.poll(room, "v1", 1, 1)
    assert engine.stats(room).waiting == 1
    with pytest.raises(eng.SessionRevoked):
        engine.enter(room, "v1", "s9", 10)
    assert engine.poll(room, "v2", 2, 1).position == 1


def test_revoke_by_jti(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60)
    engine.enter(room, "v1", "bad-session", 10)
    engine.enter(room, "v2", "s2", 10)
    engine.revoke(room, jti="bad-session", life_ms=3_600_000)
    engine.shift_clock(room, 1_000)
    # The drain meets the revoked spot first: dropped, and the budget goes to v2.
    assert engine.poll(room, "v2", 2, 1).status == "admitted"
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v1", 1, 1)
    with pytest.raises(eng.SessionRevoked):
        engine.enter(room, "v1", "bad-session", 10)


def test_revoked_session_polling_is_refused_and_dropped(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=1)
    engine.enter(room, "v1", "s1", 10)
    engine.revoke(room, jti="s1", life_ms=3_600_000)
    with pytest.raises(eng.SessionRevoked):
        engine.poll(room, "v1", 1, 1)
    assert engine.stats(room).waiting == 0  # dropped at that poll
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v1", 1, 1)  # a ticket that does not say its session: just gone
    with pytest.raises(eng.SessionRevoked):
        engine.poll(room, "v1", 1, 1, "s1")  # one that does hears why


def test_revocations_expire_on_their_own(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=1)
    engine.revoke(room, vid="v1", life_ms=60_000)
    engine.shift_clock(room, 59_000)
    with pytest.raises(eng.SessionRevoked):
        engine.enter(room, "v1", "s1", 10)
    engine.shift_clock(room, 1_000)
    assert engine.enter(room, "v1", "s1", 10).ticket == 1
    assert engine.revocations(room) == {}  # the expired entry was deleted where it was met


def test_refresh_of_a_revoked_session_is_refused_and_frees_the_slot(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60, capacity=1)
    engine.shift_clock(room, 1_000)
    admitted = engine.enter(room, "v1", "s1", 10)
    assert admitted.admission is not None
    engine.revoke(room, jti="s1", life_ms=3_600_000)
    with pytest.raises(eng.SessionRevoked):
        engine.refresh(room, "v1", None, admitted.admission.jti, "s1")
    assert engine.stats(room).active == 0


def test_everything_survives_a_redis_restart(tmp_path: object) -> None:
    port = free_port()
    server = EmbeddedRedis(tmp_path, port=port).start()  # type: ignore[arg-type]
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        engine = Engine(client)
        room = open_room(engine, ratePerMinute=60, capacity=10)
        engine.shift_clock(room, 1_000)
        first = [engine.enter(room, f"v{i}", f"s{i}", 10 + i) for i in range(30)]
        engine.enter(room, "held", "sh", 95)
        before = (engine.stats(room), [engine.poll(room, f"v{i}", i + 1, 1) for i in range(30)])
        line_before = engine.line(room)
        client.close()
        server.stop()
        server.start()
        client = redis.Redis.from_url(server.url, decode_responses=True)
        engine = Engine(client)  # scripts reload after the restart (NOSCRIPT)
        after_stats = engine.stats(room)
        assert (after_stats.waiting, after_stats.held, after_stats.dealt_total) == (
            before[0].waiting, before[0].held, before[0].dealt_total,
        )  # fmt: skip
        assert after_stats.tickets == 31
        assert engine.line(room) == line_before
        for i, answer in enumerate(first):
            again = engine.poll(room, f"v{i}", answer.ticket or 0, 1)
            assert (again.ticket, again.position, again.admission) == (
                before[1][i].ticket, before[1][i].position, before[1][i].admission,
            )  # fmt: skip
        assert engine.enter(room, "newcomer", "sn", 10).ticket == 32
        client.close()
    finally:
        server.stop()


def test_an_invite_on_record_is_listed_withdrawn_and_deleted_with_its_room(
    engine: Engine, redis_client: redis.Redis
) -> None:
    """On one server and on a Cluster alike (the record's keys share the room's slot)."""
    room = open_room(engine, ratePerMinute=1)
    far = 2**50
    terms = invite_book.terms("priority", 2, far, START)
    assert engine.record_invites(room, ["InviteNumberOne0", "InviteNumberTwo0"], terms) == 2
    claims = InviteClaims(room, "test", "InviteNumberOne0", far, 2, "priority")
    engine.enter(room, "in-before", "s1", 10, invite=claims)
    now = engine.stats(room).now_ms
    assert engine.withdraw_invite(room, "InviteNumberOne0", now).withdrawn_at_ms == now
    with pytest.raises(eng.InviteWithdrawn):
        engine.enter(room, "too-late", "s2", 10, invite=claims)
    assert engine.poll(room, "in-before", 1, 1).position == 1  # in before: keeps its spot
    with pytest.raises(eng.InviteNotFound):
        engine.withdraw_invite(room, "NeverIssuedHere0", now)
    page = engine.invites(room)
    assert [(i.id, i.spent, i.state(now)) for i in page.invites] == [
        ("InviteNumberTwo0", 0, "open"),
        ("InviteNumberOne0", 1, "withdrawn"),
    ]
    keys = engine.keys.room_keys(room)
    engine.delete_room(room)
    assert redis_client.exists(keys["invs"], keys["invo"], keys["inv"]) == 0
