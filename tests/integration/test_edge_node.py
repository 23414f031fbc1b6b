"""The Node edge middleware in front of a real Node app, against a real Anteroom.

A visitor queues through the real visitor API (over HTTP, like the browser agent), and the Node
app (tests/node_app/server.mjs) lets it in or refuses it. Rooms run on pinned clocks, moved by the
test, so who is admitted when is decided by the test and never by timing. The last test sends the
same requests to the Python middleware and to the Node one and compares the answers.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
import requests
from werkzeug.serving import WSGIRequestHandler, make_server

from anteroom.edge import AnteroomMiddleware
from anteroom.engine import Engine
from anteroom.sdk import tokens
from anteroom.store.keystore import KeyStore
from anteroom.verify import verify_admission
from helpers import TEST_KEYS, free_port, make_room
from live_server import LiveServer, LiveServers, ServerProcess
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
ROUTES = {"/checkout": "drop", "/api/cart": "drop", "/bound": "bound", "/line": "line"}
NAV = {"Accept": "text/html,application/xhtml+xml", "Sec-Fetch-Mode": "navigate"}
API = {"Accept": "application/json"}
ELSEWHERE = "203.0.113.7"  # a visitor's address that is not the one the Node app sees


def pinned_room(engine: Engine, slug: str, offset_sec: float, **config: Any) -> str:
    """An open room whose clock stands still at now + ``offset_sec`` (its bank empty)."""
    room_id = make_room(engine, env="shop", slug=slug, ratePerMinute=6000, **config)
    engine.set_clock(room_id, int((time.time() + offset_sec) * 1000))
    engine.open(room_id)
    return room_id


def admitted(engine: Engine, room_id: str, visitor: Visitor, slug: str) -> str:
    """Fund the room's bank (one second of its rate), enter, and return the admission."""
    engine.shift_clock(room_id, 1000)
    return visitor.admitted(slug)


@pytest.fixture
def engine(redis_client: redis.Redis) -> Engine:
    return Engine(redis_client)


@pytest.fixture
def api_key(engine: Engine, redis_client: redis.Redis) -> str:
    return KeyStore(redis_client, engine.keys).create("shop")[0].public_key


@pytest.fixture
def anteroom(live_server: LiveServers, redis_client: redis.Redis) -> LiveServer:
    return live_server(
        ANTEROOM_POW_DIFFICULTY="8", ANTEROOM_TRUSTED_PROXIES="1", ANTEROOM_WORKERS="2"
    )


@pytest.fixture
def node_app(anteroom: LiveServer, api_key: str, tmp_path: Path) -> Iterator[str]:
    """tests/node_app/server.mjs in front of ``anteroom``: its base URL, once it listens."""
    # Node 20 is one of the README's prerequisites: without it this must fail, not pass quietly.
    assert NODE is not None, "node is not installed"
    port = free_port()
    env = {
        "ANTEROOM_KEYS": TEST_KEYS,
        "ANTEROOM_BASE_URL": anteroom.url,
        "ANTEROOM_PUBLIC_KEY": api_key,
        "ANTEROOM_ROUTES": json.dumps(ROUTES),
        "PORT": str(port),
    }
    script = str(ROOT / "tests" / "node_app" / "server.mjs")
    log = tmp_path / "node_app.log"
    with ServerProcess([NODE, script], port, log, env=os.environ | env, name="node app") as app:
        yield app.url


def set_cookies(response: requests.Response) -> list[str]:
    return list(response.raw.headers.getlist("Set-Cookie"))


def get(url: str, **headers: str) -> requests.Response:
    return requests.get(url, headers=headers, allow_redirects=False, timeout=10)


def test_an_admitted_visitor_passes_the_node_app(
    anteroom: LiveServer, node_app: str, engine: Engine, api_key: str
) -> None:
    # The clock stands 60 s ahead, so the admission is fresh for the whole test: no refresh.
    room = pinned_room(engine, "drop", 60)
    token = admitted(engine, room, Visitor(anteroom.url, api_key), "drop")

    handed = get(f"{node_app}/checkout/pay?step=2&abq={token}&coupon=spring", **NAV)
    assert handed.status_code == 307
    assert handed.headers["Location"] == f"{node_app}/checkout/pay?step=2&coupon=spring"
    (cookie,) = set_cookies(handed)
    assert cookie.startswith(f"_abq={token}; Path=/; Max-Age=")
    # Secure although the app is reached as 127.0.0.1: production settings never trust the Host.
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and cookie.endswith("; Secure")
    life = int(re.search(r"Max-Age=(\d+)", cookie).group(1))  # type: ignore[union-attr]
    assert 355 <= life <= 360  # the room's 300 s, plus the 60 s its clock stands ahead

    page = get(f"{node_app}/checkout/pay?step=2", Cookie=f"_abq={token}", **NAV)
    assert page.status_code == 200 and page.text == "the shop: /checkout/pay?step=2"
    assert set_cookies(page) == ["cart=1; Path=/"]  # fresh: nothing renewed
    by_header = get(f"{node_app}/api/cart", **{"Anteroom-Admission": token}, **API)
    assert by_header.status_code == 200
    assert verify_admission(token, TEST_KEYS, room="drop", client_ip="127.0.0.1")


def test_an_old_admission_is_renewed_through_the_real_api(
    anteroom: LiveServer, node_app: str, engine: Engine, api_key: str
) -> None:
    room = pinned_room(engine, "drop", -60)  # issued a minute ago: due for renewal
    token = admitted(engine, room, Visitor(anteroom.url, api_key), "drop")
    engine.shift_clock(room, 30_000)

    page = get(f"{node_app}/checkout", Cookie=f"_abq={token}", **NAV)
    assert page.status_code == 200
    cart, renewed = set_cookies(page)
    assert cart == "cart=1; Path=/"
    fresh = renewed.split(";")[0].removeprefix("_abq=")
    old_claims = tokens.decode(tokens.Keyring.parse(TEST_KEYS), token, tokens.ADMISSION, now=0)
    result = verify_admission(fresh, TEST_KEYS, room="drop")
    assert result.valid and result.claims is not None
    assert result.claims["jti"] == old_claims["jti"]
    assert result.claims["exp"] == old_claims["exp"] + 30  # the active slot was extended

    # The old admission again, within refresh_after: it was renewed once, not again.
    again = get(f"{node_app}/api/cart", **{"Anteroom-Admission": token}, **API)
    assert again.status_code == 200 and "Anteroom-Admission" not in again.headers
    # Another old admission, sent as a header, is renewed in a header.
    other = admitted(engine, room, Visitor(anteroom.url, api_key), "drop")
    by_header = get(f"{node_app}/api/cart", **{"Anteroom-Admission": other}, **API)
    renewed = by_header.headers["Anteroom-Admission"]
    renewed_header = verify_admission(renewed, TEST_KEYS, room="drop")
    assert renewed_header.valid and renewed_header.claims is not None
    other_claims = tokens.decode(tokens.Keyring.parse(TEST_KEYS), other, tokens.ADMISSION, now=0)
    assert renewed_header.claims["jti"] == other_claims["jti"]

    anteroom.stop()  # Anteroom goes away: the admission in hand still counts
    assert get(f"{node_app}/checkout", Cookie=f"_abq={fresh}", **NAV).status_code == 200


def test_refusals_of_real_requests(
    anteroom: LiveServer, node_app: str, engine: Engine, api_key: str
) -> None:
    drop = pinned_room(engine, "drop", 60)
    other = pinned_room(engine, "other", 60)
    bound = pinned_room(engine, "bound", 60, bindIp=True)
    stale = pinned_room(engine, "stale", -400)  # admissions from here expired 100 s ago
    nearby = Visitor(anteroom.url, api_key)
    faraway = Visitor(anteroom.url, api_key, ELSEWHERE)

    navigation = get(f"{node_app}/checkout?x=1", **NAV)
    assert navigation.status_code == 303
    assert navigation.headers["Anteroom-Enforcement"] == "queue:no-admission"
    hosted = navigation.headers["Location"]
    assert hosted.startswith(f"{anteroom.url}/queue/drop?key={api_key}&return=http%3A%2F%2F")
    assert get(hosted).status_code == 200  # the real hosted page takes the visitor from there

    api = requests.post(f"{node_app}/api/cart", headers=API, timeout=10)
    assert api.status_code == 429 and api.headers["Retry-After"] == "5"
    assert api.json() | {"queuePage": "…"} == {
        "error": "QueueRequired",
        "message": "This resource is behind a waiting room; queue first.",
        "room": "drop",
        "api": f"{anteroom.url}/api/v1",
        "retryAfter": 5,
        "queuePage": "…",
    }

    token = admitted(engine, drop, nearby, "drop")
    refusals = {
        "queue:admission-forged": token[:-2] + ("AA" if token[-2:] != "AA" else "BA"),
        "queue:admission-malformed": "ab1." + token,
        "queue:wrong-room": admitted(engine, other, nearby, "other"),
        "queue:ip-mismatch": admitted(engine, bound, faraway, "bound"),
        "queue:admission-expired": admitted(engine, stale, nearby, "stale"),
        "queue:admission-unknown-key": tokens.sign(
            tokens.Keyring.generate("k9"), tokens.ADMISSION, {"q": "drop", "exp": 2**33}
        ),
    }
    for reason, refused in refusals.items():
        path = "/bound" if reason == "queue:ip-mismatch" else "/api/cart"
        response = get(node_app + path, Cookie=f"_abq={refused}", **API)
        assert response.status_code == 429, reason
        assert response.headers["Anteroom-Enforcement"] == reason
        handed = get(f"{node_app}{path}?abq={refused}", **NAV)
        assert handed.status_code == 303 and "Set-Cookie" not in handed.headers, reason
    # The same bound room lets in a visitor from the network the Node app sees.
    here = admitted(engine, bound, Visitor(anteroom.url, api_key), "bound")
    assert get(f"{node_app}/bound", Cookie=f"_abq={here}", **API).status_code == 200


def test_an_app_queues_through_with_its_ticket(
    anteroom: LiveServer, node_app: str, engine: Engine, api_key: str
) -> None:
    line = pinned_room(engine, "line", 60)
    for i in range(2):  # two visitors ahead, and no admissions earned yet
        engine.enter(line, f"ahead{i}", "s", 10)
    app = Visitor(anteroom.url, api_key)
    assert app.enter("line").json["status"] == "waiting" and app.ticket

    waiting = get(f"{node_app}/line/items", **{"Anteroom-Ticket": app.ticket}, **API)
    assert waiting.status_code == 429
    assert waiting.headers["Anteroom-Enforcement"] == "queue:no-admission"
    body = waiting.json()
    assert (body["status"], body["position"]) == ("waiting", 3)
    assert int(waiting.headers["Retry-After"]) == body["retryAfter"] >= 1

    engine.shift_clock(line, 1000)  # the room earns enough to admit all three
    passed = get(f"{node_app}/line/items", **{"Anteroom-Ticket": app.ticket}, **API)
    assert passed.status_code == 200 and passed.text == "the shop: /line/items"
    admission = passed.headers["Anteroom-Admission"]
    assert verify_admission(admission, TEST_KEYS, room="line", client_ip="127.0.0.1")
    again = get(f"{node_app}/line/items", **{"Anteroom-Admission": admission}, **API)
    assert again.status_code == 200


# -- the same answers as the Python middleware ---------------------------------------------------


class QuietHandler(WSGIRequestHandler):
    """werkzeug's handler (it tells the raw target, as gunicorn does) without its access log."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


def python_shop(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """The Python twin of the Node app's shop."""
    query = environ.get("QUERY_STRING", "")
    body = f"the shop: {environ['PATH_INFO']}" + (f"?{query}" if query else "")
    start_response(
        "200 OK",
        [("Content-Type", "text/plain; charset=utf-8"), ("Set-Cookie", "cart=1; Path=/")],
    )
    return [body.encode()]


@pytest.fixture
def python_app(anteroom: LiveServer, api_key: str) -> Iterator[str]:
    app = AnteroomMiddleware(
        python_shop, keys=TEST_KEYS, base_url=anteroom.url, public_key=api_key, routes=ROUTES
    )
    server = make_server("127.0.0.1", 0, app, request_handler=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


def answer_of(response: requests.Response) -> dict[str, Any]:
    """What must be the same from both middlewares (Max-Age apart: it counts down)."""
    cookies = [re.sub(r"Max-Age=\d+", "Max-Age=…", c) for c in set_cookies(response)]
    headers = ("Location", "Anteroom-Enforcement", "Anteroom-Admission", "Retry-After")
    is_json = response.headers.get("Content-Type", "").startswith("application/json")
    return {
        "status": response.status_code,
        "headers": {name: response.headers.get(name) for name in headers},
        "cache": response.headers.get("Cache-Control"),
        "cookies": cookies,
        "body": response.json() if is_json else response.text,
    }


def test_node_answers_as_the_python_middleware_does(
    anteroom: LiveServer, node_app: str, python_app: str, engine: Engine, api_key: str
) -> None:
    fresh_room = pinned_room(engine, "drop", 60)
    old_room = pinned_room(engine, "bound", -60, bindIp=True)
    line = pinned_room(engine, "line", 60)
    engine.enter(line, "ahead", "s", 10)
    nearby = Visitor(anteroom.url, api_key)
    fresh = admitted(engine, fresh_room, nearby, "drop")
    old = admitted(engine, old_room, nearby, "bound")
    faraway = admitted(engine, old_room, Visitor(anteroom.url, api_key, ELSEWHERE), "bound")
    queued = Visitor(anteroom.url, api_key)
    assert queued.enter("line").status_code == 200
    shop = {"Host": "shop.test"}  # both build URLs from the Host header: the same for both

    requests_to_send: list[tuple[str, str, dict[str, str]]] = [
        ("GET", "/products?a=1", shop),
        ("GET", "/checkout/pay?x=1&y=a%20b&z=%2F", NAV | shop),
        ("HEAD", "/checkout", NAV | shop),
        ("POST", "/api/cart", API | shop),
        ("GET", "/api/cart", NAV | shop | {"Sec-Fetch-Mode": "cors"}),
        ("GET", "/checkout", NAV | shop | {"Anteroom-Ticket": "qt1.k1.not.ours"}),
        ("GET", f"/checkout?a=1&abq={fresh}&b=x+y&c", NAV | shop),
        ("GET", f"/checkout?abq={fresh}", NAV | {"Host": "localhost:8080"}),
        ("GET", "/checkout?abq=forged&a=1", NAV | shop | {"Cookie": f"_abq={fresh}"}),
        ("GET", "/checkout", NAV | shop | {"Cookie": f"x=1; _abq={fresh}"}),
        ("GET", "/api/cart", API | shop | {"Anteroom-Admission": fresh}),
        ("GET", "/api/cart", API | shop | {"Anteroom-Admission": fresh[:-1] + "A"}),
        ("GET", "/api/cart", API | shop | {"Cookie": f"_abq={old}"}),
        ("GET", "/bound", API | shop | {"Cookie": f"_abq={old}"}),
        ("GET", "/bound", API | shop | {"Anteroom-Admission": old}),
        ("GET", "/bound", NAV | shop | {"Cookie": f"_abq={faraway}"}),
        ("GET", "/line", API | shop | {"Anteroom-Ticket": queued.ticket or ""}),
    ]
    for method, path, headers in requests_to_send:
        answers = [
            answer_of(
                requests.request(
                    method, base + path, headers=headers, allow_redirects=False, timeout=10
                )
            )
            for base in (python_app, node_app)
        ]
        assert answers[0] == answers[1], (method, path, headers)

    # Other spellings of a protected path, sent as spelled, and a preflight.
    spelled: list[tuple[str, str, dict[str, str], int]] = [
        # (Not //checkout: Python's http.server, under werkzeug's, collapses it before anyone.)
        ("GET", "/CHECKOUT/pay", NAV, 303),
        ("GET", "/Api/Cart", API | {"Anteroom-Admission": fresh}, 200),
        ("GET", "/%2Fcheckout", API | {"Cookie": f"_abq={fresh}"}, 400),
        ("GET", "/x/../checkout", NAV, 400),
        ("OPTIONS", "/api/cart", {"Access-Control-Request-Method": "POST"}, 204),
        ("GET", "/chec%E2%84%AAout", API, 400),
        ("GET", "/check%FFout", API, 400),
        ("OPTIONS", "/api/cart", API, 429),
    ]
    for method, target, headers, status in spelled:
        raw = [raw_answer(base, method, target, shop | headers) for base in (python_app, node_app)]
        assert raw[0] == raw[1] and raw[0]["status"] == status, (method, target, raw)


def raw_answer(base: str, method: str, target: str, headers: dict[str, str]) -> dict[str, Any]:
    """``answer_of`` for a request sent with its target exactly as spelled."""
    connection = http.client.HTTPConnection(urlsplit(base).netloc, timeout=10)
    try:
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        body = response.read().decode()
        names = ("Location", "Anteroom-Enforcement", "Anteroom-Admission", "Retry-After")
        return {
            "status": response.status,
            "headers": {name: response.getheader(name) for name in names},
            "cookies": [
                re.sub(r"Max-Age=\d+", "Max-Age=…", c)
                for c in response.headers.get_all("Set-Cookie") or []
            ],
            "body": json.loads(body) if body.startswith("{") else body,
        }
    finally:
        connection.close()
