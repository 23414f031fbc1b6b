"""The browser agent and the hosted page reach a ticket in two visitor calls (arrive, join),
counted in real Chromium against a real server and Redis."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from anteroom.engine import Engine
from helpers import waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]


def visitor_calls(page: Page) -> list[str]:
    """The visitor API paths this page requests, in order (the list fills as it runs)."""
    calls: list[str] = []

    def seen(request: Request) -> None:
        if "/api/v1/" in request.url and request.method == "POST":
            calls.append(request.url.split("/api/v1/", 1)[1])

    page.on("request", seen)
    return calls


def test_the_hosted_page_holds_a_ticket_after_two_calls(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ratePerMinute=1, ahead=1)
    page = new_context().new_page()
    calls = visitor_calls(page)
    page.goto(f"{live.url}/queue/{slug}?key={api_key}")
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "waiting", timeout=15_000)
    expect(page.locator("#position")).to_have_text("2")
    assert calls[:2] == ["arrive", "queue/join"]
    assert all(call == "queue/poll" for call in calls[2:]), calls
    assert engine.stats(room).tickets == 2


def test_the_agent_holds_a_ticket_after_two_calls(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ratePerMinute=1, ahead=1)
    page = new_context().new_page()
    calls = visitor_calls(page)
    page.goto(live.url + "/")
    page.add_script_tag(url=live.url + "/static/anteroom.js")
    first = page.evaluate(
        """([slug, apiKey]) => new Promise((resolve, reject) => {
             anteroom.enterQueue(slug, {apiKey, onUpdate: (a) => a.ticket && resolve(a)})
               .catch(reject);
           })""",
        [slug, api_key],
    )
    assert first["status"] == "waiting" and first["position"] == 2
    assert calls[:2] == ["arrive", "queue/join"], calls
    assert all(call == "queue/poll" for call in calls[2:]), calls
    assert engine.stats(room).tickets == 2
