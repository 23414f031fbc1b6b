"""Four things the console showed wrong in the middle of a drop, each as an operator meets it:
a paused room's line, a notice set for one language, an event's typed times, and the rate an
event deals. Real Chromium, real gunicorn and Redis; each is checked where it lands."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

import pytest
from console_pages import open_room_page
from playwright.sync_api import Page, expect

from anteroom.engine import Engine
from anteroom.queue.rooms import room_events
from anteroom.queue.series.room_series import GAUGES, RoomSeries
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
MINUTE = 60_000


def signed_in(stack: Stack, new_context: Any, **config: Any) -> tuple[Page, Engine, str]:
    """A signed-in console on a new open room's page (in UTC, so typed times are UTC)."""
    live, engine, _ = stack
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    room = make_room(engine, env="web", slug="drop-" + secrets.token_hex(4), **config)
    engine.open(room)
    page = new_context(timezone_id="UTC").new_page()
    return open_room_page(page, live, secret, room), engine, room


def confirm(page: Page, says: str, method: str = "PATCH") -> None:
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(says)
    with page.expect_response(lambda reply: reply.request.method == method, timeout=10_000):
        dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator("#room-status")).to_have_text("Done.", timeout=10_000)


def test_a_paused_rooms_line_is_shown_as_it_waits(stack: Stack, new_context: Any) -> None:
    page, engine, room = signed_in(stack, new_context, ratePerMinute=1)
    for i in range(26):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    page.get_by_role("button", name="Pause").click()
    page.get_by_role("dialog").get_by_role("button", name="Confirm").click()
    expect(page.locator('[data-figure="Status"]')).to_have_text("paused", timeout=10_000)
    expect(page.locator('[data-figure="Waiting"]')).to_have_text("26")
    rows = page.locator("#line tbody tr")
    expect(rows).to_have_count(26, timeout=10_000)  # the drain's order, kept while paused
    expect(rows.first).to_contain_text("v0")
    expect(page.locator("#line")).not_to_contain_text("Nobody is waiting")


def test_a_notice_for_one_language_keeps_the_one_for_every_other(
    stack: Stack, new_context: Any
) -> None:
    page, engine, room = signed_in(stack, new_context)
    form = page.locator('form[data-field="notice"]')
    form.get_by_label("Notice language").select_option("")
    form.get_by_label("Notice", exact=True).fill("Sizes S and M are sold out.")
    form.get_by_role("button", name="Save").click()
    confirm(page, 'Show the notice "Sizes S and M are sold out." in every language.')
    form.get_by_label("Notice language").select_option(label="French (fr)")
    form.get_by_label("Notice", exact=True).fill("Les tailles S et M sont épuisées.")
    form.get_by_role("button", name="Save").click()
    # The confirmation says, in words, what every other language keeps.
    confirm(page, 'every other language keeps "Sizes S and M are sold out."')
    notice = engine.get_room(room)["notice"]
    assert notice == {"*": "Sizes S and M are sold out.", "fr": "Les tailles S et M sont épuisées."}
    # Choosing "every language" again edits the text for every other language, not the French.
    form.get_by_label("Notice language").select_option("")
    expect(form.get_by_label("Notice", exact=True)).to_have_value("Sizes S and M are sold out.")


def test_a_scheduled_events_typed_times_are_kept_to_the_millisecond(
    stack: Stack, new_context: Any
) -> None:
    # The page's last reading of the room's clock is up to a refresh old when the form is sent,
    # and the operator's own clock may be off: neither may move the times typed.
    page, engine, room = signed_in(stack, new_context)
    ahead = 3 * MINUTE + 1_234  # this room's clock was moved for a rehearsal
    engine.shift_clock(room, ahead)
    page.reload()
    expect(page.locator('[data-figure="Status"]')).to_have_text("open", timeout=10_000)
    page.clock.set_system_time(datetime.now(UTC).timestamp() + 4.5)  # the browser's clock runs late
    form = page.locator("#schedule-event")
    form.get_by_label("Starts").fill("2099-06-01T14:43")
    form.get_by_label("Ends").fill("2099-06-01T14:47")
    form.get_by_label("Rate during it").fill("300")
    form.get_by_role("button", name="Schedule event").click()
    confirm(page, "14:43 to 1 Jun 2099, 14:47 (UTC): 300 admitted a minute while it runs", "POST")
    (event,) = engine.get_room(room)["events"]
    typed = int(datetime(2099, 6, 1, 14, 43, tzinfo=UTC).timestamp() * 1000)
    assert (event["startsAt"], event["endsAt"]) == (typed + ahead, typed + 4 * MINUTE + ahead)


def test_a_running_events_rate_is_the_rate_shown(stack: Stack, new_context: Any) -> None:
    page, engine, room = signed_in(stack, new_context, ratePerMinute=120)
    now = engine.stats(room).now_ms
    running = {"id": room_events.new_id(), "startsAt": now - MINUTE, "endsAt": now + 30 * MINUTE}
    engine.set_events(room, "0", [running | {"overrides": {"ratePerMinute": 300}}])
    engine.shift_clock(room, 10_000)  # the next slot of the series, which the sample takes
    engine.tick(room, 1000)
    RoomSeries(engine.redis, engine.keys).sample(room)
    expect(page.locator('[data-figure="Admitted last minute"]')).to_contain_text(
        "rate 300 / min", timeout=10_000
    )
    series = RoomSeries(engine.redis, engine.keys)
    samples = series.samples(room, now + 10_000, now + MINUTE, False)
    # The series' rate column: the rate in force, not the room's own.
    assert samples and samples[-1].gauges[GAUGES.index("rate")] == 300
    expect(page.locator("#chart-admissions")).to_contain_text(
        "the rate is 300 per minute", timeout=10_000
    )
