"""Parked spots (queue/line/parking.py, lua/park.lua, turns.lua, claim_mail.lua, mail_done.lua,
redeem_return.lua) on a real Redis: a parked spot outlives the sweep without a poll, keeps its
place, is found at its turn, its e-mail claimed by one caller at a time, its address deleted
once sent, its return link honoured once and not late. Time is the room's clock, pinned and
shifted in Redis; nothing sleeps.
"""

from __future__ import annotations

from typing import Any

import pytest

from anteroom.engine import Engine
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line.parking import Parking, address_problem
from helpers import make_room

pytestmark = pytest.mark.redis

START = 1_800_000_000_000
WINDOW = 900


def room_at_start(engine: Engine, **config: Any) -> str:
    room = make_room(engine, ratePerMinute=60, abandonAfterSec=60, notify=True, **config)
    engine.set_clock(room, START)
    engine.open(room)
    return room


def sweep_pass(engine: Engine, room: str) -> int:
    dropped, done = engine.sweep(room, 10_000)
    while not done:
        more, done = engine.sweep(room, 10_000)
        dropped += more
    return dropped


def mail_fields(engine: Engine, room: str) -> dict[str, str]:
    return dict(engine.redis.hgetall(engine.keys.room_keys(room)["mail"]))


def test_a_spot_that_leaves_takes_its_address_when_the_line_passes_it(engine: Engine) -> None:
    room = room_at_start(engine)
    parking = Parking(engine)
    tickets = {vid: engine.enter(room, vid, f"s-{vid}", 10).ticket or 0 for vid in "ab"}
    parking.park(room, "b", tickets["b"], 1, "b@example.com", "pk")
    assert engine.leave(room, "b", tickets["b"], 1)
    assert parking.turns(room, WINDOW) == (0, 0)  # behind the line's head: not read yet
    assert "a:b" in mail_fields(engine, room)
    engine.shift_clock(room, 1_000)
    engine.tick(room)  # a is admitted: the head moves past where b was
    assert parking.turns(room, WINDOW) == (0, 1)
    assert "a:b" not in mail_fields(engine, room)


def test_a_parked_spot_is_not_swept_and_keeps_its_place(engine: Engine) -> None:
    room = room_at_start(engine)
    engine.pause(room)  # nobody admitted: only the sweep may drop a spot
    parking = Parking(engine)
    tickets = {vid: engine.enter(room, vid, f"s-{vid}", 10).ticket or 0 for vid in "abc"}
    assert parking.park(room, "b", tickets["b"], 1, "b@example.com", "pk") == "ok"
    engine.shift_clock(room, 3_600_000)  # an hour, nobody polls
    assert sweep_pass(engine, room) == 2  # a and c went quiet; b is parked
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "a", tickets["a"], 1)
    answer = engine.poll(room, "b", tickets["b"], 1)
    assert (answer.status, answer.position) == ("waiting", 1)


def test_park_refuses_a_stranger_an_admitted_spot_and_an_old_generation(engine: Engine) -> None:
    room = room_at_start(engine)
    parking = Parking(engine)
    ticket = engine.enter(room, "v", "s", 10).ticket or 0
    assert parking.park(room, "v", ticket + 1, 1, "v@example.com", "pk") == "gone"
    assert parking.park(room, "v", ticket, 2, "v@example.com", "pk") == "gone"
    assert parking.park(room, "nobody", ticket, 1, "v@example.com", "pk") == "gone"
    engine.shift_clock(room, 2_000)
    engine.tick(room)
    assert engine.poll(room, "v", ticket, 1).status == "admitted"
    assert parking.park(room, "v", ticket, 1, "v@example.com", "pk") == "admitted"
    assert "a:v" not in mail_fields(engine, room)


def test_at_its_turn_one_e_mail_is_claimed_sent_and_its_address_deleted(engine: Engine) -> None:
    room = room_at_start(engine)
    parking = Parking(engine)
    ticket = engine.enter(room, "p", "s", 10).ticket or 0
    assert parking.park(room, "p", ticket, 1, "p@example.com", "pk") == "ok"
    assert parking.turns(room, WINDOW) == (0, 0)  # still waiting
    assert parking.claim(room) == []
    engine.shift_clock(room, 2_000)
    engine.tick(room)  # the drain admits it
    assert parking.turns(room, WINDOW) == (1, 0)
    assert parking.turns(room, WINDOW) == (0, 0)  # found once
    # its admission is held for the return window from its turn
    active = engine.redis.zscore(engine.keys.room_keys(room)["active"], "p")
    assert active is not None and active >= START + 2_000 + WINDOW * 1000 - 1_000
    claimed = parking.claim(room)
    assert [(m.vid, m.attempt, m.address) for m in claimed] == [("p", 1, "p@example.com")]
    assert "p@example.com" not in repr(claimed[0])
    assert parking.claim(room) == []  # claimed: nobody else gets it during its lease
    assert parking.done(claimed[0], "sent", WINDOW)
    assert "a:p" not in mail_fields(engine, room)  # the address is gone once sent
    assert "p@example.com" not in str(mail_fields(engine, room))
    engine.shift_clock(room, 120_000)
    assert parking.claim(room) == []  # sent: never claimed again
    assert engine.counters(room) is not None


def test_a_failed_try_is_claimed_again_after_its_delay_then_given_up(engine: Engine) -> None:
    room = room_at_start(engine)
    parking = Parking(engine)
    ticket = engine.enter(room, "p", "s", 10).ticket or 0
    parking.park(room, "p", ticket, 1, "p@example.com", "pk")
    engine.shift_clock(room, 2_000)
    engine.tick(room)
    parking.turns(room, WINDOW)
    first = parking.claim(room)[0]
    parking.done(first, "retry", WINDOW, delay_ms=5_000, failed="SMTPConnectError")
    assert parking.claim(room) == []
    engine.shift_clock(room, 5_000)
    second = parking.claim(room)[0]
    assert second.attempt == 2
    parking.done(second, "failed", WINDOW, failed="SMTPRecipientsRefused 550")
    assert mail_fields(engine, room) == {"key": "pk"}  # address and turn deleted
    raw = engine.redis.hmget(engine.keys.room(room), ["nmfail", "nmlost", "nmsent"])
    assert raw == ["2", "1", None]


def test_the_return_link_is_honoured_once_and_never_late(engine: Engine) -> None:
    room = room_at_start(engine, admissionTtlSec=60)
    parking = Parking(engine)
    tickets = {vid: engine.enter(room, vid, f"s-{vid}", 10).ticket or 0 for vid in ("x", "y")}
    for vid in ("x", "y"):
        assert parking.park(room, vid, tickets[vid], 1, f"{vid}@example.com", "pk") == "ok"
    for _ in range(2):  # one admission a second
        engine.shift_clock(room, 1_000)
        engine.tick(room)
    assert parking.turns(room, WINDOW) == (2, 0)
    turns = {}
    for mail in parking.claim(room):
        turns[mail.vid] = mail.turn_ms
        parking.done(mail, "sent", WINDOW)
    assert sorted(turns.values()) == [START + 1_000, START + 2_000]
    # x comes back after 10 minutes: beyond its admission's life, within the window
    engine.shift_clock(room, 600_000)
    returned = parking.redeem(room, "x", turns["x"], WINDOW)
    assert not isinstance(returned, str) and returned.ticket == tickets["x"]
    answer = engine.poll(room, "x", returned.ticket, returned.generation)
    assert answer.status == "admitted"
    assert answer.admission is not None
    assert answer.admission.expires_ms >= START + 602_000 + 60_000  # a full life anew
    assert parking.redeem(room, "x", turns["x"], WINDOW) == "used"
    # y comes back after the window
    engine.shift_clock(room, (WINDOW + 1) * 1000)
    assert parking.redeem(room, "y", turns["y"], WINDOW) == "late"


@pytest.mark.parametrize("how", ["close", "delete"])
def test_a_closed_or_deleted_room_takes_its_parked_addresses(engine: Engine, how: str) -> None:
    room = room_at_start(engine)
    parking = Parking(engine)
    ticket = engine.enter(room, "p", "s", 10).ticket or 0
    parking.park(room, "p", ticket, 1, "p@example.com", "pk")
    assert engine.redis.exists(engine.keys.room_keys(room)["mail"])
    engine.close(room) if how == "close" else engine.delete_room(room)
    for name in ("park", "mail", "mailq"):
        assert not engine.redis.exists(engine.keys.room_keys(room)[name])


@pytest.mark.parametrize(
    ("address", "ok"),
    [
        ("ada@example.com", True),
        ("a.b+tag@mail.example.co.uk", True),
        ("no-at-sign", False),
        ("two@@example.com", False),
        ("a@b", False),
        ("a b@example.com", False),
        ("a@example.com\r\nBcc: x@evil.example", False),
        ("<a@example.com>", False),
        ("a@ex..ample.com", False),
        ("x" * 250 + "@example.com", False),
        (None, False),
        (42, False),
    ],
)
def test_an_address_is_checked_before_anything_is_written(address: Any, ok: bool) -> None:
    assert (address_problem(address) is None) is ok


def test_only_parked_spots_ahead_of_the_line_are_looked_at_and_a_random_room_goes_round(
    engine: Engine,
) -> None:
    """A fifo room's pass reads the parked spots the line's head has passed, not those behind
    it; a random room (which admits anywhere in the line) is looked at `count` at a time from
    where the last pass stopped, so a turn deep in the line is found too."""
    for mode in ("fifo", "random"):
        room = room_at_start(engine, mode=mode, slug=f"r-{mode}")
        parking = Parking(engine)
        tickets = {f"v{i}": engine.enter(room, f"v{i}", f"s{i}", 10).ticket or 0 for i in range(6)}
        for vid, ticket in tickets.items():
            assert parking.park(room, vid, ticket, 1, f"{vid}@example.com", "pk") == "ok"
        engine.shift_clock(room, 3_000)
        for _ in range(3):
            engine.shift_clock(room, 1_000)
            engine.tick(room)
        admitted = {
            v for v, t in tickets.items() if engine.poll(room, v, t, 1).status == "admitted"
        }
        assert len(admitted) == 3, mode
        found = 0
        for _ in range(4):  # passes of 2: a random room's go round the 6
            found += parking.turns(room, WINDOW, count=2)[0]
        assert found == 3, mode
        claimed = {m.vid for m in parking.claim(room)}
        assert claimed == admitted, mode
