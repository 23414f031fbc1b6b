"""The operator console in real headless Chromium, against a real gunicorn and Redis.

The room's clock is pinned and moved by the test; the test also samples the room itself (as one
more instance would: the slot claim makes it the same as the server's own sampler doing it), so
nothing waits for wall-clock seconds to pass.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import pytest
from console_pages import sign_in
from playwright.sync_api import Page, expect

from anteroom.engine import Engine
from anteroom.queue.series.room_series import AGENT_COUNTS, RoomSeries
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
FIFTEEN_MINUTES = re.compile(r"^(9\d|1[01]\d)$")  # points of 10 s, give or take a moved clock


class Crowd:
    """Visitors the test moves through a pinned room, and the samples it takes."""

    def __init__(self, engine: Engine, room: str) -> None:
        self.engine = engine
        self.room = room
        self.series = RoomSeries(engine.redis, engine.keys)
        self.entered = 0

    def arrive(self, n: int) -> None:
        for _ in range(n):
            self.entered += 1
            self.engine.enter(self.room, f"v{self.entered}", f"s{self.entered}", 10)

    def tick(self) -> None:
        """The head polls (admitted if the room deals), ten seconds pass, the room ticks, and
        a sample.

        The test ticks the room itself right after moving the clock (as the server's room ticker
        would a moment later: whichever comes first deals, the other finds nothing owed), so the
        sample, the server's own sampler's or the test's, shows the line after the drain.
        """
        line = self.engine.line(self.room, 1)
        if line:
            self.engine.poll(self.room, line[0].visitor, line[0].ticket, 1)
        self.engine.shift_clock(self.room, 10_000)
        self.engine.tick(self.room, 1000)
        self.series.sample(self.room)


@pytest.fixture
def console(stack: Stack) -> tuple[LiveServer, Crowd, str]:
    live, engine, _ = stack
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    slug = "drop-" + secrets.token_hex(4)
    room = make_room(engine, env="web", slug=slug, ratePerMinute=6, capacity=50)
    engine.set_clock(room, engine.stats(room).now_ms // 60_000 * 60_000)
    engine.open(room)
    crowd = Crowd(engine, room)
    crowd.series.sample(room)
    return live, crowd, secret


def watch_csp(page: Page) -> list[str]:
    errors: list[str] = []
    page.on(
        "console",
        lambda m: errors.append(m.text) if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def last_values(page: Page, chart: str) -> list[Any]:
    raw = page.locator(f"#chart-{chart}").get_attribute("data-last")
    return json.loads(raw or "[]")  # type: ignore[no-any-return]


def test_operator_watches_the_line_move_and_pauses_and_resumes(
    console: tuple[LiveServer, Crowd, str], new_context: Any, artifacts: Path
) -> None:
    live, crowd, secret = console
    crowd.arrive(6)
    crowd.tick()  # ten seconds at 6 a minute: the first is admitted
    page = new_context(viewport={"width": 1280, "height": 800}).new_page()
    problems = watch_csp(page)
    sign_in(page, live, secret)
    row = page.locator(f'tr[data-room="{crowd.room}"]')
    expect(row).to_contain_text("open", timeout=10_000)
    row.get_by_role("link").click()
    summary = page.locator("#summary-line")
    expect(summary).to_contain_text("waiting", timeout=10_000)
    first = crowd.engine.stats(crowd.room).waiting
    expect(summary).to_contain_text(f"{first} waiting")
    # The line moves: more arrive, and the page shows it at its next refresh.
    crowd.arrive(5)
    crowd.tick()
    expect(summary).to_contain_text(f"{first + 4} waiting", timeout=10_000)
    expect(page.locator('[data-figure="Waiting"]')).to_have_text(str(first + 4))
    for _ in range(3):
        crowd.tick()
    expect(page.locator("#chart-admissions")).to_have_attribute(
        "data-last", json.dumps([6, 6], separators=(",", ":")), timeout=10_000
    )  # one admitted every 10 s: 6 a minute, the rate
    # The last in line gives up: the page counts who left before their turn.
    gone = crowd.engine.line(crowd.room, 200)[-1]
    assert crowd.engine.leave(crowd.room, gone.visitor, gone.ticket, 1)
    crowd.tick()
    expect(page.locator("#summary-departures")).to_contain_text(
        "1 left the line before their turn in this span", timeout=10_000
    )
    # Signed agents are counted apart (the web tier's tallies, as visit/agents.py makes them).
    for _ in range(2):
        crowd.series.tally(crowd.room, AGENT_COUNTS["queued"])
    crowd.series.tally(crowd.room, AGENT_COUNTS["invalid"])
    crowd.series.flush_tallies()
    crowd.tick()
    expect(page.locator("#summary-agents")).to_contain_text(
        "2 signed agents queued, 0 admitted through their lane, 0 refused by the room's setting"
        " and 1 with a signature",
        timeout=10_000,
    )
    page.get_by_label("Show the last").select_option(label="15 minutes")
    expect(page.locator("#chart-line")).to_have_attribute("data-points", FIFTEEN_MINUTES)
    page.evaluate("document.getElementById('charts-h').scrollIntoView()")
    page.screenshot(path=str(artifacts / "console-1280x800.png"), full_page=False)

    # Pause from the page, through the confirmation.
    page.get_by_role("button", name="Pause").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("nobody is admitted until you resume")
    dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator("#main")).to_have_attribute("data-status", "paused", timeout=10_000)
    expect(page.locator('[data-figure="Status"]')).to_have_text("paused")
    crowd.tick()
    expect(page.locator("#chart-admissions")).to_have_attribute(
        "data-last", json.dumps([0, 6], separators=(",", ":")), timeout=10_000
    )
    waiting_paused = crowd.engine.stats(crowd.room).waiting
    crowd.tick()
    assert crowd.engine.stats(crowd.room).waiting == waiting_paused  # nobody dealt

    page.get_by_role("button", name="Resume").click()
    page.get_by_role("dialog").get_by_role("button", name="Confirm").click()
    expect(page.locator("#main")).to_have_attribute("data-status", "open", timeout=10_000)
    crowd.tick()  # a resume earns from now on: nobody yet
    crowd.tick()
    expect(page.locator("#chart-admissions")).to_have_attribute(
        "data-last", json.dumps([6, 6], separators=(",", ":")), timeout=10_000
    )
    resumed = page.locator("#audit tbody tr").first
    expect(resumed).to_contain_text("Opened")
    expect(resumed).to_contain_text("Status: paused → open")
    expect(page.locator("#line tbody tr").first).to_contain_text("1")

    # A phone.
    page.set_viewport_size({"width": 360, "height": 740})
    page.reload()
    expect(page.locator("#summary-line")).to_contain_text("waiting", timeout=10_000)
    page.get_by_label("Show the last").select_option(label="15 minutes")
    expect(page.locator("#chart-line")).to_have_attribute("data-points", FIFTEEN_MINUTES)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, f"the page scrolls sideways at 360 px ({width} px wide)"
    page.evaluate("document.getElementById('charts').scrollIntoView()")
    page.screenshot(path=str(artifacts / "console-360x740.png"), full_page=False)
    assert not [p for p in problems if "Content Security Policy" in p or "Error" in p], problems


def test_a_wrong_key_is_refused(console: tuple[LiveServer, Crowd, str], new_context: Any) -> None:
    live, _, secret = console
    page = new_context().new_page()
    page.goto(f"{live.url}/console")
    page.get_by_label("Secret key").fill(secret[:-3] + "xyz")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("not valid")
    expect(page.get_by_label("Secret key")).to_have_attribute("aria-invalid", "true")
    assert page.context.cookies() == []
    page.goto(f"{live.url}/console/api/queues")
    assert "Sign in again" in page.content()


def test_keyboard_alone_signs_in_and_opens_a_room(
    console: tuple[LiveServer, Crowd, str], new_context: Any
) -> None:
    live, crowd, secret = console
    page = new_context().new_page()
    page.goto(f"{live.url}/console")
    page.keyboard.press("Tab")  # the skip link
    page.keyboard.press("Tab")
    page.keyboard.type(secret)
    page.keyboard.press("Enter")
    link = page.locator(f'tr[data-room="{crowd.room}"] a')
    expect(link).to_be_visible(timeout=10_000)
    link.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#figures")).to_contain_text("Waiting", timeout=10_000)
    page.get_by_role("button", name="Pause").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("dialog")).to_be_visible()
    expect(page.locator("#confirm-cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_be_hidden()
    assert crowd.engine.get_room(crowd.room)["status"] == "open"  # cancelled: nothing changed


def test_hold_score_and_opening_time_are_confirmed_in_words(stack: Stack, new_context: Any) -> None:
    live, engine, _ = stack
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    held_room = make_room(engine, env="web", slug="held-" + secrets.token_hex(3), capacity=50)
    engine.open(held_room)
    for i, score in enumerate((75, 75, 95)):
        engine.enter(held_room, f"h{i}", f"s{i}", score)  # held: holdScore is 70
    idle_room = make_room(engine, env="web", slug="later-" + secrets.token_hex(3))
    page = new_context(timezone_id="Asia/Tokyo").new_page()
    sign_in(page, live, secret)

    page.goto(f"{live.url}/console/rooms/{held_room}")
    field = page.get_by_label("Hold score (sessions scoring at or above it are held)")
    field.fill("80")
    expect(page.locator("#hold-preview")).to_have_text(
        "Raising it to 80 releases 2 held visitors into the line, in their original places."
    )
    page.locator('form[data-field="holdScore"] button').click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(
        "Change the hold score from 70 to 80. Raising it to 80 releases 2"
    )
    dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator('[data-figure="Held"]')).to_have_text("1", timeout=10_000)
    assert engine.get_room(held_room)["holdScore"] == 80
    page.get_by_label("Rate (admissions per minute)").fill("240")
    page.locator('form[data-field="ratePerMinute"] button').click()
    expect(page.get_by_role("dialog")).to_contain_text("from 60 to 240 per minute")
    page.get_by_role("dialog").get_by_role("button", name="Confirm").click()
    rate = page.locator('[data-figure="Admitted last minute"]')
    expect(rate).to_contain_text("(rate 240 / min)", timeout=10_000)
    page.get_by_label("Capacity (most active visitors, 0 for no limit)").fill("0")
    page.locator('form[data-field="capacity"] button').click()
    expect(page.get_by_role("dialog")).to_contain_text("from 50 to no limit")
    page.get_by_role("dialog").get_by_role("button", name="Confirm").click()
    # No "of <capacity>" any more (the room ticker may have let the two released visitors in).
    active = page.locator('[data-figure="Active"]')
    expect(active).to_have_text(re.compile(r"^\d+$"), timeout=10_000)
    expect(page.locator("#room-status")).to_have_text("Done.", timeout=10_000)
    changed = engine.get_room(held_room)
    assert (changed["ratePerMinute"], changed["capacity"]) == (240, None)

    page.goto(f"{live.url}/console/rooms/{idle_room}")
    expect(page.get_by_label("Open at (Asia/Tokyo)")).to_be_visible(timeout=10_000)
    page.get_by_label("Open at (Asia/Tokyo)").fill("2031-05-04T09:30")
    page.get_by_role("button", name="Schedule opening").click()
    expect(page.get_by_role("dialog")).to_contain_text("4 May 2031, 09:30 (Asia/Tokyo)")
    page.get_by_role("dialog").get_by_role("button", name="Confirm").click()
    expect(page.locator('[data-figure="Opens"]')).to_have_text(
        "4 May 2031, 09:30 (Asia/Tokyo)", timeout=10_000
    )
    # 09:30 in Tokyo (UTC+9) is 00:30 UTC.
    assert engine.get_room(idle_room)["opensAt"] == 1_935_621_000_000


def test_the_room_page_shows_the_safety_net_switching(
    console: tuple[LiveServer, Crowd, str], new_context: Any
) -> None:
    live, crowd, secret = console
    net = {"activeSessions": 3, "arrivalsPerMinute": 1000, "coolDownSec": 60}
    crowd.engine.update_room(crowd.room, {"safetyNet": net})
    page = new_context().new_page()
    sign_in(page, live, secret)
    page.goto(f"{live.url}/console/rooms/{crowd.room}")
    figure = page.locator('[data-figure="Safety net"]')
    expect(figure).to_contain_text("calm (queues from 3 active", timeout=10_000)
    crowd.arrive(4)  # three admitted at once whatever the rate, the fourth waits
    assert crowd.engine.stats(crowd.room).active == 3
    expect(figure).to_contain_text("queueing since", timeout=10_000)
