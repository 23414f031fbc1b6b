"""The hosted page says only what is true in each state, reads well in every theme and in dark
mode, and gives an operator's notice its own direction: real Chromium, real server and Redis."""

from __future__ import annotations

import re
import secrets
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from anteroom.engine import Engine
from anteroom.queue.rooms.room_config import contrast
from helpers import make_room, waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
CLOSED = "Sold out — thank you for waiting"


def visit(page: Page, live: LiveServer, slug: str, api_key: str, state: str, **query: str) -> None:
    extra = "".join(f"&{k}={v}" for k, v in query.items())
    page.goto(f"{live.url}/queue/{slug}?key={api_key}{extra}")
    expect(page.locator("#anteroom")).to_have_attribute("data-state", state, timeout=15_000)


def idle_room(engine: Engine, live: LiveServer, closed: bool) -> str:
    slug = "idle-" + secrets.token_hex(4)
    room = make_room(engine, env="web", slug=slug, redirectUrl=f"{live.url}/healthz",
                     closedMessage=CLOSED)  # fmt: skip
    if closed:
        engine.open(room)
        engine.close(room)
    return slug


def nothing_to_keep(page: Page) -> None:
    """No place is kept: no "Keep this page open… keeps your place", no alert, no figures."""
    for hidden in (".note", "#alert", ".figures"):
        expect(page.locator(hidden)).to_be_hidden()


def test_a_room_never_opened_is_not_said_to_have_closed(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    page = new_context().new_page()
    visit(page, live, idle_room(engine, live, closed=False), api_key, "idle")
    expect(page.locator("#status-text")).to_have_text(re.compile("is not open right now"))
    expect(page.locator("body")).not_to_contain_text(CLOSED)
    nothing_to_keep(page)


def test_a_closed_room_says_its_closing_message_and_keeps_no_place(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    page = new_context().new_page()
    visit(page, live, idle_room(engine, live, closed=True), api_key, "idle")
    expect(page.locator("#status-text")).to_have_text(CLOSED)
    nothing_to_keep(page)


def test_a_room_taking_no_new_entries_says_its_closing_message_and_keeps_no_place(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    slug = "shut-" + secrets.token_hex(4)
    room = make_room(engine, env="web", slug=slug, redirectUrl=f"{live.url}/healthz",
                     closedMessage=CLOSED, mode="reject")  # fmt: skip
    engine.open(room)
    page = new_context().new_page()
    visit(page, live, slug, api_key, "idle")  # the visitor API's 403 RoomClosed, read as closed
    expect(page.locator("#status-text")).to_have_text(CLOSED)
    expect(page.locator("#anteroom")).not_to_have_attribute("data-error", re.compile("."))
    nothing_to_keep(page)
    assert engine.stats(room).waiting == 0


def test_a_pre_queue_shows_its_countdown_once_and_no_place(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    slug = "soon-" + secrets.token_hex(4)
    room = make_room(engine, env="web", slug=slug, redirectUrl=f"{live.url}/healthz")
    engine.open(room, engine.stats(room).now_ms + 10 * 60_000)
    page = new_context().new_page()
    visit(page, live, slug, api_key, "prequeue")
    expect(page.locator("#countdown")).to_be_visible()
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^\d\d:\d\d$"))
    # The place is drawn at random at the opening: none is shown, and the countdown once.
    expect(page.locator(".figure-position")).to_be_hidden()
    expect(page.locator(".figure-eta")).to_be_hidden()
    # Besides the countdown, only the opening's wall-clock time (shown, and spoken once by the
    # screen reader's region) may look like a clock: a count of the countdown's first digits
    # would also match the opening time (a run at 22:10 has "10:" in both).
    elsewhere = page.locator("main").evaluate(
        """main => {
            const copy = main.cloneNode(true);
            copy.querySelectorAll("#countdown, #opens-at, #announce").forEach(e => e.remove());
            return copy.innerText ?? copy.textContent;
        }"""
    )
    assert re.search(r"\d:\d\d", elsewhere) is None, elsewhere


def test_an_event_s_pre_queue_shows_its_countdown_and_no_place(
    stack: Stack, new_context: Any
) -> None:
    """A room already open, an event whose own pre-queue is open: the newcomer's page counts
    down to the event's start, as a room's opening does, and shows no place."""
    live, engine, api_key = stack
    slug = "event-" + secrets.token_hex(4)
    room = make_room(engine, env="web", slug=slug, redirectUrl=f"{live.url}/healthz")
    engine.open(room)
    now = engine.stats(room).now_ms
    event = {"id": "ev00000000e2e0", "startsAt": now + 10 * 60_000, "endsAt": now + 20 * 60_000,
             "preQueueOpensAt": now - 60_000, "overrides": {"ratePerMinute": 600}}  # fmt: skip
    engine.set_events(room, "0", [event])
    page = new_context().new_page()
    visit(page, live, slug, api_key, "prequeue")
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^(09|10):\d\d$"))
    expect(page.locator(".figure-position")).to_be_hidden()
    assert [e.score for e in engine.line(room)] and engine.stats(room).dealt_total == 0


def test_the_front_of_the_line_says_almost_there_with_a_full_bar(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=0)
    page = new_context().new_page()
    visit(page, live, slug, api_key, "waiting")
    expect(page.locator("#status-text")).to_have_text(re.compile("^Almost there"))
    expect(page.locator("#ahead")).to_be_hidden()
    expect(page.locator("body")).not_to_contain_text("0 people ahead")
    assert page.locator("#progress").evaluate("p => p.value") == 1


def test_an_english_notice_on_an_arabic_page_keeps_its_direction(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=0)
    engine.update_room(room, {"notice": {"en": "Sizes S and M are sold out."}})
    page = new_context(locale="ar").new_page()
    visit(page, live, slug, api_key, "waiting", lang="ar")
    notice = page.locator("#notice")
    expect(notice).to_have_text("Sizes S and M are sold out.")
    expect(notice).to_have_attribute("dir", "auto")
    expect(notice).to_have_attribute("lang", "en")
    # Laid out left to right: its full stop stays at its end, on the right.
    assert notice.evaluate("n => getComputedStyle(n).direction") == "ltr"


def rgb(css: str) -> str:
    r, g, b = (int(float(v)) for v in re.findall(r"[\d.]+", css)[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def ratio(page: Page, text: str, ground: str) -> float:
    ink = page.locator(text).first.evaluate("e => getComputedStyle(e).color")
    paper = page.locator(ground).first.evaluate("e => getComputedStyle(e).backgroundColor")
    return contrast(rgb(ink), rgb(paper))


@pytest.mark.parametrize(
    ("scheme", "theme"),
    [
        ("light", None),
        ("dark", None),
        # A grey where near-black and white text both fell short of 4.5:1.
        ("light", {"accentColor": "#000000", "backgroundColor": "#7a7a7a"}),
        ("dark", {"accentColor": "#ffd166", "backgroundColor": "#101820"}),
    ],
)
def test_text_and_buttons_read_at_4_5_to_1(
    stack: Stack, new_context: Any, scheme: str, theme: dict[str, str] | None
) -> None:
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=3, **({"theme": theme} if theme else {}))
    page = new_context(color_scheme=scheme).new_page()
    visit(page, live, slug, api_key, "waiting")
    assert ratio(page, "#status-text", ".card") >= 4.5
    assert ratio(page, ".languages button", ".languages button") >= 4.5  # "Change"
