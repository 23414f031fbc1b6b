"""The console as an operator reaches it, shared by the console's browser tests."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from live_server import LiveServer


def sign_in(page: Page, live: LiveServer, secret: str) -> None:
    """Sign in to the console with ``secret`` and wait for the rooms list."""
    page.goto(f"{live.url}/console")
    page.get_by_label("Secret key").fill(secret)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Rooms")).to_be_visible()


def open_room_page(page: Page, live: LiveServer, secret: str, room: str) -> Page:
    """Sign in, then open an open room's page and wait until it shows the room."""
    sign_in(page, live, secret)
    page.goto(f"{live.url}/console/rooms/{room}")
    expect(page.locator('[data-figure="Status"]')).to_have_text("open", timeout=10_000)
    return page
