"""The running service sweeps abandoned spots by itself: no test calls ``Engine.sweep`` here."""

from __future__ import annotations

import pytest
import redis

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer, LiveServers
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

ABANDON_SEC = 300  # the default abandonAfterSec
STEP_MS = 60_000  # the pollers' rhythm here: once a clock minute, well inside ABANDON_SEC


@pytest.fixture
def server(live_server: LiveServers, redis_client: redis.Redis) -> LiveServer:
    # After redis_client's flush: a server started before it would hold the previous test's
    # room "drop" in its directory for a round, and enter that room's old id.
    return live_server(ANTEROOM_TRUSTED_PROXIES="1", ANTEROOM_POW_DIFFICULTY="8")


def test_silent_spots_leave_a_full_line_within_abandon_time_plus_a_minute(
    server: LiveServer, redis_client: redis.Redis
) -> None:
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    # Capacity, not rate, is the bound: the one slot stays taken, so the drain never reaches the
    # line and only a sweep can drop anybody from it.
    room = make_room(
        engine, slug="drop", ratePerMinute=60, capacity=1, admissionTtlSec=3_600, maxWaiting=5
    )
    engine.open(room)
    engine.shift_clock(room, 1_000)  # one admission earned
    address = iter(f"198.51.100.{i}" for i in range(1, 50))
    Visitor(server.url, api_key, next(address)).admitted("drop")
    line = [Visitor(server.url, api_key, next(address)) for _ in range(5)]
    for visitor in line:
        assert visitor.enter("drop").json["status"] == "waiting"
    pollers, silent = [line[0], line[4]], line[1:4]  # the silent ones sit mid-line
    late = Visitor(server.url, api_key, next(address))
    full = late.enter("drop")
    assert full.status_code == 429 and full.json["error"] == "QueueFull"

    elapsed = 0
    while elapsed < (ABANDON_SEC + 60) * 1000:
        engine.shift_clock(room, STEP_MS)
        elapsed += STEP_MS
        for visitor in pollers:
            assert visitor.poll().json["status"] == "waiting"
        if elapsed < ABANDON_SEC * 1000:
            assert len(engine.line(room)) == 5  # nobody is dropped before abandonAfterSec

    assert [entry.position for entry in engine.line(room)] == [1, 2]
    assert [v.poll().json["position"] for v in pollers] == [1, 2]  # the pollers kept their places
    for visitor in silent:
        gone = visitor.poll()
        assert gone.status_code == 410 and gone.json["error"] == "TicketGone"
    newcomers = [late] + [Visitor(server.url, api_key, next(address)) for _ in range(3)]
    answers = [v.enter("drop") for v in newcomers]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]  # three places came free
    assert [a.json["position"] for a in answers[:3]] == [3, 4, 5]
