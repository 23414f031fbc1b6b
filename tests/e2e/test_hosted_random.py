"""The hosted page in a room in mode random (docs/operators.md, "Queueing modes"): "in the draw"
with the odds in words and no place, ETA or bar; back in fifo, the place again. Real Chromium,
server, Redis."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from anteroom.engine import Engine
from helpers import waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]


def test_a_random_room_shows_the_odds_and_no_place(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    # 39 waiting before the visitor, 1 admission a minute: a 1 in 40 chance
    room, slug = waiting_room(engine, live.url, ahead=39, mode="random")
    page = new_context().new_page()
    page.goto(f"{live.url}/queue/{slug}?key={api_key}")
    main = page.locator("#anteroom")
    expect(main).to_have_attribute("data-state", "waiting", timeout=15_000)
    expect(page.locator("#status-text")).to_have_text(re.compile("^You're in the draw"))
    expect(page.locator("#ahead")).to_have_text("About a 1 in 40 chance in the next minute")
    expect(main).to_have_attribute("data-draw", "1")
    for hidden in ("#position", ".figure-position .label", ".figure-eta", "#progress"):
        expect(page.locator(hidden)).to_be_hidden()
    expect(page.locator("body")).not_to_contain_text("number 40")
    # Back to fifo, the next poll (within seconds: the draw's cadence) shows the place it kept.
    engine.update_room(room, {"mode": "fifo"})
    expect(page.locator("#position")).to_have_text("40", timeout=15_000)
    expect(page.locator("#status-text")).to_have_text(re.compile("number 40 in line"))
    expect(main).to_have_attribute("data-draw", "")
    expect(page.locator(".figure-eta")).to_be_visible()
