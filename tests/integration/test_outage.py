"""Redis unreachable: failMode open admits, closed answers 503, the breaker keeps it fast."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from anteroom import storage, verify
from anteroom.app import create_app
from anteroom.config import Settings
from anteroom.embedded import EmbeddedRedis
from anteroom.services import Services
from helpers import TEST_KEYS, free_port, make_room
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path, port=free_port()).start()
    yield server
    server.stop()


def test_outage_fail_modes_breaker_and_recovery(own_redis: EmbeddedRedis) -> None:
    app = create_app(Settings(redis_url=own_redis.url, keys=TEST_KEYS, pow_difficulty=4))
    services: Services = app.extensions["anteroom"]
    clock = FakeClock()
    services.breaker.clock = clock
    services.rooms.clock = clock
    services.public_keys.clock = clock
    client: FlaskClient = app.test_client()
    api_key = services.keystore.create("shop")[0].public_key
    for slug, mode in (("open-room", "open"), ("closed-room", "closed")):
        room_id = make_room(services.engine, env="shop", slug=slug, failMode=mode, ratePerMinute=1)
        services.engine.open(room_id)
    waiting = Visitor(client, api_key)
    assert waiting.enter("closed-room").json["ticket"] == 1
    ahead = Visitor(client, api_key)
    assert ahead.enter("open-room").json["status"] == "waiting"
    newcomer_open, newcomer_closed = Visitor(client, api_key), Visitor(client, api_key)
    newcomer_open.identify()
    newcomer_closed.identify()

    own_redis.stop()
    before = storage.CountingConnection.attempts
    # failMode open: a newcomer is admitted, and the admission says it was a fail-open one.
    response = newcomer_open.enter("open-room")
    assert response.status_code == 200 and response.json["status"] == "admitted"
    claims = verify.verify_admission(response.json["token"], TEST_KEYS, room="open-room").claims
    assert claims and claims["fo"] is True
    assert ahead.poll().json["status"] == "admitted"  # a waiting visitor polling, too
    # failMode closed: 503 with Retry-After, for a newcomer and for the one waiting.
    for attempt in (newcomer_closed.enter("closed-room"), waiting.poll()):
        assert attempt.status_code == 503 and attempt.json["error"] == "Unavailable"
        assert int(attempt.headers["Retry-After"]) > 0
    for _ in range(20):
        assert waiting.poll().status_code == 503
    # The breaker: one failed connection opened it, and nothing tried Redis for 3 s since.
    assert storage.CountingConnection.attempts - before == 1

    own_redis.start()
    clock.now += 3.1  # the breaker's pause is over (and the caches may refresh)
    recovered = waiting.poll()
    assert recovered.status_code == 200 and recovered.json["ticket"] == 1  # the spot survived
    assert newcomer_closed.enter("closed-room").json["ticket"] == 2
