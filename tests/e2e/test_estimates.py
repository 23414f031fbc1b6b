"""Between polls the hosted page moves the place at the room's pace (an estimate the next poll
corrects), and a visitor at the front hears of the admission within about a second; in real
Chromium against a real server. Time is the room's pinned Redis clock and Playwright's clock
for the page: the page's timers run only when a test advances them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, Response, expect

from anteroom.engine import Engine
from helpers import waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
QUEUE_CALLS = re.compile(r"/api/v1/queue/(join|enter|poll)$")


def shown_position(page: Page) -> int:
    return int(re.sub(r"\D", "", page.locator("#position").inner_text()))


def open_paused(page: Page, url: str, answers: list[Response]) -> None:
    """Load the page with its time stopped, moving it 100 ms at a time (real requests come and
    go meanwhile) until it shows the wait; from then on the page's time is the test's."""
    page.on("response", lambda r: answers.append(r) if QUEUE_CALLS.search(r.url) else None)
    page.clock.install()
    # A number is read as seconds here: a second past the blank page's now.
    page.clock.pause_at(page.evaluate("Date.now()") / 1000 + 1)
    page.goto(url)
    main = page.locator("#anteroom")
    for _ in range(400):  # up to 40 s of page time for the proof of work and the entry
        if main.get_attribute("data-state") == "waiting":
            return
        page.clock.run_for(100)
        page.wait_for_timeout(25)  # real time for the requests in flight, not a race's cover
    raise AssertionError(f"the page never showed the wait: {main.get_attribute('data-state')}")


def last_answer(answers: list[Response]) -> dict[str, Any]:
    """The queue answer of the last call: a join answers it beside the session it opened."""
    body: dict[str, Any] = answers[-1].json()
    return body["queue"] if answers[-1].url.endswith("/join") else body


def test_the_place_moves_at_the_rooms_pace_and_the_poll_corrects_it(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    # 1,200 ahead at 60 a minute: about one place a second; the room's clock is pinned, so the
    # server's figure stays put and only the page's estimate moves.
    _, slug = waiting_room(engine, live.url, ahead=1_200, ratePerMinute=60)
    page = new_context().new_page()
    answers: list[Response] = []
    open_paused(page, f"{live.url}/queue/{slug}?key={api_key}", answers)
    first = last_answer(answers)
    assert len(answers) == 1 and first["position"] == 1_201 and first["etaSeconds"] > 0
    pace = first["position"] / first["etaSeconds"]  # places a second, as the agent reads it
    assert shown_position(page) == 1_201
    expect(page.locator("#estimate")).to_be_hidden()
    seen = []
    for _ in range(8):
        page.clock.run_for(1_000)
        seen.append(shown_position(page))
    steps = [a - b for a, b in zip([1_201, *seen], seen, strict=False)]
    assert all(0 <= s <= 2 for s in steps) and sum(steps) >= 6, seen  # smoothly, a place a second
    assert 1_201 - seen[-1] <= pace * 9, "never ahead of the room's pace"
    expect(page.locator("#estimate")).to_be_visible()
    expect(page.locator("#estimate")).to_have_text("estimate")
    polls = len(answers)
    page.clock.run_for(first["pollAfterMs"])  # the poll the server asked for
    expect(page.locator("#estimate")).to_be_hidden(timeout=10_000)
    assert len(answers) == polls + 1
    expect(page.locator("#position")).to_have_text("1,201")  # the server's figure again


def test_a_visitor_at_the_front_hears_of_the_admission_within_a_second(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=1, ratePerMinute=60)
    page = new_context().new_page()
    answers: list[Response] = []
    open_paused(page, f"{live.url}/queue/{slug}?key={api_key}", answers)
    expect(page.locator("#position")).to_have_text("2")
    assert 1_000 <= last_answer(answers)["pollAfterMs"] <= 2_000  # the front polls every 1-2 s
    engine.shift_clock(room, 1_000)  # one admission earned: the visitor ahead goes in
    page.clock.run_for(last_answer(answers)["pollAfterMs"])
    expect(page.locator("#position")).to_have_text("1", timeout=10_000)
    wait = last_answer(answers)["pollAfterMs"]
    assert wait <= 2_000
    engine.shift_clock(room, 1_000)  # our turn is dealt
    # Within the server's next poll interval of page time (1-2 s), the page has it and leaves.
    page.clock.run_for(wait)
    page.wait_for_url(re.compile(r"/healthz\?from=queue&abq="), timeout=10_000)
