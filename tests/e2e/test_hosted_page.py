"""The hosted waiting page in real headless Chromium, against a real server and Redis."""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from anteroom.engine import Engine
from anteroom.sdk import tokens
from anteroom.sdk import verification as verify
from helpers import TEST_KEYS, make_room, waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]


def room_url(live: LiveServer, slug: str, api_key: str) -> str:
    return f"{live.url}/queue/{slug}?key={api_key}"


def until(page: Page, condition: Any, timeout_ms: int = 15_000) -> None:
    """Let the browser run until ``condition()`` holds (events arrive on the page's loop)."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        page.wait_for_timeout(100)


def polls_of(page: Page, counter: dict[Page, int]) -> None:
    page.on(
        "request",
        lambda r: counter.__setitem__(page, counter.get(page, 0) + ("/queue/poll" in r.url)),
    )


def test_visitor_waits_and_lands_on_the_redirect_with_a_valid_admission(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ratePerMinute=60, ahead=1)
    page = new_context().new_page()
    page.goto(room_url(live, slug, api_key))
    main = page.locator("#anteroom")
    expect(main).to_have_attribute("data-state", "waiting", timeout=15_000)
    expect(page.locator("#position")).to_have_text("2")
    expect(page.locator("#announce")).not_to_be_empty()
    engine.shift_clock(room, 1_000)  # one admission earned: the visitor ahead goes in
    expect(page.locator("#position")).to_have_text("1", timeout=10_000)
    engine.shift_clock(room, 1_000)  # and the next one is ours
    page.wait_for_url(re.compile(r"/healthz\?from=queue&abq="), timeout=20_000)
    query = parse_qs(urlsplit(page.url).query)
    assert query["from"] == ["queue"]
    result = verify.verify_admission(query["abq"][0], TEST_KEYS, room=slug)
    assert result.valid, result.reason


def test_three_tabs_share_one_ticket_and_one_poller(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url)
    context: BrowserContext = new_context()
    counter: dict[Page, int] = {}
    pages = []
    for _ in range(3):
        page = context.new_page()
        polls_of(page, counter)
        page.goto(room_url(live, slug, api_key))
        expect(page.locator("#position")).to_have_text("2", timeout=15_000)
        pages.append(page)
    assert engine.stats(room).tickets == 2  # the one ahead, and one for all three tabs
    for page in pages:
        expect(page.locator("#anteroom")).to_have_attribute("data-state", "waiting")
    until(pages[0], lambda: sum(counter.values()) >= 3)  # polls come once a second
    pollers = [p for p in pages if counter.get(p, 0) > 0]
    assert len(pollers) == 1, counter
    leader = pollers[0]
    leader.close()
    others = [p for p in pages if p is not leader]
    before = sum(counter.get(p, 0) for p in others)
    until(others[0], lambda: sum(counter.get(p, 0) for p in others) >= before + 3)
    took_over = [p for p in others if counter.get(p, 0) > 0]
    assert len(took_over) == 1, counter
    assert engine.stats(room).tickets == 2  # no new ticket on hand-over
    expect(took_over[0].locator("#position")).to_have_text("2")


def test_two_browsers_get_distinct_tickets_in_arrival_order(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=3)
    first = new_context().new_page()
    first.goto(room_url(live, slug, api_key))
    expect(first.locator("#position")).to_have_text("4", timeout=15_000)
    second = new_context().new_page()
    second.goto(room_url(live, slug, api_key))
    expect(second.locator("#position")).to_have_text("5", timeout=15_000)
    expect(first.locator("#position")).to_have_text("4")


def test_reload_keeps_the_ticket(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=2)
    page = new_context().new_page()
    page.goto(room_url(live, slug, api_key))
    expect(page.locator("#position")).to_have_text("3", timeout=15_000)
    stored = page.evaluate("() => JSON.stringify(Object.entries(localStorage))")
    page.reload()
    expect(page.locator("#position")).to_have_text("3", timeout=15_000)
    assert engine.stats(room).tickets == 3
    assert page.evaluate("() => JSON.stringify(Object.entries(localStorage))").count(
        "qt1."
    ) == stored.count("qt1.")


def test_not_yet_open_shows_a_countdown(stack: Stack, new_context: Any, artifacts: Path) -> None:
    live, engine, api_key = stack
    slug = "soon-" + secrets.token_hex(4)
    room = make_room(engine, env="web", slug=slug, redirectUrl=f"{live.url}/healthz")
    engine.open(room, engine.stats(room).now_ms + 10 * 60_000)
    page = new_context().new_page()
    page.goto(room_url(live, slug, api_key))
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "prequeue", timeout=15_000)
    expect(page.locator("#countdown")).to_be_visible()
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^(00:)?(09|10):\d\d$"))


def test_paused_room_shows_no_eta(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url)
    page = new_context().new_page()
    page.goto(room_url(live, slug, api_key))
    expect(page.locator("#eta")).to_be_visible(timeout=15_000)
    engine.pause(room)
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "paused", timeout=10_000)
    expect(page.locator("#eta")).to_be_hidden()
    expect(page.locator("#status-text")).to_contain_text("paused")


def test_held_visitor_sees_the_held_state(
    stack: Stack, new_context: Any, redis_client: Any
) -> None:
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, holdScore=40)
    # The busy-network rule (+40) fires for this browser's network: it is held, not refused.
    tag = tokens.network_tag(tokens.Keyring.parse(TEST_KEYS), "127.0.0.1")
    redis_client.set(f"anteroom:idn:{tag}:{int(time.time() // 60)}", 100, ex=120)
    page = new_context().new_page()
    page.goto(room_url(live, slug, api_key))
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "held", timeout=15_000)
    expect(page.locator("#position")).to_be_hidden()
    expect(page.locator("#eta")).to_be_hidden()


def test_unknown_room_or_key_is_a_clear_error_page(stack: Stack, new_context: Any) -> None:
    live, _, api_key = stack
    page = new_context().new_page()
    response = page.goto(room_url(live, "no-such-room", api_key))
    assert response and response.status == 404
    expect(page.locator("h1")).to_have_text("Waiting room not found")
    response = page.goto(room_url(live, "drop", "pk_wrong"))
    assert response and response.status == 401


@pytest.mark.parametrize(("width", "height"), [(360, 740), (1280, 800)])
def test_waiting_page_screenshots(
    stack: Stack, new_context: Any, artifacts: Path, width: int, height: int
) -> None:
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=41)
    page = new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(room_url(live, slug, api_key))
    expect(page.locator("#position")).to_have_text("42", timeout=15_000)
    # Nothing sticks out sideways on a phone.
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(artifacts / f"waiting-{width}x{height}.png"), full_page=True)
