"""A real gunicorn with 4 workers: limits across workers, body limits, a mobile-style client."""

from __future__ import annotations

import http.client
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from anteroom.engine import Engine
from anteroom.identity import proof_of_work as pow
from anteroom.sdk import verification as verify
from anteroom.store.keystore import KeyStore
from anteroom.web.app_factory import MAX_BODY_BYTES
from helpers import TEST_KEYS, make_room
from live_server import LiveServer, LiveServers
from visitor_client import HttpTransport, Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def answering_workers(server: LiveServer, request_line: str) -> list[int]:
    """Pids of the gunicorn workers that answered ``request_line``, from the access log."""
    pattern = re.compile(rf'"{re.escape(request_line)}" \d+ .* <(\d+)>$')
    found = (pattern.search(line) for line in server.log.read_text().splitlines())
    return [int(match.group(1)) for match in found if match]


@pytest.fixture
def server(live_server: LiveServers, redis_client: redis.Redis) -> LiveServer:
    return live_server(
        ANTEROOM_LIMIT_CHALLENGE="1000/minute",  # counted per worker: out of this test's way
        ANTEROOM_LIMIT_IDENTIFY="25/hour",
        ANTEROOM_POW_DIFFICULTY="8",
    )


def test_per_address_limit_holds_across_workers(
    server: LiveServer, redis_client: redis.Redis
) -> None:
    api_key = KeyStore(redis_client, Engine(redis_client).keys).create("shop")[0].public_key

    def solved(_: int) -> dict[str, str]:
        with Visitor(server.url, api_key) as visitor:
            return visitor.solved()

    def wrong(challenge: str) -> str:
        return next(str(n) for n in range(1000) if not pow.check_solution(challenge, str(n), 8))

    def identify_all(
        share: list[dict[str, str]], conn: http.client.HTTPConnection
    ) -> list[tuple[int, str | None]]:
        answers = []
        for body in share:
            for attempt in range(3):
                try:
                    conn.request(
                        "POST",
                        "/api/v1/identify",
                        json.dumps(body),
                        {"Content-Type": "application/json"},
                    )
                    response = conn.getresponse()
                    break
                except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                    # gunicorn closes a kept-alive connection idle for 2 s (a loaded machine
                    # between two requests): the request was never read, so sending it again
                    # counts it once. The new connection may reach another worker; the log
                    # below still shows which ones answered.
                    conn.close()
                    if attempt == 2:
                        raise
            response.read()
            answers.append((response.status, response.getheader("Retry-After")))
        return answers

    def spread(bodies: list[dict[str, str]]) -> list[tuple[int, str | None]]:
        shares = [bodies[i :: len(conns)] for i in range(len(conns))]
        with ThreadPoolExecutor(len(conns)) as pool:
            return [a for answers in pool.map(identify_all, shares, conns) for a in answers]

    with ThreadPoolExecutor(16) as pool:
        bodies = list(pool.map(solved, range(80)))
    # Pinned once the solving is done: a connection left idle while a loaded machine solves
    # outlives the server's keep-alive and is closed under the test (a broken pipe in CI).
    pinned = server.connection_per_worker()
    assert len(pinned) >= 2, "could not reach two workers"
    conns = list(pinned.values())
    try:
        # Garbage first, from the same address: refused for what it is, and not counted.
        unsolved = [b | {"solution": wrong(b["challenge"])} for b in bodies[:40]]
        assert [code for code, _ in spread(unsolved)] == [400] * len(unsolved)
        results = spread(bodies)
    finally:
        for conn in conns:
            conn.close()
    codes = [code for code, _ in results]
    assert codes.count(200) == 25 and codes.count(429) == 55
    assert all(int(retry or 0) > 0 for code, retry in results if code == 429)
    # gunicorn writes each access-log line once its answer is sent: wait for the last ones.
    deadline = time.monotonic() + 10
    while len(workers := answering_workers(server, "POST /api/v1/identify")) < 120:
        assert time.monotonic() < deadline, workers
        time.sleep(0.05)  # waiting for another process's log, not for a race
    assert len(workers) == 120
    # The limit is only shown to hold across workers if more than one of them answered.
    assert len(set(workers)) >= 2, workers
    assert set(workers) <= set(server.workers())


def test_mobile_client_follows_only_the_answers(
    server: LiveServer, redis_client: redis.Redis
) -> None:
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("app")[0].public_key
    room = make_room(engine, env="app", slug="launch", ratePerMinute=60)
    engine.open(room)
    for i in range(2):  # two visitors ahead: the client has to wait its turn
        engine.enter(room, f"ahead{i}", "s", 10)
    # urllib3 honours Retry-After on 429 and 503 by itself: the client writes no wait logic.
    retry = Retry(total=20, status_forcelist=[429, 503], allowed_methods=None,
                  respect_retry_after_header=True, backoff_factor=0.2)  # fmt: skip
    http = HttpTransport(server.url)
    http.session.mount("http://", HTTPAdapter(max_retries=retry))
    # An app, not a browser: its own User-Agent, and no agent to report signals.
    mobile = {"User-Agent": "ShopApp/3.1 (Android 15)", "Accept-Language": "en"}
    app = Visitor(http, api_key, headers=mobile)
    assert app.identify(signals={}).status_code == 200
    answer = app.enter("launch").json
    polls = 0
    while answer["status"] == "waiting":
        time.sleep(answer["pollAfterMs"] / 1000)  # the client's own cadence, as the server asks
        answer = app.poll().json
        polls += 1
        assert polls < 30
    assert answer["status"] == "admitted" and polls >= 1
    result = verify.verify_admission(answer["token"], TEST_KEYS, room="launch")
    assert result.valid and result.claims and result.claims["env"] == "app"


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_an_over_long_body_is_413_under_gunicorn(server: LiveServer, chunked: bool) -> None:
    # 8 MiB: more than the socket buffers hold, so the client is still sending
    # when the server answers. A client that sends the whole body before it reads (http.client,
    # most mobile stacks) must hear the 413, not a connection reset.
    body = json.dumps({"apiKey": "x" * (512 * MAX_BODY_BYTES)}).encode()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(
            "POST", "/api/v1/queue/poll",
            body=iter(body[i : i + 4096] for i in range(0, len(body), 4096)) if chunked else body,
            headers={"Content-Type": "application/json"},
            encode_chunked=chunked,
        )  # fmt: skip
        response = connection.getresponse()
        answer = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 413, answer
    assert answer["error"] == "PayloadTooLarge"
