"""The site SDK's queue-through (``anteroom.sdk.queue_through``) against the real edge
middleware in front of a real app, and the real service on a real Redis: the conformance kit's
server, whose resource sits behind ``AnteroomMiddleware`` and counts each admission's uses."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from anteroom.ops.conformance_server import PUBLIC_KEY, CaseState, KitServer
from anteroom.sdk.queue_through import (
    ADMISSION_HEADER,
    LineClosed,
    QueueThrough,
    async_httpx_transport,
    httpx_transport,
    open_through,
    requests_session,
)
from helpers import in_own_loop


@pytest.fixture(scope="module")
def kit() -> Iterator[KitServer]:
    server = KitServer().start()
    yield server
    server.stop()


class Case:
    """One fresh room on the kit and its protected resource; ``done()`` gives the record."""

    def __init__(self, kit: KitServer, **case: Any) -> None:
        self.kit = kit
        self.env = kit.begin({"name": "sdk"} | case)
        self.resource = self.env["ANTEROOM_RESOURCE"]
        self.states: list[dict[str, Any]] = []

    def through(self, **options: Any) -> QueueThrough:
        return QueueThrough(PUBLIC_KEY, on_state=self.states.append, max_wait=30, **options)

    def done(self) -> CaseState:
        return self.kit.end()


def journey(state: CaseState) -> list[tuple[str, int]]:
    return [(r.kind, r.status) for r in sorted(state.records, key=lambda r: r.at)]


QUEUED = [("resource", 429), ("arrive", 200), ("join", 200), ("poll", 200), ("resource", 200)]


def test_requests_queues_through_a_refused_get_and_retries_it_once(kit: KitServer) -> None:
    case = Case(kit)
    session = requests_session(case.through())
    answer = session.get(case.resource, timeout=30)
    state = case.done()
    assert answer.status_code == 200
    assert answer.json() == {"ok": True, "uses": 1}
    assert answer.request.headers[ADMISSION_HEADER].startswith("ab1.")
    assert journey(state) == QUEUED
    assert list(state.uses.values()) == [1]
    # It waited what the join said before polling (pollAfterMs 1000).
    join, poll = (r for r in state.records if r.kind in ("join", "poll"))
    assert poll.at - join.done >= 0.95
    assert [s["state"] for s in case.states] == ["waiting", "admitted"]


def test_httpx_queues_through_a_refused_get_and_retries_it_once(kit: KitServer) -> None:
    case = Case(kit)
    with httpx.Client(transport=httpx_transport(case.through()), timeout=30) as client:
        answer = client.get(case.resource)
    state = case.done()
    assert answer.status_code == 200 and answer.json()["uses"] == 1
    assert journey(state) == QUEUED


def test_async_httpx_queues_through_without_blocking_the_loop(kit: KitServer) -> None:
    case = Case(kit)
    ticks = 0

    async def main() -> int:
        nonlocal ticks
        transport = async_httpx_transport(case.through())
        async with httpx.AsyncClient(transport=transport, timeout=30) as client:
            call = asyncio.create_task(client.get(case.resource))
            while not call.done():  # the loop keeps running while the call waits in line
                ticks += 1
                await asyncio.sleep(0.05)
            return (await call).status_code

    status = in_own_loop(main())
    state = case.done()
    assert status == 200
    assert journey(state) == QUEUED
    assert ticks >= 10  # the line took a second; the loop ran throughout


def test_urllib_queues_through_and_reads_the_public_key_from_the_refusal(kit: KitServer) -> None:
    case = Case(kit)
    qt = QueueThrough(max_wait=30)  # no key given: the refusal's queuePage names it
    with open_through(urllib.request.Request(case.resource), qt) as answer:
        status = answer.status
    state = case.done()
    assert status == 200
    assert journey(state) == QUEUED


def test_a_refused_post_is_handed_back_unless_the_app_says_it_may_be_sent_again(
    kit: KitServer,
) -> None:
    case = Case(kit)
    refused = requests_session(case.through()).post(case.resource, json={"n": 1}, timeout=30)
    assert refused.status_code == 429
    assert refused.json()["error"] == "QueueRequired"
    assert journey(case.done()) == [("resource", 429)]  # no call to the line at all

    case = Case(kit)
    allowed = requests_session(case.through(retry_unsafe=True)).post(
        case.resource, json={"n": 1}, timeout=30
    )
    assert allowed.status_code == 200
    assert journey(case.done()) == QUEUED


def test_a_refused_post_through_httpx_and_urllib_is_handed_back_too(kit: KitServer) -> None:
    case = Case(kit)
    with httpx.Client(transport=httpx_transport(case.through()), timeout=30) as client:
        assert client.post(case.resource, json={}).status_code == 429
    request = urllib.request.Request(case.resource, data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        open_through(request, case.through())
    assert refused.value.code == 429
    assert b"QueueRequired" in refused.value.read()  # the body is still there for the app
    assert journey(case.done()) == [("resource", 429), ("resource", 429)]


def test_a_room_that_refuses_the_visitor_ends_the_call_with_line_closed(kit: KitServer) -> None:
    denied = {"status": 403, "json": {"error": "QueueDenied", "message": "No."}}
    case = Case(kit, script=[{"call": "join", "nth": [1, 2], "answer": denied}])
    with pytest.raises(LineClosed) as closed:
        requests_session(case.through()).get(case.resource, timeout=30)
    state = case.done()
    assert closed.value.code == "QueueDenied"
    assert journey(state) == [("resource", 429), ("arrive", 200), ("join", 403)]
    assert case.states[-1] == {"state": "closed"}


def test_an_outage_on_the_line_is_waited_out_and_the_spot_kept(kit: KitServer) -> None:
    down = {"status": 503, "headers": {"Retry-After": "1"}, "json": {"error": "Unavailable"}}
    case = Case(kit, script=[{"call": "poll", "nth": [1], "answer": down}])
    answer = requests_session(case.through()).get(case.resource, timeout=30)
    state = case.done()
    assert answer.status_code == 200
    assert journey(state) == [*QUEUED[:3], ("poll", 503), *QUEUED[3:]]
    failed, polled = (r for r in state.records if r.kind == "poll")
    assert polled.at - failed.done >= 1.0 - 0.05  # its Retry-After, at least
