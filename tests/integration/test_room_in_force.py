"""The room in force (mode, running event, safety net, rate, capacity) is one rule in each
language: lua/_in_force.lua for the scripts, room_events.in_force for the web tier. For every
combination of the room's mode, a running event's override and the safety net's state, the
far poll's snapshot (which the scripts build with the piece) and the Python function, given the
room as the directory reads it, say the same. Real Redis; the room's clock is pinned."""

from __future__ import annotations

import itertools
import time

import pytest
import redis

from anteroom.engine import Engine
from anteroom.queue.connection.script_replies import SNAPSHOT_AT
from anteroom.queue.rooms import room_events
from anteroom.queue.rooms.room_hash import stored
from helpers import make_room

pytestmark = pytest.mark.redis

MODES = ("fifo", "random", "passthrough", "reject")
NET = {"activeSessions": 1_000, "arrivalsPerMinute": 1_000, "coolDownSec": 60}
# (what the event overrides, or None: no event runs)
EVENTS = [None, {"ratePerMinute": 7, "capacity": 3}, {"capacity": None}] + [
    {"mode": mode, "ratePerMinute": 9} for mode in MODES
]


def test_the_scripts_and_python_judge_the_room_in_force_alike(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room = make_room(engine, ratePerMinute=60, capacity=50)
    now = engine.stats(room).now_ms
    engine.set_clock(room, now)
    engine.open(room)
    hash_key = engine.keys.room(room)
    seen = set()
    for own, overrides, net in itertools.product(MODES, EVENTS, ("none", "calm", "queueing")):
        engine.update_room(room, {"mode": own, "safetyNet": None if net == "none" else NET})
        redis_client.hset(hash_key, stored("safetyNetState"), "q" if net == "queueing" else "")
        events = []
        if overrides is not None:
            events = [{"id": room_events.new_id(), "startsAt": now - 1_000,
                       "endsAt": now + 60_000, "overrides": overrides}]  # fmt: skip
        engine.set_events(room, engine.get_room(room)["eventsVersion"], events)
        raw = engine._run_read("snapshot", room, "")
        at = SNAPSHOT_AT
        scripts = (raw[at.mode], int(raw[at.rate]), int(raw[at.capacity]))
        python = room_events.in_force(engine.get_room(room), int(time.time() * 1000))
        said = (python["mode"], python["ratePerMinute"], python["capacity"] or 0)
        assert scripts == said, (own, overrides, net)
        seen.add(said[0])
    assert seen == set(MODES)  # every mode came out in force somewhere


def test_a_plain_room_is_returned_as_it_is(engine: Engine) -> None:
    room = engine.get_room(make_room(engine))
    assert room_events.in_force(room, int(time.time() * 1000)) is room
