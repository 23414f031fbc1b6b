"""The console's scheduled events: a timeline and a list of the room's events, a form that
schedules one, Cancel / End now, and the charts marking the events' edges. Real Chromium, real
gunicorn and Redis; each change is checked in Redis."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from console_pages import open_room_page
from playwright.sync_api import Page, expect

from anteroom.engine import Engine
from anteroom.queue.rooms import room_events
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
MINUTE = 60_000


def signed_in(stack: Stack, new_context: Any, room: str, secret: str) -> Page:
    return open_room_page(new_context().new_page(), stack[0], secret, room)


def confirm(page: Page, says: str, method: str) -> None:
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(says)
    with page.expect_response(lambda reply: reply.request.method == method, timeout=10_000):
        dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator("#room-status")).to_have_text("Done.", timeout=10_000)


def test_events_on_the_timeline_scheduled_and_cancelled(stack: Stack, new_context: Any) -> None:
    _, engine, _ = stack
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    room = make_room(engine, env="web", slug="drop-" + secrets.token_hex(4), ratePerMinute=60)
    engine.open(room)
    now = engine.stats(room).now_ms
    running = {"id": room_events.new_id(), "startsAt": now - MINUTE, "endsAt": now + 30 * MINUTE}
    engine.set_events(room, "0", [running | {"overrides": {"ratePerMinute": 600}}])
    page = signed_in(stack, new_context, room, secret)

    timeline = page.locator("#timeline")
    expect(timeline.locator(f'[data-event="{running["id"]}"].running')).to_have_count(
        1, timeout=10_000
    )
    expect(timeline.locator(".now")).to_have_count(1)
    item = page.locator(f'#events li[data-event="{running["id"]}"]')
    expect(item).to_contain_text("running · ratePerMinute: 600")
    # the charts mark the running event's start (the default span is the last 15 minutes)
    expect(page.locator("#chart-admissions")).to_have_attribute("data-marks", "1", timeout=15_000)

    # schedule another through the form: tomorrow, capacity 5 and reject
    form = page.locator("#schedule-event")
    form.get_by_label("Starts").fill("2099-06-01T10:00")
    form.get_by_label("Ends").fill("2099-06-01T12:00")
    form.get_by_label("Its own pre-queue opens").fill("2099-06-01T09:30")
    form.get_by_label("Capacity during it").fill("5")
    form.get_by_label("Mode during it").select_option("reject")
    form.get_by_role("button", name="Schedule event").click()
    confirm(page, "at most 5 active at once, no new entries while it runs", "POST")
    events = engine.get_room(room)["events"]
    assert len(events) == 2 and events[1]["overrides"] == {"capacity": 5, "mode": "reject"}
    assert events[1]["endsAt"] - events[1]["startsAt"] == 120 * MINUTE
    assert events[1]["startsAt"] - events[1]["preQueueOpensAt"] == 30 * MINUTE
    later = page.locator(f'#events li[data-event="{events[1]["id"]}"]')
    expect(later).to_contain_text("scheduled")

    # cancel the scheduled one (gone) and end the running one (kept, ended)
    later.get_by_role("button", name="Cancel").click()
    confirm(page, "Cancel this event", "DELETE")
    expect(later).to_have_count(0)
    item.get_by_role("button", name="End now").click()
    confirm(page, "End this event now", "DELETE")
    expect(item).to_contain_text("ended")
    assert [e["id"] for e in engine.get_room(room)["events"]] == [running["id"]]
    assert engine.get_room(room)["events"][0]["endsAt"] <= engine.stats(room).now_ms
