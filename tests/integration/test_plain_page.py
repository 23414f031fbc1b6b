"""The hosted page without JavaScript (web/pages/plain_page.py), through the real app and Redis."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.sdk import verification as verify
from anteroom.service_container import Services
from helpers import make_room
from visitor_client import HUMAN

pytestmark = pytest.mark.redis


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.with_overrides(limit_identify="3/minute")


@pytest.fixture
def api_key(services: Services) -> str:
    record, _ = services.keystore.create("shop")
    return record.public_key


@pytest.fixture
def room(services: Services, api_key: str) -> str:
    room_id = make_room(services.engine, env="shop", slug="drop", ratePerMinute=60)
    services.engine.open(room_id)
    return room_id


def visit(  # type: ignore[no-untyped-def]
    client: FlaskClient,
    api_key: str,
    address: str = "198.51.100.7",
    slug: str = "drop",
    **headers: str,
):
    return client.get(
        f"/queue/{slug}/plain?key={api_key}",
        headers=HUMAN | headers,
        environ_base={"REMOTE_ADDR": address},
    )


def test_the_hosted_page_sends_a_browser_without_javascript_to_it(
    client: FlaskClient, api_key: str, room: str
) -> None:
    page = client.get(f"/queue/drop?key={api_key}&return=https://shop.example/cart?id=1")
    html = page.get_data(as_text=True)
    plain = f"/queue/drop/plain?key={api_key}&amp;lang=en&amp;return="
    assert re.search(
        r'<noscript><meta http-equiv="refresh" content="0; url=' + re.escape(plain), html
    )
    assert f'<a href="{plain}' in html


def test_a_visitor_without_javascript_queues_and_is_admitted(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    first = visit(client, api_key)
    assert first.status_code == 200, first.get_data(as_text=True)
    html = first.get_data(as_text=True)
    assert '<meta http-equiv="refresh" content="' in html
    assert re.search(r"<main[^>]*>", html) and 'role="status"' in html
    assert "You&#39;re number" in html or "You're number" in html
    cookie = first.headers["Set-Cookie"]
    assert (
        cookie.startswith("_abt=qt1.")
        and "HttpOnly" in cookie
        and "Path=/queue/drop/plain" in cookie
    )
    assert "Retry-After" in first.headers
    # Queued without a proof of work, just below holdScore (70): it waits, it is not held.
    line = services.engine.line(room)
    assert [entry.score for entry in line] == [69]
    again = visit(client, api_key)  # the refresh: the same spot
    assert services.engine.line(room) == line and again.status_code == 200
    services.engine.shift_clock(room, 120_000)
    admitted = visit(client, api_key)
    assert admitted.status_code == 303
    target = admitted.headers["Location"]
    assert target.startswith("https://shop.example/checkout?abq=ab1.")
    token = target.split("abq=", 1)[1]
    assert verify.verify_admission(token, services.keyring, room="drop").valid


def test_the_visitor_can_turn_the_refresh_off_and_check_by_a_link(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    """A page reloading itself takes a screen reader back to its top: the visitor may stop it
    and check by hand, told how often keeps the place (the room's abandonAfterSec and its
    gracePeriodSec), and start it again; the links keep the page's key, language and return
    address."""
    room = make_room(
        services.engine, env="shop", slug="drop", abandonAfterSec=600, gracePeriodSec=1_200
    )
    services.engine.open(room)
    query = f"key={api_key}&lang=de&return=https://shop.example/cart"
    first = client.get(f"/queue/drop/plain?{query}", headers=HUMAN).get_data(as_text=True)
    assert '<meta http-equiv="refresh"' in first
    stop = re.search(r'<a id="stop-refresh" href="([^"]+)">([^<]+)</a>', first)
    assert stop and stop[2] == "Automatisches Aktualisieren beenden"
    manual_url = stop[1].replace("&amp;", "&")
    assert manual_url.startswith("/queue/drop/plain?") and "refresh=off" in manual_url
    assert f"key={api_key}" in manual_url and "lang=de" in manual_url and "return=" in manual_url
    manual = client.get(manual_url, headers=HUMAN)
    html = manual.get_data(as_text=True)
    assert manual.status_code == 200 and "Retry-After" in manual.headers
    assert '<meta http-equiv="refresh"' not in html
    assert "mindestens alle 30 Min." in html
    assert [entry.score for entry in services.engine.line(room)] == [69]  # the same one spot
    check = re.search(r'<a id="check-again" href="([^"]+)"', html)
    auto = re.search(r'<a id="auto-refresh" href="([^"]+)"', html)
    assert check and "refresh=off" in check[1] and auto and "refresh" not in auto[1]
    back = client.get(auto[1].replace("&amp;", "&"), headers=HUMAN).get_data(as_text=True)
    assert '<meta http-equiv="refresh"' in back and len(services.engine.line(room)) == 1


def test_the_operator_can_hold_visitors_without_javascript(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    held = make_room(services.engine, env="shop", slug="hold", noScriptScore=70)
    services.engine.open(held)
    page = visit(client, api_key, slug="hold")
    assert page.status_code == 200
    assert services.engine.line(held) == [] and services.engine.stats(held).held == 1
    assert "Your place is kept while we check" in page.get_data(as_text=True)


def test_a_convicted_browser_is_refused_and_limits_still_apply(
    client: FlaskClient, api_key: str, room: str
) -> None:
    denied = visit(client, api_key, "198.51.100.9", **{"User-Agent": "HeadlessChrome/120"})
    assert denied.status_code == 403 and "We could not place you" in denied.get_data(as_text=True)
    codes = []
    for _ in range(3):  # new visitors (no cookie) from one address: the identify limit is 3
        client.delete_cookie("_abt", path="/queue/drop/plain")
        codes.append(visit(client, api_key, "198.51.100.10").status_code)
    assert codes == [200, 200, 200]
    client.delete_cookie("_abt", path="/queue/drop/plain")
    limited = visit(client, api_key, "198.51.100.10")
    assert limited.status_code == 429 and "Retry-After" in limited.headers


def test_unknown_room_or_key(client: FlaskClient, api_key: str, app: Flask) -> None:
    assert client.get(f"/queue/nope/plain?key={api_key}").status_code == 404
    assert client.get("/queue/drop/plain?key=pk_nope").status_code == 401


def test_a_bind_ip_room_wants_an_address_here_too(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    bound = make_room(services.engine, env="shop", slug="bound", bindIp=True)
    services.engine.open(bound)
    refused = visit(client, api_key, address="", slug="bound")
    assert refused.status_code == 403 and "network address" in refused.get_data(as_text=True)
    assert services.engine.line(bound) == []


def test_a_reject_room_tells_a_newcomer_it_is_not_open(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    services.engine.update_room(room, {"mode": "reject"})
    page = visit(client, api_key)
    assert page.status_code == 403
    assert "Spring drop is not open right now." in page.get_data(as_text=True)
    assert "_abt=;" in page.headers.get("Set-Cookie", "")  # no ticket to keep: nothing to poll
    assert services.engine.stats(room).waiting == 0


def test_a_random_room_says_the_draw_and_its_odds_in_words(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    services.engine.update_room(room, {"mode": "random", "ratePerMinute": 1})
    for i in range(39):  # 39 ahead at 1 a minute: the visitor is one of 40 in the draw
        services.engine.enter(room, f"v{i}", f"s{i}", 10)
    html = visit(client, api_key).get_data(as_text=True)
    assert "in the draw" in html
    assert re.search(
        r'<p id="odds" class="note">About a 1 in 40 chance in the next minute</p>', html
    )
    assert "number" not in html  # no place to tell
