"""Verified search crawlers at the hosted pages (docs/operators.md, "Search crawlers"; issue 36
item 3): a room's ``crawlers`` setting, verification by reverse then forward DNS against a real
DNS server the tests start (dnsmasq, tests/dns_server.py), through the real app and Redis.

The test client presents the crawler's address as the peer's (``REMOTE_ADDR``), as a server
without a proxy in front sees it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.service_container import Services
from anteroom.visit.crawlers import RETRY_AFTER_SEC
from dns_server import (
    BINGBOT,
    BINGBOT_UA,
    GOOGLEBOT,
    GOOGLEBOT_UA,
    SPOOFED,
    DnsServer,
    silent_udp_port,
)
from helpers import Operator, make_room

pytestmark = pytest.mark.redis

SHOP = "https://shop.example/checkout"


@pytest.fixture
def settings(settings: Settings, dns_server: DnsServer) -> Settings:
    """The app asks the tests' dnsmasq (ANTEROOM_DNS_RESOLVER)."""
    return settings.with_overrides(dns_resolver=dns_server.resolver)


@pytest.fixture
def api_key(services: Services) -> str:
    record, _ = services.keystore.create("shop")
    return record.public_key


def waiting_room(services: Services, slug: str, **config: Any) -> str:
    """An open room at one admission a minute with one visitor waiting, its budget spent."""
    room = make_room(services.engine, env="shop", slug=slug, ratePerMinute=1, **config)
    services.engine.open(room)
    services.engine.enter(room, "ahead", "s", 10)
    return room


def figures(services: Services, room: str) -> tuple[int, ...]:
    """What counting a visitor would change: the line, the active sessions, the rate's counts."""
    stats = services.engine.stats(room)
    return (
        stats.waiting, stats.held, stats.active, stats.admitted_last_minute, stats.dealt_total,
        stats.tickets,
    )  # fmt: skip


def get(client: FlaskClient, path: str, address: str, user_agent: str, **query: str) -> Any:
    return client.get(
        path,
        query_string=query,
        headers={"User-Agent": user_agent, "Accept-Language": "en"},
        environ_base={"REMOTE_ADDR": address},
    )


def test_a_verified_crawler_passes_to_the_site_and_is_counted_nowhere(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    room = waiting_room(services, "drop", crawlers="pass")
    before = figures(services, room)
    for path in ("/queue/drop", "/queue/drop/plain"):  # the page, and its twin that enters
        answer = get(client, path, GOOGLEBOT, GOOGLEBOT_UA, key=api_key)
        assert answer.status_code == 302, answer.text
        assert answer.headers["Location"] == SHOP  # no admission token: none was made
        assert answer.headers["X-Robots-Tag"] == "noindex"
        # A return address on the site's origin is where it goes.
        back = get(client, path, GOOGLEBOT, GOOGLEBOT_UA, key=api_key, **{"return": SHOP + "/a"})
        assert back.headers["Location"] == SHOP + "/a"
    assert figures(services, room) == before
    assert [e.visitor for e in services.engine.line(room)] == ["ahead"]


def test_a_room_may_let_some_engines_through_and_queue_the_others(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    waiting_room(services, "drop", crawlers=["bing"])
    assert get(client, "/queue/drop", BINGBOT, BINGBOT_UA, key=api_key).status_code == 302
    assert get(client, "/queue/drop", GOOGLEBOT, GOOGLEBOT_UA, key=api_key).status_code == 503


@pytest.mark.parametrize("lang", ["en", "de", "ja", "ar"])
def test_a_room_that_queues_crawlers_tells_a_verified_one_to_come_back_later(
    client: FlaskClient, services: Services, api_key: str, lang: str
) -> None:
    room = waiting_room(services, "drop")  # crawlers: "queue", the default
    before = figures(services, room)
    for path in ("/queue/drop", "/queue/drop/plain"):
        answer = get(client, path, GOOGLEBOT, GOOGLEBOT_UA, key=api_key, lang=lang)
        assert answer.status_code == 503
        assert answer.headers["Retry-After"] == str(RETRY_AFTER_SEC)
        assert answer.headers["X-Robots-Tag"] == "noindex"
        assert f'lang="{lang}"' in answer.text and "CrawlerQueued" in answer.text
        assert "queue.js" not in answer.text and "anteroom.js" not in answer.text  # no agent
    assert figures(services, room) == before


def test_a_spoofed_crawler_is_an_ordinary_visitor(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    """Its reverse name says googlebot.com, but that name's address is another: the page is
    served as to anyone, and the page without JavaScript queues it as anyone."""
    room = waiting_room(services, "drop", crawlers="pass")
    page = get(client, "/queue/drop", SPOOFED, GOOGLEBOT_UA, key=api_key)
    anyone = get(client, "/queue/drop", SPOOFED, "Mozilla/5.0 Firefox/140.0", key=api_key)
    # the waiting page itself, as anyone gets it (never the crawler's 302 or 503)
    assert page.status_code == 200 and page.headers == anyone.headers
    assert 'src="/static/hosted.js"' in page.get_data(as_text=True)
    waiting = services.engine.stats(room).waiting
    plain = get(client, "/queue/drop/plain", SPOOFED, GOOGLEBOT_UA, key=api_key)
    assert plain.status_code == 200
    assert services.engine.stats(room).waiting == waiting + 1
    # A real crawler's address with a browser's User-Agent claims nothing: anyone's page.
    browser = get(client, "/queue/drop", GOOGLEBOT, "Mozilla/5.0 Firefox/140.0", key=api_key)
    assert browser.status_code == 200


def test_a_resolver_that_never_answers_delays_a_claim_briefly_and_verifies_nothing(
    settings: Settings, services: Services
) -> None:
    from anteroom.sdk.crawlers import DEFAULT_TIMEOUT, CrawlerCheck
    from anteroom.web.app_factory import close_app, create_app

    waiting_room(services, "drop", crawlers="pass")
    with silent_udp_port() as silent:
        app = create_app(settings.with_overrides(dns_resolver=silent), {"TESTING": True})
        try:
            s: Services = app.extensions["anteroom"]
            assert isinstance(s.crawler_check, CrawlerCheck)
            record, _ = s.keystore.create("shop")
            started = time.monotonic()
            page = get(app.test_client(), "/queue/drop", GOOGLEBOT, GOOGLEBOT_UA,
                       key=record.public_key)  # fmt: skip
            took = time.monotonic() - started
        finally:
            close_app(app)
    assert page.status_code == 200  # the waiting page, as for anyone
    assert took < DEFAULT_TIMEOUT + 1.0


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("yes", '"queue", "pass" or a list of engines'),
        ([], '"queue", "pass" or a list of engines'),
        (["google", "altavista"], "'altavista' is not an engine"),
        (["bing", "bing"], "twice"),
    ],
)
def test_a_bad_crawlers_setting_is_refused_naming_the_field(
    client: FlaskClient, services: Services, value: Any, why: str
) -> None:
    _, secret = services.keystore.create("shop")
    op = Operator(client, secret, {"slug": "drop", "name": "Drop", "redirectUrl": SHOP})
    refused = op.call("POST", "/queues", op.room | {"crawlers": value})
    assert refused.status_code == 400, refused.json
    assert why in refused.json["fields"]["crawlers"]
    room = op.create(crawlers=["google", "bing"])
    assert op.get(room["id"])["crawlers"] == ["google", "bing"]
    patched = op.patch(room["id"], {"crawlers": value})
    assert patched.status_code == 400 and "crawlers" in patched.json["fields"]
    assert op.get(room["id"])["crawlers"] == ["google", "bing"]  # unchanged
    assert op.patch(room["id"], {"crawlers": "pass"}).status_code == 200
    assert op.get(room["id"])["crawlers"] == "pass"
    assert op.create(slug="other")["crawlers"] == "queue"  # off by default


def test_behind_a_trusted_proxy_the_crawlers_forwarded_address_is_verified_in_a_live_worker(
    live_server: Any, redis_client: Any, dns_server: DnsServer
) -> None:
    """Through ``anteroom serve`` (gunicorn's gevent worker, whose sockets are cooperative):
    the address checked is the one the trusted proxy forwards, never the peer's."""
    import requests

    from anteroom.engine import Engine
    from anteroom.store.keystore import KeyStore

    server = live_server(ANTEROOM_TRUSTED_PROXIES="1", ANTEROOM_DNS_RESOLVER=dns_server.resolver)
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("live")[0].public_key
    room = make_room(engine, env="live", slug="crawled", crawlers="pass")
    engine.open(room)
    before = engine.stats(room)

    def page(forwarded: str) -> requests.Response:
        return requests.get(
            f"{server.url}/queue/crawled",
            params={"key": api_key},
            headers={"User-Agent": GOOGLEBOT_UA, "X-Forwarded-For": forwarded},
            allow_redirects=False,
            timeout=10,
        )

    passed = page(GOOGLEBOT)
    assert passed.status_code == 302 and passed.headers["Location"] == SHOP
    assert page(SPOOFED).status_code == 200  # the waiting page, as for anyone
    after = engine.stats(room)
    assert (after.waiting, after.active, after.tickets) == (before.waiting, before.active, 0)
