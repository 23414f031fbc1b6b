"""The public fairness report page in real headless Chromium, against a real server (gunicorn)
and Redis: it renders whole on a phone, in English and in a right-to-left language, and shows
the very draw fairness.json publishes. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from anteroom.engine import Engine
from anteroom.web.pages import page_languages as languages
from helpers import make_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

PHONE = {"width": 360, "height": 740}
START = 1_800_000_000_000
# What no rendered page may show: one of the report's catalog keys instead of its text.
KEYS = [key for key in languages.catalog("en") if key.startswith("fairness.")]
KEY_SHOWN = re.compile("|".join(rf"\b{re.escape(key)}\b" for key in KEYS))
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  return {scroll: document.documentElement.scrollWidth, width};
}"""


def drawn_room(engine: Engine, slug: str = "drop") -> str:
    """A room whose opening had a pre-queue of three, drawn, and one admission since."""
    room = make_room(engine, env="web", slug=slug, name="Spring drop")
    engine.set_clock(room, START)
    engine.open(room, START + 60_000)
    for i in range(3):
        engine.enter(room, f"pre{i}", "s", 10)
    engine.shift_clock(room, 60_000)
    engine.tick(room)  # the draw
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    return room


def test_the_report_page_renders_in_english_and_arabic(
    stack: tuple[LiveServer, Engine, str], new_context: Any, artifacts: Path
) -> None:
    live, engine, api_key = stack
    drawn_room(engine)
    json_url = f"{live.url}/queue/drop/fairness.json?key={api_key}"
    document = requests.get(json_url, timeout=10).json()
    assert document["seed"] and document["admittedFromPreQueue"] == 1
    for lang in ("en", "ar"):
        page = new_context(viewport=PHONE).new_page()
        page.goto(f"{live.url}/queue/drop/fairness?key={api_key}&lang={lang}")
        expect(page.locator("#seed")).to_have_text(document["seed"])
        expect(page.locator("#root")).to_have_text(document["root"])
        expect(page.locator("#entrants")).to_have_text("3")
        expect(page.locator("#verify-command")).to_have_text(
            f"anteroom verify-draw --fairness {json_url}"
        )
        direction = page.evaluate("() => getComputedStyle(document.body).direction")
        assert direction == ("rtl" if lang == "ar" else "ltr")
        assert page.title() == languages.translate(lang, "fairness.title", room="Spring drop")
        text = page.locator("body").inner_text()
        assert not KEY_SHOWN.search(text), KEY_SHOWN.search(text)
        assert languages.translate(lang, "fairness.checkTitle") in text
        # The hashes wrap: nothing pushes the page sideways on a phone.
        sizes = page.evaluate(OVERFLOW)
        assert sizes["scroll"] <= sizes["width"], sizes
        page.screenshot(path=str(artifacts / f"fairness-{lang}.png"), full_page=True)


def test_checking_the_draw_in_the_browser_shows_the_honest_verdict(
    stack: tuple[LiveServer, Engine, str], new_context: Any
) -> None:
    live, engine, api_key = stack
    # A slug of its own: the server's room directory may still hold the last test's "drop".
    drawn_room(engine, "checked-drop")
    page = new_context(viewport=PHONE).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live.url}/queue/checked-drop/fairness?key={api_key}&lang=en")
    # The page's own fairness.json and entrant list, checked by frontend/draw-check.js.
    page.locator("#check-draw").click()
    verdict = page.locator("#draw-verdict")
    expect(verdict).to_have_attribute("data-verdict", "ok")
    expect(verdict).to_have_text(languages.translate("en", "fairness.drawPassed", count=3))
    # A receipt that is no receipt is named as the Python checker names it.
    page.locator("#receipt-text").fill("rc1.nope")
    page.locator("#check-receipt").click()
    expect(page.locator("#receipt-verdict")).to_have_attribute("data-verdict", "receipt-malformed")
    assert errors == []
