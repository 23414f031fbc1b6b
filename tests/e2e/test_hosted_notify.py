"""The hosted page's "tell me when it's my turn" form in Chromium: offered while waiting in a
room with notify on (and not in one without), a malformed address refused in place with the
place kept, a good one parking the spot, the page then saying so; the privacy promise shown in
the page's language. Real Chromium, real gunicorn and Redis."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect
from test_accessibility import assert_no_violations
from test_hosted_states import visit

from anteroom.engine import Engine
from helpers import waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]


def test_a_waiting_visitor_leaves_an_address_and_is_told_the_place_is_kept(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=2, notify=True, returnWindowSec=600)
    page = new_context().new_page()
    visit(page, live, slug, api_key, "waiting")
    form = page.locator("#notify-form")
    expect(form).to_be_visible()
    expect(form).to_contain_text("kept only until the e-mail is sent")
    assert_no_violations(page, "the notify form")
    form.get_by_label("E-mail address").fill("not an address")
    form.get_by_role("button", name="E-mail me at my turn").click()
    expect(page.locator("#notify-error")).to_have_text("That does not look like an e-mail address.")
    parked_key = engine.keys.room_keys(room)["park"]
    assert engine.redis.zcard(parked_key) == 0
    form.get_by_label("E-mail address").fill("ada@example.com")
    form.get_by_role("button", name="E-mail me at my turn").click()
    expect(page.locator("#notify-parked")).to_contain_text("for 10 min")
    expect(form).to_be_hidden()
    assert engine.redis.zcard(parked_key) == 1
    expect(page.locator("#position")).to_have_text("3")  # the place is unchanged
    # and the page no longer asks to be kept open: it may be closed now
    expect(page.locator("#status-text")).to_contain_text("you can close this page")
    expect(page.locator("#keep-open")).to_be_hidden()


def test_the_form_speaks_the_page_s_language_and_is_absent_without_the_offer(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    _, offered = waiting_room(engine, live.url, ahead=1, notify=True)
    _, plain = waiting_room(engine, live.url, ahead=1)
    page = new_context(locale="de-DE").new_page()
    visit(page, live, offered, api_key, "waiting")
    expect(page.locator("#notify-form")).to_contain_text("niemandem angezeigt")
    visit(page, live, plain, api_key, "waiting")
    expect(page.locator("#notify-form")).to_have_count(0)
