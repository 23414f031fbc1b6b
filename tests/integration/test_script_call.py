"""A script call in one send and one read (queue/connection/script_call.py) keeps what redis-py's
client
does for it: a script the server lost is loaded again, a dropped connection is tried again."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from anteroom.engine import Engine
from anteroom.queue.connection import lua_scripts as scripts
from anteroom.queue.connection.script_replies import QueueAnswer
from helpers import open_room

pytestmark = pytest.mark.redis


def test_a_script_the_server_lost_is_loaded_again(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room = open_room(engine)
    spot = engine.enter(room, "v1", "s1", 10)
    redis_client.script_flush()  # a restarted Redis, or a new one behind the same address
    again = engine.poll(room, "v1", spot.ticket, spot.generation, "s1", True, {})
    assert (again.status, again.ticket, again.position) == ("waiting", spot.ticket, 1)
    poll = redis.commands.core.Script(redis_client, scripts.source("poll"))
    assert redis_client.script_exists(poll.sha) == [True]


@pytest.mark.parametrize("retries", [0, 1])
def test_a_call_whose_connection_drops_in_flight_is_tried_again_as_the_client_says(
    redis_url: str, redis_client: redis.Redis, retries: int
) -> None:
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, retry=Retry(NoBackoff(), retries)
    )
    engine = Engine(client)
    room = open_room(engine)
    spot = engine.enter(room, "v1", "s1", 10)
    outcome: list[object] = []

    def poll() -> None:
        try:
            outcome.append(engine.poll(room, "v1", spot.ticket, spot.generation, "s1", True, {}))
        except Exception as exc:  # what the caller would meet
            outcome.append(exc)

    # Writes (scripts among them) wait while the server is paused: the poll is sent and its
    # connection is then closed by the server before any reply, as at a failover.
    redis_client.client_pause(10_000, all=False)
    caller = threading.Thread(target=poll)
    try:
        caller.start()
        deadline = time.monotonic() + 10
        while not [c for c in redis_client.client_list() if "b" in c["flags"]]:
            assert time.monotonic() < deadline, "the poll never reached the server"
            time.sleep(0.005)  # waiting to see the poll blocked, not for a race to pass
        assert redis_client.client_kill_filter(_type="normal", skipme=True) >= 1
    finally:
        redis_client.client_unpause()
    caller.join(10)
    client.close()
    if retries == 0:
        assert isinstance(outcome[0], Exception), outcome
        return
    answer = outcome[0]
    assert isinstance(answer, QueueAnswer), answer
    assert (answer.status, answer.position) == ("waiting", 1)
