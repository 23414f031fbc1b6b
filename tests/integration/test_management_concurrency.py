"""Concurrent PATCHes interleaved with concurrent entries, through a real 4-worker gunicorn."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
import requests

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from live_server import LiveServer, LiveServers
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

VISITORS = 48
ROUNDS = 12
# Each field is written by one thread only, so its final value is known: a lost update shows.
WRITERS: dict[str, Any] = {
    "name": lambda i: f"Drop, take {i}",
    "ratePerMinute": lambda i: 6_000 + i,
    "admissionTtlSec": lambda i: 300 + i,
    "maxWaiting": lambda i: 10_000 + i,
    "abandonAfterSec": lambda i: 600 + i,
    "failMode": lambda i: ("open", "closed")[i % 2],
}


@pytest.fixture
def server(live_server: LiveServers, redis_client: redis.Redis) -> LiveServer:
    return live_server(
        ANTEROOM_POW_DIFFICULTY="6",
        ANTEROOM_LIMIT_IDENTIFY="1000/minute",
        ANTEROOM_LIMIT_ENTER="1000/minute",
        ANTEROOM_LIMIT_CHALLENGE="1000/minute",
    )


def test_concurrent_patches_and_entries_lose_nothing(
    server: LiveServer, redis_client: redis.Redis
) -> None:
    store = KeyStore(redis_client, Engine(redis_client).keys)
    record, secret = store.create("prod")
    auth = {"Authorization": f"Bearer {secret}"}
    api = server.url + "/api/management/v1/queues"
    room = requests.post(
        api,
        json={"slug": "drop", "name": "Drop", "redirectUrl": "https://shop.example/",
              "capacity": 5, "ratePerMinute": 6_000, "holdScore": 100},
        headers=auth, timeout=10,
    ).json()  # fmt: skip
    assert requests.patch(f"{api}/{room['id']}", json={"action": "open"}, headers=auth).ok

    def identified(_: int) -> Visitor:
        visitor = Visitor(server.url, record.public_key)
        assert visitor.identify().status_code == 200
        return visitor

    with ThreadPoolExecutor(8) as pool:
        visitors = list(pool.map(identified, range(VISITORS)))

    def enter(visitor: Visitor) -> dict[str, Any]:
        answer = visitor.enter("drop")
        assert answer.status_code == 200, answer.text
        again = visitor.poll()
        assert again.status_code == 200, again.text
        return answer.json  # type: ignore[no-any-return]

    def writer(field: str) -> list[int]:
        codes = []
        for i in range(ROUNDS):
            response = requests.patch(
                f"{api}/{room['id']}", json={field: WRITERS[field](i)}, headers=auth, timeout=10
            )
            codes.append(response.status_code)
        return codes

    with ThreadPoolExecutor(16) as pool:
        writes = [pool.submit(writer, field) for field in WRITERS]
        answers = list(pool.map(enter, visitors))
        codes = [code for w in writes for code in w.result()]

    assert codes == [200] * (ROUNDS * len(WRITERS))
    final = requests.get(f"{api}/{room['id']}", headers=auth, timeout=10).json()
    for field, value in WRITERS.items():
        assert final[field] == value(ROUNDS - 1), field
    assert final["capacity"] == 5 and final["holdScore"] == 100 and final["status"] == "open"
    tickets = [a["ticket"] for a in answers]
    assert len(set(tickets)) == VISITORS  # one spot each, no ticket handed out twice
    stats = Engine(redis_client).stats(room["id"])
    assert stats.waiting + stats.held + stats.dealt_total == VISITORS
    assert stats.dealt_total >= 5 and stats.peak_active <= 5  # capacity held throughout
    audit = requests.get(
        server.url + "/api/management/v1/audit", params={"limit": 500}, headers=auth, timeout=10
    ).json()["events"]
    updates = [e for e in audit if e["type"] == "queue.updated" and "action" not in e]
    assert len(updates) == ROUNDS * len(WRITERS)
