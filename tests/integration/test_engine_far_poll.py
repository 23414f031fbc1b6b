"""The small poll of spots far from the head answers and limits exactly as the full poll does,
and never stops the line: whoever polls, the drain runs as soon as an admission is owed."""

from __future__ import annotations

import math

import pytest

from anteroom.engine import Engine
from anteroom.queue import room_engine as eng
from helpers import make_room

pytestmark = pytest.mark.redis

START = 1_800_000_000_000


def open_line(engine: Engine, spots: int, **config: int) -> str:
    room = make_room(engine, **({"ratePerMinute": 60} | config))
    engine.set_clock(room, START)
    engine.open(room)
    for i in range(spots):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    return room


def test_a_deep_spot_hears_its_exact_position_eta_and_cadence(engine: Engine) -> None:
    room = open_line(engine, 1_200)
    dealt = engine.stats(room).dealt_total
    for ticket, cadence in ((300, 5_000), (1_150, 15_000)):
        answer = engine.poll(room, f"v{ticket - 1}", ticket, 1)
        position = ticket - dealt
        assert (answer.status, answer.ticket, answer.position) == ("waiting", ticket, position)
        assert answer.eta_seconds == math.ceil(position * 60_000 / 60 / 1000)
        assert answer.poll_after_ms == cadence
        assert (answer.session_jti, answer.score, answer.room_status) == (
            f"s{ticket - 1}",
            10,
            "open",
        )


def test_deep_polls_alone_keep_the_line_moving(engine: Engine) -> None:
    room = open_line(engine, 400, ratePerMinute=6_000)  # the clock stands still while it fills
    before = engine.poll(room, "v299", 300, 1).position
    engine.shift_clock(room, 100)  # ten admissions earned; nobody near the head polls
    after = engine.poll(room, "v299", 300, 1).position
    assert before is not None and after == before - 10
    assert engine.stats(room).dealt_total == 300 - after


def test_a_deep_spot_is_limited_to_90_polls_a_minute(engine: Engine) -> None:
    room = open_line(engine, 300, ratePerMinute=1)
    engine.shift_clock(room, 60_000 - (START % 60_000) + 1)  # a fresh one-minute window
    engine.enter(room, "v250", "s250", 10)  # the entry is the first of 90
    for _ in range(89):
        engine.poll(room, "v250", 251, 1)
    with pytest.raises(eng.RateLimited) as caught:
        engine.poll(room, "v250", 251, 1)
    assert caught.value.retry_after is not None and 1 <= caught.value.retry_after <= 60


def test_a_revoked_deep_spot_hears_so_and_goes(engine: Engine) -> None:
    room = open_line(engine, 300, ratePerMinute=1)
    engine.revoke(room, jti="s250", life_ms=60_000)
    with pytest.raises(eng.SessionRevoked):
        engine.poll(room, "v250", 251, 1)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v250", 251, 1, session_jti="")
    assert engine.poll(room, "v251", 252, 1).status == "waiting"


def evalsha_calls(engine: Engine) -> int:
    stats = engine.redis.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0))


def test_a_spot_near_the_head_polls_in_one_round_trip_when_told(engine: Engine) -> None:
    room = open_line(engine, 200, ratePerMinute=1)
    near = engine.stats(room).dealt_total + 5  # fifth in line
    engine.poll(room, f"v{near - 1}", near, 1)  # both scripts loaded into Redis before counting
    calls = evalsha_calls(engine)
    guessed = engine.poll(room, f"v{near - 1}", near, 1)  # no hint: the far poll hands it on
    assert evalsha_calls(engine) - calls == 2
    calls = evalsha_calls(engine)
    told = engine.poll(room, f"v{near - 1}", near, 1, near_head=True)
    assert evalsha_calls(engine) - calls == 1
    assert (told.status, told.position, told.eta_seconds) == (
        guessed.status,
        guessed.position,
        guessed.eta_seconds,
    )
    # A stale hint costs nothing but the small poll: a deep spot told "near" still answers right.
    deep = engine.poll(room, "v189", 190, 1, near_head=True)
    assert deep.position == engine.poll(room, "v189", 190, 1).position
