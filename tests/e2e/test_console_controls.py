"""The console's controls for what visitors read (the notice per language, the closed message,
the theme with its contrast check), its charts' default span and its buttons' size: real
Chromium, real gunicorn and Redis. Each change is checked where it lands: the room in Redis."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from console_pages import open_room_page
from playwright.sync_api import Page, expect

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]


@pytest.fixture
def room_page(stack: Stack, new_context: Any) -> tuple[Page, Engine, str]:
    """A signed-in console on an open room's page."""
    live, engine, _ = stack
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    room = make_room(engine, env="web", slug="drop-" + secrets.token_hex(4), capacity=50)
    engine.open(room)
    page = open_room_page(new_context().new_page(), live, secret, room)
    return page, engine, room


def confirm(page: Page, says: str) -> None:
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(says)
    # The status still says the last change's "Done." until the dialog's close handler runs:
    # the change is awaited by its PATCH answer, then the status the page shows after it.
    with page.expect_response(lambda reply: reply.request.method == "PATCH", timeout=10_000):
        dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator("#room-status")).not_to_have_text("Saving…", timeout=10_000)


def test_the_notice_is_set_per_language_and_withdrawn(room_page: tuple[Page, Engine, str]) -> None:
    page, engine, room = room_page
    form = page.locator('form[data-field="notice"]')
    form.get_by_label("Notice language").select_option("de")
    form.get_by_label("Notice", exact=True).fill("Größen S und M sind ausverkauft.")
    form.get_by_role("button", name="Save").click()
    confirm(page, 'Set the notice in German (de) to "Größen S und M sind ausverkauft."')
    expect(page.locator("#room-status")).to_have_text("Done.")
    assert engine.get_room(room)["notice"] == {"de": "Größen S und M sind ausverkauft."}
    form.get_by_label("Notice language").select_option("en")
    form.get_by_label("Notice", exact=True).fill("Sizes S and M are sold out.")
    form.get_by_role("button", name="Save").click()
    confirm(page, "in English (en)")
    assert engine.get_room(room)["notice"] == {
        "de": "Größen S und M sind ausverkauft.",
        "en": "Sizes S and M are sold out.",
    }
    form.get_by_label("Notice language").select_option("de")
    german = form.get_by_label("Notice", exact=True)
    expect(german).to_have_value("Größen S und M sind ausverkauft.")
    form.get_by_role("button", name="Withdraw").click()
    confirm(page, "Withdraw the notice")
    assert engine.get_room(room)["notice"] is None


def test_the_closed_message_is_set_for_every_language(room_page: tuple[Page, Engine, str]) -> None:
    page, engine, room = room_page
    form = page.locator('form[data-field="closedMessage"]')
    form.get_by_label("Closed message", exact=True).fill("Sold out — thank you for waiting")
    form.get_by_role("button", name="Save").click()
    confirm(page, 'Show the closed message "Sold out — thank you for waiting" in every language.')
    expect(page.locator("#room-status")).to_have_text("Done.")
    assert engine.get_room(room)["closedMessage"] == "Sold out — thank you for waiting"


def test_the_theme_shows_its_contrast_and_the_servers_refusal(
    room_page: tuple[Page, Engine, str],
) -> None:
    page, engine, room = room_page
    form = page.locator('form[data-field="theme"]')
    form.get_by_label("Accent colour (buttons, links)").fill("#777777")
    form.get_by_label("Background colour").fill("#808080")
    expect(page.locator("#theme-contrast")).to_contain_text("1.13:1 (at least 4.5:1 is needed")
    form.get_by_role("button", name="Save theme").click()
    confirm(page, "accent #777777 on background #808080 (1.13:1)")
    # The server's own check, word for word, beside the form.
    expect(page.locator("#theme-outcome")).to_contain_text(
        "accentColor #777777 on backgroundColor #808080 has a contrast of 1.13:1; at least 4.5:1"
    )
    assert engine.get_room(room)["theme"] is None
    form.get_by_label("Accent colour (buttons, links)").fill("#0b3d91")
    form.get_by_label("Background colour").fill("#fff8e7")
    form.get_by_label("Title (optional, instead of the room's name)").fill("Spring drop at Shop")
    expect(page.locator("#theme-contrast")).to_contain_text("(readable)")
    form.get_by_role("button", name="Save theme").click()
    confirm(page, 'title "Spring drop at Shop"')
    expect(page.locator("#room-status")).to_have_text("Done.")
    assert engine.get_room(room)["theme"] == {
        "accentColor": "#0b3d91",
        "backgroundColor": "#fff8e7",
        "title": "Spring drop at Shop",
    }
    form.get_by_role("button", name="Remove theme").click()
    confirm(page, "Remove the theme")
    assert engine.get_room(room)["theme"] is None


def test_charts_default_to_15_minutes_and_buttons_are_one_size(
    room_page: tuple[Page, Engine, str],
) -> None:
    page, _, _ = room_page
    expect(page.locator("#range")).to_have_value("900000")
    pause = page.get_by_role("button", name="Pause").bounding_box()
    change = page.locator('form[data-field="ratePerMinute"] button').bounding_box()
    assert pause and change and abs(pause["height"] - change["height"]) < 1, (pause, change)
