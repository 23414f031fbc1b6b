"""A room's gracePeriodSec: a quiet spot (a phone asleep, an app in the background) is kept that
long beyond what its own cadence allows, then swept; polled back within it, it keeps its place.

Time is the room's clock, pinned and shifted in Redis (and the snapshot's monotonic clock, a
stand-in the far-poll test moves); nothing sleeps.
"""

from __future__ import annotations

import secrets

import pytest
import redis
from flask.testing import FlaskClient

from anteroom.engine import Engine
from anteroom.queue.line import room_engine as eng
from anteroom.queue.rooms.room_config import queue_token_life
from anteroom.service_container import Services
from anteroom.store.keystore import KeyStore
from helpers import Operator, carried_claims, make_room
from live_server import LiveServer, LiveServers
from visitor_client import Visitor

pytestmark = pytest.mark.redis

START = 1_800_000_000_000
ABANDON_SEC = 60
BOOKING_MS = ABANDON_SEC * 500  # last-seen is booked up to min(abandonAfterSec / 2, 150 s) ahead


def paused_room(engine: Engine, grace: int, **config: int) -> str:
    """An opened, then paused room on a pinned clock: nobody is admitted, only the sweep may
    remove a spot."""
    room = make_room(engine, ratePerMinute=60, abandonAfterSec=ABANDON_SEC, **config)
    if grace:
        engine.update_room(room, {"gracePeriodSec": grace})
    engine.set_clock(room, START)
    engine.open(room)
    engine.pause(room)
    return room


def sweep_pass(engine: Engine, room: str) -> int:
    """A whole sweep pass (one starts at most once a minute); the spots it dropped."""
    dropped, done = engine.sweep(room, 10_000)
    while not done:
        more, done = engine.sweep(room, 10_000)
        dropped += more
    return dropped


@pytest.mark.parametrize("grace", [0, 600])
def test_a_quiet_spot_is_kept_its_grace_beyond_abandon_after_sec_then_swept(
    engine: Engine, grace: int
) -> None:
    room = paused_room(engine, grace)
    answer = engine.enter(room, "sleeper", "s1", 10)
    assert answer.poll_after_ms == 1000  # the front: its cadence alone allows abandonAfterSec
    kept = (ABANDON_SEC + grace) * 1000
    assert answer.kept_until_ms is not None
    assert kept <= answer.kept_until_ms - START <= kept + BOOKING_MS
    engine.shift_clock(room, kept - 1_000)
    assert sweep_pass(engine, room) == 0
    assert engine.stats(room).waiting == 1
    engine.shift_clock(room, BOOKING_MS + 61_000)  # past the booking, and a new pass is due
    assert sweep_pass(engine, room) == 1
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "sleeper", answer.ticket or 0, 1)


def test_polled_back_within_its_grace_a_spot_keeps_its_place(engine: Engine) -> None:
    room = paused_room(engine, 900)
    tickets = {vid: engine.enter(room, vid, f"s-{vid}", 10).ticket or 0 for vid in "abc"}
    # a and c poll every 30 s for 14 minutes; b, between them, is asleep all that time
    for _ in range(28):
        engine.shift_clock(room, 30_000)
        engine.tick(room)
        sweep_pass(engine, room)
        for vid in "ac":
            assert engine.poll(room, vid, tickets[vid], 1).status == "waiting"
    assert engine.stats(room).waiting == 3
    woken = engine.poll(room, "b", tickets["b"], 1)  # 14 min quiet, in a grace of 15 (+ 1)
    assert (woken.status, woken.position) == ("waiting", 2)
    late = engine.enter(room, "d", "s-d", 10)
    assert late.position == 4  # behind the one who slept
    tickets["d"] = late.ticket or 0
    # asleep again, past abandonAfterSec + the grace (and the booking): gone, the others stay
    for _ in range(36):
        engine.shift_clock(room, 30_000)
        engine.tick(room)
        sweep_pass(engine, room)
        for vid in "acd":
            engine.poll(room, vid, tickets[vid], 1)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "b", tickets["b"], 1)
    assert [entry.position for entry in engine.line(room)] == [1, 2, 3]


def test_a_far_poll_from_the_snapshot_keeps_the_grace_too(
    engine: Engine, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2,600 in line at one admission a minute: the last ones are far, told to poll every 5 min
    room = make_room(
        engine, ratePerMinute=1, abandonAfterSec=300, maxWaiting=10_000, gracePeriodSec=1_800
    )
    engine.set_clock(room, START)
    engine.open(room)
    answers = {f"v{i}": engine.enter(room, f"v{i}", f"s{i}", 10) for i in range(2_600)}
    first = answers["v2500"]
    interval = first.poll_after_ms or 0
    assert interval == 300_000
    engine.shift_clock(room, interval)
    engine.snapshots.clock = engine.bookings.clock = lambda: 10_000.0
    scripts: list[str] = []
    run = engine._run

    def counted(op: str, *args: object) -> object:
        scripts.append(op)
        return run(op, *args)

    monkeypatch.setattr(engine, "_run", counted)
    answer = engine.poll(
        room, "v2500", first.ticket or 0, 1, first.session_jti,
        carried=carried_claims(room, "v2500", first),
    )  # fmt: skip
    assert "poll" not in scripts  # answered from the snapshot
    engine.flush_bookings()
    now = START + interval
    assert answer.status == "waiting" and answer.kept_until_ms is not None
    # kept three of its intervals, and the grace beyond, after this poll (less the booking's
    # second of margin)
    assert answer.kept_until_ms - now >= 3 * interval + 1_800_000 - 1_000
    engine.pause(room)
    spots = engine.keys.room_keys(room)["spots"]
    engine.shift_clock(room, 3 * interval + 1_800_000 - 2_000)
    sweep_pass(engine, room)
    assert redis_client.hexists(spots, "v2500")
    assert not redis_client.hexists(spots, "v1200")  # silent since it entered: swept


def test_grace_period_sec_is_checked_and_named_when_wrong(
    client: FlaskClient, services: Services
) -> None:
    _, secret = services.keystore.create("prod")
    op = Operator(
        client,
        secret,
        {"slug": "app-drop", "name": "App drop", "redirectUrl": "https://a.example/"},
    )
    room = op.create()
    assert room["gracePeriodSec"] == 0  # the default: today's behaviour, no grace
    for bad, says in [
        (-1, "must be from 0 to 86,400"),
        (86_401, "must be from 0 to 86,400"),
        ("600", "must be an integer from 0 to 86,400"),
        (None, "must be an integer from 0 to 86,400"),
    ]:
        response = op.patch(room["id"], {"gracePeriodSec": bad})
        assert response.status_code == 400, bad
        assert response.json["fields"] == {"gracePeriodSec": says}
    assert op.patch(room["id"], {"gracePeriodSec": 1_800}).status_code == 200
    assert op.get(room["id"])["gracePeriodSec"] == 1_800


def test_a_queue_token_outlives_the_grace() -> None:
    room = {"abandonAfterSec": 300, "ratePerMinute": 60, "maxWaiting": 1_000}
    assert queue_token_life(room | {"gracePeriodSec": 3_600}) == queue_token_life(room) + 3_600
    assert queue_token_life(room | {"gracePeriodSec": 86_400}) == 86_400  # never beyond a day


@pytest.mark.slow
def test_a_sleeping_visitor_keeps_its_place_through_the_live_servers_workers(
    live_server: LiveServers, redis_client: redis.Redis
) -> None:
    server: LiveServer = live_server(ANTEROOM_TRUSTED_PROXIES="1", ANTEROOM_POW_DIFFICULTY="8")
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    slug = "sleep-" + secrets.token_hex(3)
    # Capacity, not rate, is the bound: the one slot stays taken, so only the sweep moves the line.
    room = make_room(
        engine, slug=slug, ratePerMinute=60, capacity=1, admissionTtlSec=3_600,
        abandonAfterSec=300, gracePeriodSec=600,
    )  # fmt: skip
    engine.open(room)
    engine.shift_clock(room, 1_000)
    address = iter(f"198.51.100.{i}" for i in range(1, 50))
    Visitor(server.url, api_key, next(address)).admitted(slug)
    awake, sleeper, gone = (Visitor(server.url, api_key, next(address)) for _ in range(3))
    for visitor in (awake, sleeper, gone):
        assert visitor.enter(slug).json["status"] == "waiting"
    elapsed = 0
    # 14 minutes asleep: past abandonAfterSec (5), within it + the grace (15)
    while elapsed < 14 * 60_000:
        engine.shift_clock(room, 60_000)
        elapsed += 60_000
        assert awake.poll().json["status"] == "waiting"  # each poll carries a sweep step
    assert len(engine.line(room)) == 3
    woken = sleeper.poll()
    assert woken.status_code == 200 and woken.json["position"] == 2
    # the one who never wakes goes within the grace's end, a booking and a sweep pass
    while elapsed < 19 * 60_000:
        engine.shift_clock(room, 60_000)
        elapsed += 60_000
        for visitor in (awake, sleeper):
            assert visitor.poll().json["status"] == "waiting"
    assert gone.poll().json["error"] == "TicketGone"
    assert [awake.poll().json["position"], sleeper.poll().json["position"]] == [1, 2]
