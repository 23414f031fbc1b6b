"""Enter, the near poll and refresh each make one Redis round trip in a warm process (issue 21,
item 3): a slow Redis is paid once per request. Counted from Redis itself (INFO commandstats):
one command per request, the queue script, is one round trip.

The per-address enter limit, which the enter script now counts, still refuses with its error and
Retry-After; a room setting changed by an operator still reaches enter within one round of the
room directory (RoomDirectory.current).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
import redis
from flask import Flask

from anteroom.config import Settings
from anteroom.queue.connection import lua_scripts
from anteroom.service_container import Services
from anteroom.web.app_factory import close_app, create_app
from helpers import make_room
from visitor_client import Answer, Visitor

pytestmark = pytest.mark.redis
T = TypeVar("T")


class Monitor:
    """The commands clients send Redis (not those a script runs), as MONITOR shows them: each
    is one round trip of its own. A marker command ends each request's share."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._monitor = client.monitor().__enter__()
        self._marks = 0

    def until_mark(self) -> list[str]:
        """The commands sent since the last mark (the marker itself left out)."""
        self._marks += 1
        mark = f"round-trips-mark-{self._marks}"
        self.client.echo(mark)
        sent = []
        while True:
            found = self._monitor.next_command()
            if found["client_type"] == "lua":
                continue
            if found["command"] == f"ECHO {mark}":
                return sent
            sent.append(found["command"].split()[0].upper())

    def close(self) -> None:
        self._monitor.__exit__()


class Warm:
    """The app with its scripts loaded and its room directory current, and no background
    thread sending commands of its own: what Redis counts is the requests'."""

    def __init__(self, app: Flask, redis_client: redis.Redis, monitor: Monitor) -> None:
        self.services: Services = app.extensions["anteroom"]
        self.monitor = monitor
        self.client = app.test_client()
        self.services.directory.stop(wait=5)  # its refresher and the room ticker stay stopped
        for name in lua_scripts.OPERATIONS:
            redis_client.script_load(lua_scripts.source(name))
        self.api_key = self.services.keystore.create("shop")[0].public_key

    def room(self, slug: str, **config: object) -> str:
        room_id = make_room(self.services.engine, env="shop", slug=slug, **config)
        self.services.engine.open(room_id)
        self.services.directory.refresh_once()  # a round of the refresher: the directory knows it
        return room_id

    def counted(self, request: Callable[[], T]) -> tuple[T, list[str]]:
        """``request()``'s answer and the commands sent to Redis for it."""
        self.monitor.until_mark()
        answer = request()
        return answer, self.monitor.until_mark()


@pytest.fixture
def monitor(redis_client: redis.Redis) -> Iterator[Monitor]:
    watching = Monitor(redis_client)
    yield watching
    watching.close()


@pytest.fixture
def warm(app: Flask, redis_client: redis.Redis, monitor: Monitor) -> Warm:
    return Warm(app, redis_client, monitor)


@pytest.fixture
def tight_app(settings: Settings, redis_client: redis.Redis) -> Iterator[Flask]:
    app = create_app(settings.with_overrides(limit_enter="2/minute"), {"TESTING": True})
    yield app
    close_app(app)


def test_enter_near_poll_and_refresh_each_make_one_round_trip(warm: Warm) -> None:
    warm.room("drop", ratePerMinute=1)
    first, visitor = Visitor(warm.client, warm.api_key), Visitor(warm.client, warm.api_key)
    assert first.enter("drop").status_code == 200  # first in line (nothing banked yet)
    assert visitor.identify().status_code == 200

    answer, sent = warm.counted(lambda: visitor.enter("drop"))
    assert answer.status_code == 200 and answer.json["status"] == "waiting"
    assert sent == ["EVALSHA"]  # the limit, the room, the entry: one script

    answer, sent = warm.counted(visitor.poll)  # second in line: the near poll
    assert answer.status_code == 200 and answer.json["position"] == 2
    assert sent == ["EVALSHA"]

    room = warm.room("open", ratePerMinute=60)
    warm.services.engine.shift_clock(room, 2_000)  # a second's admission banked
    token = Visitor(warm.client, warm.api_key).admitted("open")
    body = {"apiKey": warm.api_key, "token": token}
    answer, sent = warm.counted(lambda: visitor.post("admission/refresh", body))
    assert answer.status_code == 200 and answer.json["token"]
    assert sent == ["EVALSHA"]


def test_the_enter_limit_counted_by_the_script_refuses_with_retry_after(
    tight_app: Flask, redis_client: redis.Redis, monitor: Monitor
) -> None:
    warm = Warm(tight_app, redis_client, monitor)
    room = warm.room("drop", ratePerMinute=1)
    address = "198.51.100.20"
    sessions = []
    for i in range(4):  # identified from elsewhere: only the entries come from ``address``
        v = Visitor(warm.client, warm.api_key, address=f"198.51.100.{30 + i}")
        assert v.identify().status_code == 200
        sessions.append(v.session)

    def enter(session: str | None) -> Answer:
        body = {"apiKey": warm.api_key, "room": "drop", "sessionToken": session}
        return Visitor(warm.client, warm.api_key, address=address).post("queue/enter", body)

    assert [enter(s).status_code for s in sessions[:2]] == [200, 200]
    refused, sent = warm.counted(lambda: enter(sessions[2]))
    assert refused.status_code == 429
    assert refused.json["error"] == "RateLimited"
    retry = int(refused.headers["Retry-After"])
    assert 1 <= retry <= 60 and refused.json["retryAfter"] == retry
    assert sent == ["EVALSHA"]
    assert warm.services.engine.stats(room).tickets == 2  # the refused entry took no spot
    # Known over from now on: refused from this worker's memory, at no Redis cost.
    again, sent = warm.counted(lambda: enter(sessions[3]))
    assert again.status_code == 429 and int(again.headers["Retry-After"]) <= retry
    assert sent == []
    # Another address is not affected.
    other = Visitor(warm.client, warm.api_key, address="198.51.100.21")
    body = {"apiKey": warm.api_key, "room": "drop", "sessionToken": sessions[3]}
    assert other.post("queue/enter", body).status_code == 200


def test_a_changed_room_setting_reaches_enter_within_one_directory_round(warm: Warm) -> None:
    room = warm.room("drop", ratePerMinute=1, notice="Doors at nine.")
    visitor = Visitor(warm.client, warm.api_key)
    assert visitor.enter("drop").json["notice"] == "Doors at nine."
    warm.services.engine.update_room(room, {"notice": "Doors at ten."})
    warm.services.directory.refresh_once()  # the refresher's next round (every REFRESH_SEC)
    assert visitor.enter("drop").json["notice"] == "Doors at ten."
    assert visitor.poll().json["notice"] == "Doors at ten."


def test_a_directory_past_its_round_is_not_trusted(warm: Warm) -> None:
    room = warm.room("drop", ratePerMinute=1, notice="Doors at nine.")
    directory = warm.services.directory
    visitor = Visitor(warm.client, warm.api_key)
    assert visitor.enter("drop").status_code == 200
    warm.services.engine.update_room(room, {"notice": "Doors at ten."})
    now = directory.known.at
    directory.clock = lambda: now + directory.interval + 60  # the refresher stopped a minute ago
    assert directory.current() is None
    assert visitor.enter("drop").json["notice"] == "Doors at ten."  # read from Redis instead
