"""The console's room policies (issue 26): the figures say the mode, whether sessions renew and
how many bypass rules the room has (never a secret), and the mode is changed like the other
settings, confirmed first. Real Chromium, real gunicorn and Redis; the change is checked where
it lands: the room in Redis."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from console_pages import open_room_page
from playwright.sync_api import Page, expect

from anteroom.engine import Engine
from anteroom.queue.rooms.room_hash import stored
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
SECRET = "monitor-secret-0123456789"


@pytest.fixture
def room_page(stack: Stack, new_context: Any) -> tuple[Page, Engine, str]:
    """A signed-in console on the page of an open room with two bypass rules, not renewable."""
    live, engine, _ = stack
    _, key = KeyStore(engine.redis, engine.keys).create("web")
    rules = [
        {"kind": "address-range", "value": "198.51.100.0/24"},
        {"kind": "header", "name": "X-Monitor", "secret": SECRET},
    ]
    slug = "drop-" + secrets.token_hex(4)
    room = make_room(engine, env="web", slug=slug, bypass=rules, sessionRenewal=False)
    engine.open(room)
    page = open_room_page(new_context().new_page(), live, key, room)
    return page, engine, room


def test_the_figures_show_the_policies_and_the_mode_changes(
    room_page: tuple[Page, Engine, str],
) -> None:
    page, engine, room = room_page
    expect(page.locator('[data-figure="Mode"]')).to_have_text("First come, first served")
    expect(page.locator('[data-figure="Session renewal"]')).to_contain_text("not renewable")
    expect(page.locator('[data-figure="Bypass rules"]')).to_have_text("2")
    # The rules are listed by what they match, a secret never (the API has none to show).
    expect(page.locator("#bypass-rules li")).to_have_count(2)
    assert SECRET not in page.content()

    form = page.locator('form[data-field="mode"]')
    expect(form.get_by_label("Queueing mode")).to_have_value("fifo")
    form.get_by_label("Queueing mode").select_option(label="Drawn at random")
    form.get_by_role("button", name="Change").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(
        "Change the mode from First come, first served to Drawn at random"
    )
    # cancelled: nothing changes
    dialog.get_by_role("button", name="Cancel").click()
    assert engine.redis.hget(engine.keys.room(room), stored("mode")) in (None, "fifo")

    form.get_by_role("button", name="Change").click()
    expect(dialog).to_contain_text("drawn at random")
    with page.expect_response(lambda reply: reply.request.method == "PATCH", timeout=10_000):
        dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator("#room-status")).to_have_text("Done.", timeout=10_000)
    assert engine.redis.hget(engine.keys.room(room), stored("mode")) == "random"
    assert engine.get_room(room)["mode"] == "random"
    expect(page.locator('[data-figure="Mode"]')).to_have_text("Drawn at random")
