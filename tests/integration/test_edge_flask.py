"""``AnteroomEdge`` in front of a real Flask shop, against a real Anteroom (gunicorn) and Redis.

The shop is served over real HTTP (werkzeug, in this process, so its clock can be injected);
visitors and apps queue through the real visitor API of a live ``anteroom serve``. Every room's
clock is pinned and moved by the test, and the shop's clock moves with it, so who is admitted
when, and how old an admission is, is decided by the test and never by timing.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit
from wsgiref.simple_server import WSGIRequestHandler
from wsgiref.simple_server import make_server as wsgiref_server

import pytest
import redis
import requests
import urllib3
from flask import Flask, jsonify, request
from flask.typing import ResponseReturnValue
from guarded_shop import guarded_shop
from urllib3.util.retry import Retry
from werkzeug.serving import make_server

from anteroom.edge import AnteroomEdge, admission
from anteroom.engine import Engine
from anteroom.ops.demo_seed import ensure_demo
from anteroom.sdk import tokens
from anteroom.store.keystore import KeyStore
from anteroom.verify import verify_admission, verify_session
from helpers import TEST_KEYS, free_port, make_room
from live_server import LiveServer, LiveServers, ServerProcess
from visitor_client import HUMAN
from visitor_client import Visitor as Entrant

pytestmark = [pytest.mark.redis, pytest.mark.slow]

NAV = {"Accept": "text/html,application/xhtml+xml", "Sec-Fetch-Mode": "navigate"}
API = {"Accept": "application/json"}
ROUTES = {"/checkout": "drop", "/api/cart": "drop", "/bound": "bound"}
ANTEROOM_ENV = {
    "ANTEROOM_POW_DIFFICULTY": "4",
    "ANTEROOM_WORKERS": "2",
    # Every visitor here comes from 127.0.0.1: the per-address limits are not under test.
    "ANTEROOM_LIMIT_CHALLENGE": "1000/minute",
    "ANTEROOM_LIMIT_IDENTIFY": "1000/minute",
    "ANTEROOM_LIMIT_ENTER": "1000/minute",
}


class Clock:
    """The shop's clock and the clock of every room made through it, moved together.

    Rooms stand still at the moment the test began; ``advance`` moves them all, so admissions
    age on the shop exactly as they do in Anteroom.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.now = float(int(time.time()))  # a whole second, as admissions count time
        self.rooms: list[str] = []

    def __call__(self) -> float:
        return self.now

    def pin(self, room_id: str) -> None:
        self.engine.set_clock(room_id, int(self.now * 1000))
        self.rooms.append(room_id)

    def advance(self, seconds: float) -> None:
        for room_id in self.rooms:
            self.engine.shift_clock(room_id, int(seconds * 1000))
        self.now += seconds


def presented_session(environ: dict[str, Any]) -> str | None:
    """The shop knows its app's Anteroom session (header ``Shop-Session``): its jti."""
    result = verify_session(environ.get("HTTP_SHOP_SESSION", ""), TEST_KEYS)
    return result.claims["jti"] if result.valid and result.claims else None


def shop_app(anteroom_url: str, api_key: str, **edge: Any) -> Flask:
    """A small shop: products are public, the checkout and the cart API are behind the line."""
    app = Flask("shop")
    app.config.update(
        ANTEROOM_EDGE_KEYS=TEST_KEYS,
        ANTEROOM_EDGE_BASE_URL=anteroom_url,
        ANTEROOM_EDGE_PUBLIC_KEY=api_key,
        ANTEROOM_EDGE_ROUTES=ROUTES,
    )

    @app.get("/products")
    def products() -> ResponseReturnValue:
        return "all products"

    @app.route("/checkout", methods=["GET", "POST"])
    @app.route("/bound", methods=["GET"])
    def checkout() -> ResponseReturnValue:
        claims = admission(request.environ) or {}
        return f"checkout for {claims.get('vid')}"

    @app.route("/api/cart", methods=["GET", "POST"])
    def cart() -> ResponseReturnValue:
        claims = admission(request.environ) or {}
        return jsonify(visitor=claims.get("vid"), items=(request.get_json(silent=True) or []))

    # Served over plain http on 127.0.0.1, as in local development: the browsers here (requests)
    # would not send a Secure cookie back.
    AnteroomEdge(app, **({"session_jti": presented_session, "secure_cookie": False} | edge))
    return app


class Site:
    """A WSGI app served over real HTTP on 127.0.0.1, in a thread of this process."""

    def __init__(self, app: Flask) -> None:
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        # A short poll interval: shutdown() waits for it at the end of every test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class Stack:
    """One test's world: the live Anteroom, a fresh environment and key, the clock, the shops."""

    def __init__(self, anteroom: LiveServer, redis_client: redis.Redis) -> None:
        self.anteroom = anteroom
        self.engine = Engine(redis_client)
        # A fresh environment per test: the live server caches rooms by (environment, slug).
        self.env = "shop-" + secrets.token_hex(4)
        self.api_key = KeyStore(redis_client, self.engine.keys).create(self.env)[0].public_key
        self.clock = Clock(self.engine)
        self.closing: list[Callable[[], None]] = []

    def room(self, slug: str = "drop", **config: Any) -> str:
        """An open room on the pinned clock, its bank empty."""
        room_id = make_room(self.engine, env=self.env, slug=slug, ratePerMinute=60, **config)
        self.clock.pin(room_id)
        self.engine.open(room_id)
        return room_id

    def entrant(self) -> Entrant:
        entrant = Entrant(self.anteroom.url, self.api_key)
        self.closing.append(entrant.close)
        return entrant

    def site(self, anteroom_url: str | None = None, **edge: Any) -> Site:
        app = shop_app(anteroom_url or self.anteroom.url, self.api_key, clock=self.clock, **edge)
        site = Site(app)
        self.closing.append(site.close)
        return site

    def browser(self) -> requests.Session:
        session = requests.Session()
        session.headers.update(HUMAN | NAV)
        self.closing.append(session.close)
        return session


@pytest.fixture(scope="module")
def anteroom(module_live_server: LiveServers) -> LiveServer:
    return module_live_server(**ANTEROOM_ENV)


@pytest.fixture
def stack(anteroom: LiveServer, redis_client: redis.Redis) -> Iterator[Stack]:
    world = Stack(anteroom, redis_client)
    yield world
    for close in reversed(world.closing):
        close()


def get(url: str, **headers: str) -> requests.Response:
    return requests.get(url, headers=headers, allow_redirects=False, timeout=10)


def get_from(address: str, url: str, **headers: str) -> http.client.HTTPResponse:
    """GET ``url`` from the local address ``address`` (the shop sees it as REMOTE_ADDR)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(
        parts.hostname or "", parts.port, timeout=10, source_address=(address, 0)
    )
    try:
        connection.request("GET", parts.path, headers=headers)
        response = connection.getresponse()
        response.read()
        return response
    finally:
        connection.close()


# -- no way around the edge -------------------------------------------------------------------

BYPASSES = [
    "//checkout", "///checkout", "//shop/cart/x", "/shop//cart/x", "/./checkout",
    "/x/../checkout", "/%2Fcheckout", "/%2fcheckout", "/checkout%2F..", "/checkout/..",
    "/shop/cart/..", "/%2e%2e/checkout", "/shop%2Fcart/x", "/checkout%00", "/CHECKOUT",
    "http://shop.example//checkout",
]  # fmt: skip


WERKZEUG_SERVED: set[str] = set()  # werkzeug tells the raw target (RAW_URI); wsgiref does not


class QuietWsgiref(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module", params=["werkzeug", "wsgiref", "gunicorn"])
def guarded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The guarded shop over real HTTP: werkzeug's server and the stdlib's collapse a leading
    ``//``, gunicorn hands it on as it is."""
    if request.param == "werkzeug":
        site = Site(guarded_shop())
        WERKZEUG_SERVED.add(site.url)
        yield site.url
        site.close()
        return
    if request.param == "gunicorn":
        yield from gunicorn_served(tmp_path_factory.mktemp("gunicorn"))
        return
    server = wsgiref_server("127.0.0.1", 0, guarded_shop(), handler_class=QuietWsgiref)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


def gunicorn_served(tmp_path: Path) -> Iterator[str]:
    here = Path(__file__).resolve().parent
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
               "guarded_shop:app"]  # fmt: skip
    path = os.pathsep.join([str(here), str(here.parent), str(here.parents[1] / "backend")])
    env = os.environ | {"PYTHONPATH": path}
    log = tmp_path / "gunicorn.log"
    with ServerProcess(command, port, log, env=env, cwd=here, name="gunicorn") as server:
        yield server.url


def raw_get(base: str, target: str, **headers: str) -> tuple[int, str]:
    """GET ``target`` exactly as spelled (no client normalisation): (status, body)."""
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", parts.netloc)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


@pytest.mark.parametrize("target", BYPASSES)
def test_no_spelling_of_a_protected_path_reaches_its_view(guarded: str, target: str) -> None:
    status, body = raw_get(guarded, target, **API)
    assert "PROTECTED" not in body, (status, body)


def test_the_protected_views_are_reached_with_an_admission(guarded: str) -> None:
    now = int(time.time())
    claims = {"q": "drop", "qr": "q1", "qj": "s1", "vid": "v1", "env": "web", "jti": "j1"}
    token = tokens.sign(tokens.Keyring.parse(TEST_KEYS), tokens.ADMISSION,
                        claims | {"iat": now, "exp": now + 300})  # fmt: skip
    for target, view in (("/checkout", "checkout"), ("//checkout", "checkout"),
                         ("/shop/cart/x", "cart x")):  # fmt: skip
        assert raw_get(guarded, target, Cookie=f"_abq={token}") == (200, f"PROTECTED {view}")
    # Where the server tells how the path was spelled (werkzeug, gunicorn), an encoded slash is
    # refused whatever the request carries: routers disagree about it.
    if guarded in WERKZEUG_SERVED:
        status, body = raw_get(guarded, "/%2Fcheckout", Cookie=f"_abq={token}")
        assert status == 400 and json.loads(body)["error"] == "AmbiguousPath"


def test_refusals_send_browsers_to_the_hosted_page_and_apps_a_429(stack: Stack) -> None:
    site = stack.site()
    stack.room(redirectUrl=f"{site.url}/checkout")
    products = get(f"{site.url}/products")
    assert products.text == "all products" and "Anteroom-Enforcement" not in products.headers

    navigation = get(f"{site.url}/checkout?step=2&coupon=a%20b", **NAV)
    assert navigation.status_code == 303
    assert navigation.headers["Anteroom-Enforcement"] == "queue:no-admission"
    hosted = navigation.headers["Location"]
    assert hosted.startswith(f"{stack.anteroom.url}/queue/drop?key={stack.api_key}&return=")
    assert parse_qs(urlsplit(hosted).query)["return"] == [
        f"{site.url}/checkout?step=2&coupon=a%20b"
    ]
    # The real hosted page keeps the way back: it is on the room's own origin.
    page = get(hosted)
    assert page.status_code == 200
    assert f'data-return-url="{site.url}/checkout?step=2&amp;coupon=a%20b"' in page.text
    # Reached under another name, the shop is another origin: the page will not send them there.
    elsewhere = get(f"{site.url}/checkout", Host="localhost:1", **NAV).headers["Location"]
    assert 'data-return-url=""' in get(elsewhere).text

    for response in (
        requests.post(f"{site.url}/api/cart", headers=API, timeout=10),
        get(f"{site.url}/checkout", **(NAV | {"Sec-Fetch-Mode": "cors"})),
    ):
        assert response.status_code == 429 and response.headers["Retry-After"] == "5"
        assert response.headers["Anteroom-Enforcement"] == "queue:no-admission"
        body = response.json()
        assert body["error"] == "QueueRequired" and body["room"] == "drop"
        assert body["api"] == f"{stack.anteroom.url}/api/v1" and body["retryAfter"] == 5
        assert body["queuePage"].startswith(f"{stack.anteroom.url}/queue/drop?key=")


def test_every_refusal_reason_by_real_requests(stack: Stack) -> None:
    site = stack.site()
    stack.room("drop")
    stack.room("other")
    stack.room("bound", bindIp=True)
    stack.clock.advance(1)  # one second of the rate: one admission in each room
    shopper, somebody = stack.entrant(), stack.entrant()
    token = shopper.admitted("drop")
    bound_token = shopper.admitted("bound")  # tagged with 127.0.0.1, where it entered
    assert somebody.enter("drop").status_code == 200
    payload = token.split(".")[2]
    other_payload = shopper.admitted("other").split(".")[2]
    claims = tokens.decode(tokens.Keyring.parse(TEST_KEYS), token, tokens.ADMISSION)
    foreign = tokens.sign(tokens.Keyring.generate("k9"), tokens.ADMISSION, claims)
    refusals = {
        "queue:admission-malformed": ("/api/cart", "ab1." + token, {}),
        # A genuine signature over someone else's claims: the payload of the "other" admission.
        "queue:admission-forged": ("/api/cart", token.replace(payload, other_payload), {}),
        # The same claims, signed by a keyring the shop does not hold.
        "queue:admission-unknown-key": ("/api/cart", foreign, {}),
        "queue:wrong-room": ("/bound", token, {}),
        "queue:session-mismatch": ("/api/cart", token, {"Shop-Session": somebody.session or ""}),
    }
    for reason, (path, refused, headers) in refusals.items():
        by_header = get(site.url + path, **{"Anteroom-Admission": refused}, **headers, **API)
        assert (by_header.status_code, by_header.headers["Anteroom-Enforcement"]) == (429, reason)
        by_cookie = get(site.url + path, Cookie=f"_abq={refused}", **headers, **NAV)
        assert (by_cookie.status_code, by_cookie.headers["Anteroom-Enforcement"]) == (303, reason)
    # The same admissions, shown as they should be, pass.
    own = get(f"{site.url}/api/cart", **{"Anteroom-Admission": token}, **API)
    assert own.json()["visitor"] == claims["vid"]
    with_session = {"Shop-Session": shopper.session or ""}
    assert get(f"{site.url}/api/cart", Cookie=f"_abq={token}", **with_session).status_code == 200

    # The bound room's admission: good from where it entered, refused from another address.
    assert get_from("127.0.0.1", f"{site.url}/bound", Cookie=f"_abq={bound_token}").status == 200
    moved = get_from("127.0.0.2", f"{site.url}/bound", Cookie=f"_abq={bound_token}", **API)
    assert (moved.status, moved.headers["Anteroom-Enforcement"]) == (429, "queue:ip-mismatch")

    stack.clock.advance(300)  # the room's admissionTtlSec: the admission is over
    expired = get(f"{site.url}/checkout", Cookie=f"_abq={token}", **NAV)
    assert (expired.status_code, expired.headers["Anteroom-Enforcement"]) == (
        303,
        "queue:admission-expired",
    )


def test_abq_hand_over_sets_the_cookie_and_cleans_the_url(stack: Stack) -> None:
    site = stack.site()
    stack.room("drop")
    stack.room("other")
    stack.clock.advance(1)
    shopper = stack.entrant()
    token, elsewhere = shopper.admitted("drop"), shopper.admitted("other")
    browser = stack.browser()

    handed = browser.get(
        f"{site.url}/checkout?step=2&abq={token}&coupon=a%20b&step=3&flag",
        allow_redirects=False,
        timeout=10,
    )
    assert handed.status_code == 307
    # Every other parameter kept, verbatim and in order; the token leaves the address bar.
    assert handed.headers["Location"] == f"{site.url}/checkout?step=2&coupon=a%20b&step=3&flag"
    assert handed.headers["Cache-Control"] == "no-store"
    assert handed.headers["Referrer-Policy"] == "no-referrer"
    raw_cookie = handed.headers["Set-Cookie"]
    cookie = SimpleCookie(raw_cookie)["_abq"]
    exp = verify_admission(token, TEST_KEYS).claims["exp"]  # type: ignore[index]
    assert cookie.value == token and cookie["path"] == "/"
    assert int(cookie["max-age"]) == int(exp - stack.clock.now) == 300
    assert cookie["httponly"] is True and cookie["samesite"] == "Lax"
    assert "Secure" not in raw_cookie  # secure_cookie=False, as for local development
    landed = browser.get(handed.headers["Location"], timeout=10)
    assert landed.status_code == 200 and landed.text.startswith("checkout for ")
    assert "Set-Cookie" not in landed.headers  # fresh: nothing to renew

    public = get(f"{site.url}/checkout?abq={token}", Host="shop.example", **NAV)
    assert public.status_code == 307
    assert public.headers["Location"] == "http://shop.example/checkout"
    # A production shop (secure_cookie left on) marks it Secure, whatever Host the request names.
    production = stack.site(secure_cookie=True)
    for host in ("shop.example", "localhost", "127.0.0.1:8000"):
        handed = get(f"{production.url}/checkout?abq={token}", Host=host, **NAV)
        assert handed.headers["Set-Cookie"].endswith("; Secure"), host

    for bad, reason in (
        (token[:-2] + ("AA" if token[-2:] != "AA" else "BA"), "queue:admission-forged"),
        (elsewhere, "queue:wrong-room"),
        ("nonsense", "queue:admission-malformed"),
    ):
        refused = get(f"{site.url}/checkout?a=1&abq={bad}", **NAV)
        assert refused.status_code == 303 and "Set-Cookie" not in refused.headers
        assert refused.headers["Anteroom-Enforcement"] == reason
        back = parse_qs(urlsplit(refused.headers["Location"]).query)["return"]
        assert back == [f"{site.url}/checkout?a=1"]  # the bad token is not carried along
        api = get(f"{site.url}/api/cart?abq={bad}", **API)
        assert api.status_code == 429 and "Set-Cookie" not in api.headers


def test_an_app_queues_through_with_a_plain_retrying_client(stack: Stack) -> None:
    site = stack.site()
    room = stack.room("drop")
    stack.engine.enter(room, "ahead", "s", 10)  # one visitor ahead, and no admission earned yet
    app = stack.entrant()
    assert app.enter("drop").json["position"] == 2 and app.ticket
    ticket = {"Anteroom-Ticket": app.ticket}

    waiting = get(f"{site.url}/api/cart", **ticket, **API)
    assert waiting.status_code == 429
    assert waiting.headers["Anteroom-Enforcement"] == "queue:no-admission"
    assert waiting.headers["Retry-After"] == "1"  # the server's pollAfterMs near the front
    body = waiting.json()
    assert (body["status"], body["position"], body["retryAfter"]) == ("waiting", 2, 1)
    assert body["etaSeconds"] >= 1 and body["error"] == "QueueRequired"
    # A ticket says "app": even a navigation-looking request gets the 429, not the redirect.
    assert get(f"{site.url}/checkout", **ticket, **NAV).status_code == 429

    clock = stack.clock
    waits: list[float] = []

    class LineMovesWhileWaiting(Retry):
        """urllib3's own Retry; the pinned room's clock moves by as long as it waited."""

        def sleep_for_retry(self, response: urllib3.BaseHTTPResponse) -> bool:
            slept = super().sleep_for_retry(response)
            if slept:
                waits.append(self.get_retry_after(response) or 0)
                clock.advance(waits[-1])
            return slept

    retry = LineMovesWhileWaiting(
        total=10, status_forcelist=[429], allowed_methods=["GET", "POST"],
        respect_retry_after_header=True, backoff_factor=0,
    )  # fmt: skip
    with urllib3.PoolManager(retries=retry) as http:
        # The app's whole queue code: one header on its usual request.
        response = http.request(
            "POST", f"{site.url}/api/cart", json=["sku-1"], headers=ticket | API, timeout=10
        )
    assert response.status == 200 and response.json()["items"] == ["sku-1"]
    assert waits == [1, 1]  # Retry-After obeyed: first the one ahead went in, then this app
    assert [h.status for h in response.retries.history] == [429, 429]  # type: ignore[union-attr]
    admission_token = response.headers["Anteroom-Admission"]
    claims = verify_admission(admission_token, TEST_KEYS, room="drop").claims or {}
    assert response.json()["visitor"] == claims["vid"]

    # From now on the app shows its admission, checked offline; once old, it comes back renewed.
    again = get(f"{site.url}/api/cart", **{"Anteroom-Admission": admission_token}, **API)
    assert again.status_code == 200 and "Anteroom-Admission" not in again.headers
    clock.advance(16)
    renewed = get(f"{site.url}/api/cart", **{"Anteroom-Admission": admission_token}, **API)
    assert renewed.status_code == 200
    fresh = verify_admission(renewed.headers["Anteroom-Admission"], TEST_KEYS, now=clock.now)
    assert fresh.claims and fresh.claims["exp"] == claims["exp"] + 16


def test_an_unknown_ticket_is_told_to_enter_again(stack: Stack) -> None:
    site = stack.site()
    stack.room("drop")
    gone = get(f"{site.url}/api/cart", **{"Anteroom-Ticket": "qt1.k1.not.ours"}, **API)
    assert gone.status_code == 429 and gone.headers["Retry-After"] == "5"
    assert gone.json()["status"] == "unknown" and gone.json()["ticketError"] == "TokenInvalid"


def test_browsing_keeps_the_only_slot_alive_and_it_frees_when_they_stop(stack: Stack) -> None:
    site = stack.site()
    room = stack.room("drop", capacity=1, admissionTtlSec=30)
    stack.clock.advance(1)
    first, second = stack.entrant(), stack.entrant()
    token = first.admitted("drop")
    assert second.enter("drop").json["status"] == "waiting"
    browser = stack.browser()
    assert browser.get(f"{site.url}/checkout?abq={token}", timeout=10).status_code == 200

    for _ in range(3):  # a minute of browsing, twice the admission's 30 s
        stack.clock.advance(20)
        page = browser.get(f"{site.url}/checkout", timeout=10)
        assert page.status_code == 200 and "_abq=" in page.headers["Set-Cookie"]  # renewed
        assert second.poll().json["status"] == "waiting"  # the one slot is still theirs
    assert not verify_admission(token, TEST_KEYS, now=stack.clock.now)  # the first is long over
    assert stack.engine.stats(room).active == 1

    stack.clock.advance(31)  # they stopped: the last renewal runs out, and so does the slot
    assert second.poll().json["status"] == "admitted"
    gone = browser.get(f"{site.url}/checkout", allow_redirects=False, timeout=10)
    assert gone.headers["Anteroom-Enforcement"] == "queue:admission-expired"


def test_an_anteroom_outage_changes_nothing_for_an_admitted_visitor(
    live_server: LiveServers, redis_client: redis.Redis
) -> None:
    own = live_server(**ANTEROOM_ENV)
    stack = Stack(own, redis_client)
    try:
        site = stack.site()
        stack.room("drop", admissionTtlSec=30)
        stack.clock.advance(1)
        token = stack.entrant().admitted("drop")
        browser = stack.browser()
        assert browser.get(f"{site.url}/checkout?abq={token}", timeout=10).status_code == 200
        stack.clock.advance(16)
        assert "_abq=" in browser.get(f"{site.url}/checkout", timeout=10).headers["Set-Cookie"]

        own.stop()
        for step in (16, 10):  # due for renewal, and Anteroom is gone: they browse on
            stack.clock.advance(step)
            page = browser.get(f"{site.url}/checkout", timeout=10)
            assert page.status_code == 200 and "Set-Cookie" not in page.headers
        # An app in line gets a 429 to come back later, never a 5xx.
        app = get(f"{site.url}/api/cart", **{"Anteroom-Ticket": "qt1.k1.a.b"}, **API)
        assert app.status_code == 429 and app.json()["status"] == "unknown"
        stack.clock.advance(5)  # past the renewed admission's own end: now it is over
        over = browser.get(f"{site.url}/checkout", allow_redirects=False, timeout=10)
        assert over.headers["Anteroom-Enforcement"] == "queue:admission-expired"
    finally:
        for close in reversed(stack.closing):
            close()


def test_a_hanging_anteroom_costs_one_timeout_not_one_per_request(stack: Stack) -> None:
    stack.room("drop")
    admissions = []
    for _ in range(2):  # an empty room saves up at most one second's worth: one at a time
        stack.clock.advance(1)
        admissions.append(stack.entrant().admitted("drop"))
    with socket.create_server(("127.0.0.1", 0), backlog=16) as hanging:
        # It listens and never answers: connections complete in the kernel's backlog.
        site = stack.site(f"http://127.0.0.1:{hanging.getsockname()[1]}", timeout=0.3)
        stack.clock.advance(16)  # both admissions are due for renewal
        for i in range(6):
            cookie = f"_abq={admissions[i % 2]}"
            response = get(f"{site.url}/checkout", Cookie=cookie, **NAV)
            assert response.status_code == 200 and "Set-Cookie" not in response.headers
            stack.clock.advance(0.5)
        hanging.setblocking(False)
        tried = 0
        while True:
            try:
                hanging.accept()[0].close()
            except BlockingIOError:
                break
            tried += 1
    # The first renewal timed out; after it nobody's renewal tried, so nobody waited again.
    assert tried == 1


@pytest.fixture
def demo_anteroom(live_server: LiveServers, redis_client: redis.Redis) -> LiveServer:
    return live_server(**ANTEROOM_ENV, ANTEROOM_DEMO="1")


def test_the_demo_checkout_is_behind_the_middleware(
    demo_anteroom: LiveServer, redis_client: redis.Redis
) -> None:
    url = demo_anteroom.url
    direct = get(f"{url}/demo/checkout", **NAV)
    assert direct.status_code == 303
    assert direct.headers["Anteroom-Enforcement"] == "queue:no-admission"
    back = urlencode({"key": "pk_demo", "return": f"{url}/demo/checkout"})
    assert direct.headers["Location"] == f"{url}/queue/demo?{back}"
    hosted = get(direct.headers["Location"])
    assert f'data-return-url="{url}/demo/checkout"' in hosted.text

    engine = Engine(redis_client)
    room = ensure_demo(engine, url)  # as `anteroom serve` left it
    engine.shift_clock(room, 2_000)  # the demo room earns an admission
    visitor = Entrant(url, "pk_demo")
    token = visitor.admitted("demo")
    visitor.close()
    with requests.Session() as browser:
        browser.headers.update(HUMAN | NAV)
        checkout = browser.get(f"{url}/demo/checkout?abq={token}", timeout=10)
        assert checkout.status_code == 200 and "You're in" in checkout.text
        assert [r.status_code for r in checkout.history] == [307]
        assert urlsplit(checkout.url).query == ""
