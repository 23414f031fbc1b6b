"""Engine rules one by one, against a real Redis: entry, order, positions, leaving, limits."""

from __future__ import annotations

import pytest
import redis

from anteroom.engine import Engine
from anteroom.queue.line import room_engine as eng
from anteroom.queue.rooms.key_layout import KeySpace
from helpers import make_room, open_room

START = 1_800_000_000_000

pytestmark = pytest.mark.redis


def test_idle_room_takes_no_ticket(engine: Engine) -> None:
    room = make_room(engine)
    answer = engine.enter(room, "v1", "s1", 10)
    assert answer.status == "idle" and answer.ticket is None
    assert engine.stats(room).tickets == 0


def test_unknown_room(engine: Engine) -> None:
    with pytest.raises(eng.RoomNotFound):
        engine.enter("q0000", "v1", "s1", 10)


def test_one_spot_per_visitor(engine: Engine) -> None:
    room = open_room(engine)
    first = engine.enter(room, "v1", "s1", 10)
    engine.enter(room, "v2", "s2", 10)
    again = engine.enter(room, "v1", "s1-second-tab", 10)
    assert (again.ticket, again.position) == (first.ticket, first.position) == (1, 1)
    assert engine.stats(room).waiting == 2
    assert engine.stats(room).tickets == 2


def test_positions_are_exact_and_move_up(engine: Engine) -> None:
    room = open_room(engine)
    for i in range(50):
        assert engine.enter(room, f"v{i}", f"s{i}", 10).position == i + 1
    engine.leave(room, "v10", 11, 1)
    assert engine.poll(room, "v11", 12, 1).position == 11
    assert engine.poll(room, "v49", 50, 1).position == 49


def test_drain_admits_in_ticket_order_at_the_rate(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60)
    for i in range(5):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    engine.shift_clock(room, 3_000)  # three seconds earn three admissions... capped at one
    answer = engine.poll(room, "v0", 1, 1)
    assert answer.status == "admitted"
    assert engine.poll(room, "v1", 2, 1).status == "waiting"
    engine.shift_clock(room, 1_000)
    assert engine.poll(room, "v1", 2, 1).status == "admitted"
    assert engine.stats(room).dealt_total == 2


def test_new_arrival_straight_in_only_when_nobody_waits(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60)
    engine.shift_clock(room, 5_000)
    assert engine.enter(room, "v1", "s1", 10).status == "admitted"
    # The bank is spent: the next one waits even though nobody is ahead.
    assert engine.enter(room, "v2", "s2", 10).status == "waiting"
    engine.shift_clock(room, 1_000)
    # Budget again, but v2 waits: a newcomer must not jump it (v2 is admitted by this call).
    third = engine.enter(room, "v3", "s3", 10)
    assert third.status == "waiting" and third.position == 1
    assert engine.poll(room, "v2", 2, 1).status == "admitted"


def test_admission_answers_until_a_minute_after_expiry(engine: Engine) -> None:
    room = open_room(engine, admissionTtlSec=30)
    engine.shift_clock(room, 1_000)
    admitted = engine.enter(room, "v1", "s1", 10)
    assert admitted.admission is not None
    assert admitted.admission.expires_ms - admitted.admission.issued_ms == 30_000
    engine.shift_clock(room, 89_000)
    again = engine.poll(room, "v1", 1, 1)
    assert again.admission == admitted.admission
    engine.shift_clock(room, 2_000)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v1", 1, 1)


def test_wrong_ticket_or_generation_is_gone(engine: Engine) -> None:
    room = open_room(engine)
    engine.enter(room, "v1", "s1", 10)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v1", 2, 1)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v1", 1, 2)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "nobody", 1, 1)


def test_leave_frees_a_waiting_spot(engine: Engine) -> None:
    room = open_room(engine)
    engine.enter(room, "v1", "s1", 10)
    engine.enter(room, "v2", "s2", 10)
    assert engine.leave(room, "v1", 1, 1)
    assert engine.poll(room, "v2", 2, 1).position == 1
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v1", 1, 1)
    assert not engine.leave(room, "v1", 1, 1)  # idempotent


def test_poll_cadence_by_position(engine: Engine) -> None:
    # 6,000 a minute: 100 admissions a second, so the front (10 s of them) is the first 1,000.
    room = make_room(engine, ratePerMinute=6_000)
    engine.set_clock(room, START)  # the clock stands still: nobody is let in meanwhile
    engine.open(room)
    for i in range(1_300):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    positions = (1, 500, 1_000, 1_001, 1_300)
    cadence = {p: engine.poll(room, f"v{p - 1}", p, 1).poll_after_ms for p in positions}
    # 1 s for the front's first half, 2 s for the rest; behind it five polls over the wait
    assert cadence == {1: 1000, 500: 1000, 1_000: 2000, 1_001: 2002, 1_300: 2600}
    engine.pause(room)  # paused: the same cadence, the pause may end any time
    assert engine.poll(room, "v1299", 1_300, 1).poll_after_ms == 2600


def test_a_pre_queue_polls_less_often_the_further_opensAt_is(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=6_000)
    engine.set_clock(room, START)
    engine.open(room, START + 3_600_000)
    engine.enter(room, "v0", "s0", 10)
    assert engine.poll(room, "v0", 1, 1).poll_after_ms == 300_000  # an hour ahead: the cap
    engine.shift_clock(room, 3_600_000 - 60_000)
    assert engine.poll(room, "v0", 1, 1).poll_after_ms == 12_000  # a minute ahead: a fifth
    engine.shift_clock(room, 60_000)
    assert engine.poll(room, "v0", 1, 1).poll_after_ms == 1000  # open: the front's


def test_per_ticket_poll_limit_keeps_the_spot(engine: Engine) -> None:
    room = open_room(engine)
    engine.enter(room, "v1", "s1", 10)  # the entry is the first of 90
    for _ in range(89):
        engine.poll(room, "v1", 1, 1)
    with pytest.raises(eng.RateLimited) as caught:
        engine.poll(room, "v1", 1, 1)
    assert caught.value.retry_after is not None and 1 <= caught.value.retry_after <= 60
    engine.shift_clock(room, 60_000)
    assert engine.poll(room, "v1", 1, 1).ticket == 1


def test_queue_full(engine: Engine) -> None:
    room = open_room(engine, maxWaiting=3)
    for i in range(3):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    with pytest.raises(eng.QueueFull) as caught:
        engine.enter(room, "v9", "s9", 10)
    assert caught.value.retry_after
    assert engine.stats(room).waiting == 3 and engine.stats(room).dealt_total == 0
    assert engine.enter(room, "v0", "s0", 10).ticket == 1  # those inside keep their spot


def test_one_call_admits_at_most_200(engine: Engine) -> None:
    room = make_room(engine, ratePerMinute=100_000)
    opens_at = engine.stats(room).now_ms + 60_000
    engine.open(room, opens_at)  # a pre-queue, so nothing drains while the line fills
    for i in range(450):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    engine.shift_clock(room, 70_000)  # the bank fills to one second: 1,666 admissions
    engine.draw(room)  # the pool's draw, which the room ticker makes at opensAt
    engine.enter(room, "late-1", "s", 10)
    assert engine.stats(room).dealt_total == 200
    engine.enter(room, "late-2", "s", 10)
    assert engine.stats(room).dealt_total == 400


def test_eta(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=30)
    for i in range(10):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    assert engine.poll(room, "v9", 10, 1).eta_seconds == 20
    engine.pause(room)
    assert engine.poll(room, "v9", 10, 1).eta_seconds is None


def test_eta_when_capacity_is_the_bound(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60, capacity=2)
    engine.shift_clock(room, 1_000)
    assert engine.enter(room, "a", "sa", 10).status == "admitted"
    assert engine.enter(room, "b", "sb", 10).status == "waiting"
    engine.shift_clock(room, 1_000)
    assert engine.poll(room, "b", 2, 1).status == "admitted"
    for i in range(6):
        engine.enter(room, f"w{i}", f"s{i}", 10)
    # Capacity is full; two admissions seen in the last minute: the 6th waits 6 * 60/2 s.
    assert engine.poll(room, "w5", 8, 1).eta_seconds == 180
    engine.shift_clock(room, 120_000)  # nothing admitted for two minutes: no honest ETA
    assert engine.poll(room, "w5", 8, 1).eta_seconds is None
    engine.leave(room, "a", 1, 1)  # the freed slot goes to w0 at once: one admission observed
    answer = engine.poll(room, "w5", 8, 1)
    assert (answer.position, answer.eta_seconds) == (5, 300)


def test_capacity_never_exceeded_and_leave_frees_a_slot(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=6_000, capacity=3, admissionTtlSec=60)
    for i in range(10):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    engine.shift_clock(room, 2_000)
    engine.poll(room, "v9", 10, 1)
    assert engine.stats(room).active == 3
    assert engine.poll(room, "v3", 4, 1).status == "waiting"
    engine.leave(room, "v0", 1, 1)
    assert engine.poll(room, "v3", 4, 1).status == "admitted"
    assert engine.poll(room, "v4", 5, 1).status == "waiting"
    engine.shift_clock(room, 60_000)  # the slots expire by themselves
    engine.poll(room, "v9", 10, 1)
    assert engine.stats(room).active == 3
    assert engine.stats(room).peak_active == 3


def test_refresh_extends_the_active_slot(engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=600, capacity=1, admissionTtlSec=30)
    engine.shift_clock(room, 1_000)
    first = engine.enter(room, "v1", "s1", 10)
    assert first.admission is not None
    engine.enter(room, "v2", "s2", 10)
    engine.shift_clock(room, 20_000)
    fresh = engine.refresh(room, "v1", 1, first.admission.jti)
    assert fresh.admission is not None
    moved = fresh.admission.expires_ms - first.admission.expires_ms
    assert 20_000 <= moved < 25_000  # real milliseconds pass between the calls too
    assert fresh.admission.jti == first.admission.jti
    engine.shift_clock(room, 20_000)  # past the first expiry, inside the refreshed one
    assert engine.poll(room, "v2", 2, 1).status == "waiting"
    with pytest.raises(eng.TicketGone):
        engine.refresh(room, "v1", 1, "not-the-jti")
    engine.shift_clock(room, 11_000)
    with pytest.raises(eng.TicketGone):
        engine.refresh(room, "v1", 1, first.admission.jti)
    assert engine.poll(room, "v2", 2, 1).status == "admitted"


def test_close_expires_every_spot_and_resets(engine: Engine) -> None:
    room = open_room(engine)
    engine.enter(room, "v1", "s1", 10)
    engine.close(room)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v1", 1, 1)
    assert engine.enter(room, "v1", "s1", 10).status == "idle"
    engine.open(room)
    answer = engine.enter(room, "v1", "s1", 10)
    assert (answer.ticket, answer.generation) == (1, 2)
    stats = engine.stats(room)
    assert (stats.waiting, stats.dealt_total, stats.tickets) == (1, 0, 1)


def test_delete_removes_every_key_and_frees_the_slug(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room = open_room(engine, capacity=5)
    engine.shift_clock(room, 1_000)
    engine.enter(room, "v1", "s1", 10)
    engine.enter(room, "v2", "s2", 90)
    engine.revoke(room, jti="sx", life_ms=3_600_000)
    engine.delete_room(room)
    assert redis_client.keys(f"anteroom:r:{{{room}}}:*") == []
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v1", 1, 1)
    assert engine.room_id("test", "drop") is None
    assert make_room(engine) != room


def test_slug_unique_per_environment(engine: Engine) -> None:
    make_room(engine, env="production")
    with pytest.raises(eng.SlugTaken):
        make_room(engine, env="production")
    assert make_room(engine, env="staging")  # the same slug elsewhere is another room


def test_key_names(engine: Engine, redis_client: redis.Redis) -> None:
    room = open_room(engine, capacity=5)
    engine.shift_clock(room, 1_000)
    engine.enter(room, "v1", "s1", 10)
    engine.enter(room, "v2", "s2", 10)
    engine.enter(room, "v3", "s3", 80)
    engine.revoke(room, vid="v9", life_ms=3_600_000)
    base = f"anteroom:r:{{{room}}}:"
    assert sorted(redis_client.keys("*")) == sorted(
        [
            "anteroom:environments",
            "anteroom:env:{test}:rooms",
            "anteroom:rooms:version",  # bumped by every room change (the directories' cue)
            *(base + k for k in ("room", "spots", "active", "adm", "rvk", "bks", "line", "b:80")),
            base + "waits",
            base + "blk",
        ]
    )
    assert KeySpace("shop:").room_base("q1") == "shop:r:{q1}:"
    with pytest.raises(ValueError):
        KeySpace().room_base("a}b")


def test_custom_prefix_keeps_rooms_apart(redis_client: redis.Redis) -> None:
    a, b = Engine(redis_client, "a:"), Engine(redis_client, "b:")
    make_room(a)
    make_room(b)
    assert {k.split(":")[0] for k in redis_client.keys("*")} == {"a", "b"}


def test_a_spot_written_before_the_upgrade_keeps_its_place(
    engine: Engine, redis_client: redis.Redis
) -> None:
    """Records that still carry the old in-Redis poll counter (window|count) are read alike."""
    room = make_room(engine, ratePerMinute=60)
    engine.set_clock(room, 1_800_000_000_000)
    engine.open(room)  # the bank starts empty and the clock stands still: "new" waits
    engine.enter(room, "new", "s1", 10)
    keys = engine.keys.room_keys(room)
    old = "2|10|w|1800000000000|30000000|1|s2||||"  # ticket|score|w|seen|window|count|jti|tag|||
    redis_client.hset(keys["spots"], "old", old)
    redis_client.zadd(keys["line"], {"old": 2**52 + 2})
    redis_client.hset(keys["room"], "tk", 2)
    assert engine.poll(room, "old", 2, 1, near_head=True).position == 2
    for _ in range(2):  # one admission a second: both in, in order
        engine.shift_clock(room, 1_000)
        engine.tick(room)
    answers = [engine.poll(room, v, t, 1) for v, t in (("new", 1), ("old", 2))]
    assert [a.admission.deal_number if a.admission else None for a in answers] == [1, 2]


def test_a_room_s_hash_is_a_hash_table_so_each_field_read_is_one_lookup(engine: Engine) -> None:
    """~80 fields as a listpack make every absent field a policy reads a scan of them all."""
    room = make_room(engine)
    assert engine.redis.object("encoding", engine.keys.room(room)) == "hashtable"
    # a room created before (its hash written again without the marker: a small encoding)
    fields = engine.redis.hgetall(engine.keys.room(room))
    del fields["hte"]
    engine.redis.delete(engine.keys.room(room))
    engine.redis.hset(engine.keys.room(room), mapping=fields)
    assert engine.redis.object("encoding", engine.keys.room(room)) in ("listpack", "ziplist")
    engine.update_room(room, {"name": "Renamed"})
    assert engine.redis.object("encoding", engine.keys.room(room)) == "hashtable"
