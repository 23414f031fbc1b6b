"""The operator console's counters: entries, QueueFull refusals, leaves, spots swept, admissions,
and the wait histogram, each counted where it happens."""

from __future__ import annotations

import pytest

from anteroom.engine import Engine
from anteroom.queue.line import room_engine as eng
from helpers import make_room

pytestmark = pytest.mark.redis

START = 1_800_000_000_000


def pinned(engine: Engine, **config: int) -> str:
    room = make_room(engine, **({"ratePerMinute": 60} | config))
    engine.set_clock(room, START)
    engine.open(room)
    return room


def test_a_new_room_counts_nothing(engine: Engine) -> None:
    room = make_room(engine)
    assert engine.counters(room) == {"nent": 0, "nfull": 0, "nleft": 0, "nswept": 0, "dealt": 0}
    assert set(engine.waits(room).values()) == {0}
    # The console and the series API show these buckets (upper bounds in seconds), in order.
    assert list(engine.waits(room)) == [
        "1", "2", "5", "10", "20", "30", "60", "120", "300", "600", "1200", "1800", "3600",
        "7200", "inf",
    ]  # fmt: skip


def test_entries_refusals_and_leaves_are_counted_once_each(engine: Engine) -> None:
    room = pinned(engine, maxWaiting=3)
    answers = [engine.enter(room, f"v{i}", "s", 10) for i in range(3)]
    engine.enter(room, "v0", "s", 10)  # the same spot again: not a new entry
    for vid in ("v3", "v4"):
        with pytest.raises(eng.QueueFull):
            engine.enter(room, vid, "s", 10)
    assert engine.leave(room, "v1", answers[1].ticket or 0, 1)
    assert not engine.leave(room, "v1", answers[1].ticket or 0, 1)  # nothing left to free
    counters = engine.counters(room)
    assert (counters["nent"], counters["nfull"], counters["nleft"]) == (3, 2, 1)


def test_abandoned_spots_are_counted_as_swept(engine: Engine) -> None:
    room = pinned(engine, abandonAfterSec=60, ratePerMinute=1)
    for i in range(4):
        engine.enter(room, f"v{i}", "s", 10)  # the first entry begins a sweep pass
    engine.shift_clock(room, 91_000)  # all four abandoned; a pass may begin
    engine.sweep(room)
    assert engine.stats(room).waiting == 0
    assert engine.counters(room)["nswept"] == 4
    engine.enter(room, "late", "s", 10)  # waits behind nobody: the drain takes it at once…
    engine.enter(room, "later", "s", 10)
    engine.shift_clock(room, 91_000)  # …and finds "later" abandoned when it runs
    engine.tick(room)
    assert engine.counters(room)["nswept"] == 5


def test_each_admission_books_its_wait_from_entry(engine: Engine) -> None:
    room = pinned(engine, ratePerMinute=60)  # one a second
    for i in range(4):
        engine.enter(room, f"v{i}", "s", 10)
    for step in (1_000, 9_000, 50_000):  # waits 1 s, 10 s and 60 s from the entries at START
        engine.shift_clock(room, step)
        engine.tick(room)
    waits = engine.waits(room)
    assert (waits["1"], waits["10"], waits["60"]) == (1, 1, 1)
    assert sum(waits.values()) == engine.counters(room)["dealt"] == 3


def test_counters_outlive_a_close(engine: Engine) -> None:
    room = pinned(engine)
    engine.enter(room, "v0", "s", 10)
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    engine.close(room)
    counters = engine.counters(room)
    assert (counters["nent"], counters["dealt"]) == (1, 0)  # dealt counts the opening only
    assert sum(engine.waits(room).values()) == 1


def test_the_stats_of_several_rooms_come_in_one_round_decoded_by_name(engine: Engine) -> None:
    room = pinned(engine)
    gone = make_room(engine, slug="gone")
    engine.enter(room, "v0", "s", 10)
    engine.delete_room(gone)
    figures, deleted = engine.stats_of([room, gone])
    assert figures == engine.stats(room)  # the metrics scrape reads what the console reads
    assert (figures.status, figures.waiting) == ("open", 1)
    assert deleted is None  # deleted since: no figure rather than a stale one


def unused(engine: Engine, room: str) -> int:
    return engine.departures_of([room])[0][1]


def test_an_admission_that_runs_out_unrenewed_is_counted_unused(engine: Engine) -> None:
    room = pinned(engine, ratePerMinute=6000, admissionTtlSec=30)
    engine.shift_clock(room, 1_000)  # a second open: room for five at once
    renewed, idle, leaver, revoked, polled = (
        engine.enter(room, vid, f"s-{vid}", 10)
        for vid in ("renewed", "idle", "leaver", "revoked", "polled")
    )  # fmt: skip
    for answer in (renewed, idle, leaver, revoked, polled):
        assert answer.status == "admitted"
    engine.shift_clock(room, 10_000)
    assert renewed.admission is not None
    engine.refresh(room, "renewed", renewed.generation, renewed.admission.jti)  # seen in use
    assert engine.leave(room, "leaver", leaver.ticket or 0, leaver.generation)
    assert engine.revoke(room, vid="revoked", life_ms=60_000)
    # Past every expiry and its grace minute: the sweep drops the rest, one poll finds its own.
    engine.shift_clock(room, 120_000)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "polled", polled.ticket or 0, polled.generation)
    assert unused(engine, room) == 1  # "polled": admitted, never renewed
    while not engine.sweep(room)[1]:
        pass
    # "idle" ran out unrenewed too; "renewed" ran out after a renewal: used, not counted.
    assert unused(engine, room) == 2
    used_key = engine.keys.room_keys(room)["used"]
    assert engine.redis.scard(used_key) == 0  # nothing kept for admissions that are gone


def test_a_new_admission_of_the_same_visitor_starts_unused(engine: Engine) -> None:
    room = pinned(engine, ratePerMinute=6000, admissionTtlSec=30)
    engine.shift_clock(room, 1_000)
    first = engine.enter(room, "v", "s1", 10)
    assert first.admission is not None
    engine.refresh(room, "v", first.generation, first.admission.jti)
    engine.shift_clock(room, 200_000)  # the renewed admission runs out
    again = engine.enter(room, "v", "s2", 10)  # in again: a new admission, never renewed
    assert again.status == "admitted" and unused(engine, room) == 0
    engine.shift_clock(room, 200_000)
    while not engine.sweep(room)[1]:
        pass
    assert unused(engine, room) == 1
