"""The running service sweeps abandoned spots by itself: no test calls ``Engine.sweep`` here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from anteroom.engine import Engine
from anteroom.identity import proof_of_work as pow
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.ops.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer
from visitor_client import LiveVisitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

ABANDON_SEC = 300  # the default abandonAfterSec
STEP_MS = 60_000  # the pollers' rhythm here: once a clock minute, well inside ABANDON_SEC


@pytest.fixture
def server(redis_server: EmbeddedRedis, tmp_path: Path) -> Iterator[LiveServer]:
    live = LiveServer(
        redis_server.url, tmp_path, ANTEROOM_TRUSTED_PROXIES="1", ANTEROOM_POW_DIFFICULTY="8"
    ).start()
    yield live
    live.stop()


def raw(visitor: LiveVisitor, path: str, body: dict[str, Any]) -> requests.Response:
    """One visitor API call whose refusal the test wants to see (LiveVisitor asserts a 200)."""
    body = {"apiKey": visitor.api_key} | body
    return visitor.http.post(visitor.base + path, json=body, timeout=10)


def try_enter(visitor: LiveVisitor, room: str) -> requests.Response:
    """Identify if need be, then enter ``room``; the raw answer (a full line is a 429)."""
    if visitor.session is None:
        challenge = visitor.post("challenge", {})
        solution = pow.solve(challenge["challenge"], challenge["difficulty"])
        signals = {"webdriver": False, "languages": 2}
        body = {"challenge": challenge["challenge"], "solution": solution, "signals": signals}
        visitor.session = visitor.post("identify", body)["sessionToken"]
    return raw(visitor, "queue/enter", {"room": room, "sessionToken": visitor.session})


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
    LiveVisitor(server.url, api_key, next(address)).admitted("drop")
    line = [LiveVisitor(server.url, api_key, next(address)) for _ in range(5)]
    for visitor in line:
        assert visitor.enter("drop")["status"] == "waiting"
    pollers, silent = [line[0], line[4]], line[1:4]  # the silent ones sit mid-line
    late = LiveVisitor(server.url, api_key, next(address))
    full = try_enter(late, "drop")
    assert full.status_code == 429 and full.json()["error"] == "QueueFull"

    elapsed = 0
    while elapsed < (ABANDON_SEC + 60) * 1000:
        engine.shift_clock(room, STEP_MS)
        elapsed += STEP_MS
        for visitor in pollers:
            assert visitor.poll()["status"] == "waiting"
        if elapsed < ABANDON_SEC * 1000:
            assert len(engine.line(room)) == 5  # nobody is dropped before abandonAfterSec

    assert [entry.position for entry in engine.line(room)] == [1, 2]
    assert [v.poll()["position"] for v in pollers] == [1, 2]  # the pollers kept their places
    for visitor in silent:
        gone = raw(visitor, "queue/poll", {"ticket": visitor.ticket})
        assert gone.status_code == 410 and gone.json()["error"] == "TicketGone"
    newcomers = [late] + [LiveVisitor(server.url, api_key, next(address)) for _ in range(3)]
    answers = [try_enter(v, "drop") for v in newcomers]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]  # three places came free
    assert [a.json()["position"] for a in answers[:3]] == [3, 4, 5]
