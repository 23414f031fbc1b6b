"""Idle and slow clients cost nothing (issue 21): with many silent connections and clients
sending their request a byte a second, others' polls and /healthz answer as fast as ever.

Scaled to stay fast (300 idle connections, 30 slow clients); bench/faults.py measures the full
scenario (1,000 and 100).
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import threading
import time

import pytest
import redis
import requests

from anteroom.queue.line.room_engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServers
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

IDLE, SLOW = 300, 30
REQUEST = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


def test_idle_and_slow_clients_delay_nobody(
    live_server: LiveServers, redis_client: redis.Redis
) -> None:
    server = live_server(ANTEROOM_POW_DIFFICULTY="4", ANTEROOM_TRUSTED_PROXIES="1")
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("web")[0].public_key
    engine.open(make_room(engine, env="web", slug="calm", ratePerMinute=1))
    poller = Visitor(server.url, api_key, address="198.51.100.40")
    assert poller.enter("calm").status_code == 200
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(IDLE)]
    slow = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(SLOW)]
    stop = threading.Event()

    def dribble() -> None:  # one byte a second from each slow client, never a whole request
        sent = 0
        while not stop.wait(1.0) and sent < len(REQUEST) - 1:
            for s in slow:
                with contextlib.suppress(OSError):
                    s.send(REQUEST[sent : sent + 1])
            sent += 1

    dribbler = threading.Thread(target=dribble, daemon=True)
    dribbler.start()
    try:
        for s in slow:  # every slow client has begun its request
            s.send(REQUEST[:1])
        took: list[float] = []
        for _ in range(15):
            for call in (lambda: requests.get(server.url + "/healthz", timeout=10), poller.poll):
                start = time.perf_counter()
                answer = call()
                took.append(time.perf_counter() - start)
                assert answer.status_code == 200
    finally:
        stop.set()
        dribbler.join()
        for s in idle + slow:
            s.close()
        poller.close()
    # Before (gthread): each silent connection held one of a worker's threads for seconds.
    assert statistics.median(took) < 0.1, sorted(took)
    assert max(took) < 1.0, sorted(took)
