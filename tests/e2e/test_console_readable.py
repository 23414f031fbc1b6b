"""The console read as an operator reads it: the audit log as a table in words, one 24-hour
clock (the charts' axes too), the chosen span from the first draw, links only to pages that
exist, and the session's real limits said at sign-in. Real Chromium, gunicorn and Redis."""

from __future__ import annotations

import re
import secrets
from typing import Any

import pytest
from console_pages import open_room_page, sign_in
from playwright.sync_api import Page, expect
from test_accessibility import assert_no_violations

from anteroom.engine import Engine
from anteroom.store.audit_log import AuditLog
from anteroom.store.keystore import KeyStore
from anteroom.web.manage import console_session
from helpers import make_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
# Every text the page paints on a canvas (the charts' axes and labels), kept for the test to read.
CANVAS_TEXTS = """
window.__painted = [];
const fillText = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
  window.__painted.push(String(text));
  return fillText.call(this, text, ...rest);
};
"""


def room_page(
    stack: Stack, new_context: Any, env: str = "web", **options: Any
) -> tuple[Page, Engine, str, str]:
    """A signed-in console on a new open room's page; (page, engine, room, key id)."""
    live, engine, _ = stack
    record, secret = KeyStore(engine.redis, engine.keys).create(env)
    room = make_room(engine, env=env, slug="drop-" + secrets.token_hex(4))
    engine.open(room)
    page = new_context(**options).new_page()
    return open_room_page(page, live, secret, room), engine, room, record.id


def test_sign_in_says_every_limit_of_the_session(stack: Stack, new_context: Any) -> None:
    live, _, _ = stack
    page = new_context().new_page()
    page.goto(f"{live.url}/console")
    text = page.locator("main p").first
    hours = console_session.MAX_SEC // 3600
    minutes = console_session.IDLE_SEC // 60
    expect(text).to_contain_text(f"{minutes} minutes unused")
    expect(text).to_contain_text(f"{hours} hours after signing in")


def test_the_first_draw_shows_the_chosen_span(stack: Stack, new_context: Any) -> None:
    page, _, _, _ = room_page(stack, new_context)
    figure = page.locator("#chart-line[data-points]")
    figure.wait_for(timeout=10_000)
    # Read at once: the next refresh is 5 s away. 15 minutes in 10 s steps is 90 points (an
    # hour would be 360).
    assert int(figure.get_attribute("data-points") or 0) <= 91
    expect(page.locator("#range")).to_have_value("900000")


def test_one_clock_everywhere_the_charts_axes_too(stack: Stack, new_context: Any) -> None:
    live, engine, _ = stack
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    room = make_room(engine, env="web", slug="drop-" + secrets.token_hex(4))
    engine.open(room)
    # Los Angeles: whatever the hour of the run, a 12-hour clock would say am or pm there.
    context = new_context(timezone_id="America/Los_Angeles")
    context.add_init_script(CANVAS_TEXTS)
    page = open_room_page(context.new_page(), live, secret, room)
    page.locator("#chart-line[data-points]").wait_for(timeout=10_000)
    painted: list[str] = page.evaluate("window.__painted")
    times = [t for t in painted if re.fullmatch(r"\d{2}:\d{2}", t)]
    assert times, painted
    assert not [t for t in painted if re.search(r"\d\s*(am|pm)\b", t, re.I)], painted
    # The chart's legend, under the cursor, says the same clock.
    page.locator("#chart-line .u-over").hover()
    legend = page.locator("#chart-line .u-legend .u-series").first.locator(".u-value")
    expect(legend).to_have_text(re.compile(r"^\d{1,2} \w{3} \d{4}, \d{2}:\d{2}(:\d{2})?$"))


def test_the_fairness_links_only_for_a_room_with_a_draw(stack: Stack, new_context: Any) -> None:
    page, engine, _, _ = room_page(stack, new_context)
    section = page.locator('section[aria-labelledby="fairness-h"]')
    expect(section).to_contain_text("no draw")
    expect(section.get_by_role("link")).to_have_count(0)
    # A room opening with a pre-queue has a draw, and the link opens its report.
    live, _, _ = stack
    drawn = make_room(engine, env="web", slug="drop-" + secrets.token_hex(4))
    engine.open(drawn, engine.stats(drawn).now_ms + 3_600_000)
    page.goto(f"{live.url}/console/rooms/{drawn}")
    link = page.locator("#fairness-json")
    expect(link).to_be_visible(timeout=10_000)
    reply = page.request.get(live.url + (link.get_attribute("href") or ""))
    assert reply.status == 200


def seed_audit(engine: Engine, env: str, room: str, me: str) -> None:
    """Entries as the management API writes them: a rate change, a pause, a French notice."""
    log = AuditLog(engine.redis, engine.keys)
    queue = engine.get_room(room)
    changes = {"ratePerMinute": {"before": 120, "after": 300}}
    log.record(env, "queue.updated", queue=queue, key_id=me, changes=changes)
    action = {"name": "pause", "opensAt": None}
    status = {"status": {"before": "open", "after": "paused"}}
    log.record(env, "queue.updated", queue=queue, key_id=me, changes=status, action=action)
    notice = {"notice": {"before": None, "after": {"*": "Sold out", "pt-BR": "Esgotado"}}}
    log.record(env, "queue.updated", queue=queue, key_id="k_other", changes=notice)


def test_the_audit_log_is_a_table_in_words(stack: Stack, new_context: Any) -> None:
    env = "audit" + secrets.token_hex(3)  # its own log: other tests' entries are not in it
    page, engine, room, me = room_page(stack, new_context, env, timezone_id="Asia/Tokyo")
    other = make_room(engine, env=env, slug="other-" + secrets.token_hex(4), name="Autumn drop")
    seed_audit(engine, env, room, me)
    AuditLog(engine.redis, engine.keys).record(
        env, "queue.deleted", queue=engine.get_room(other), key_id=me, changes={}
    )
    table = page.locator("table#audit")
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(3, timeout=10_000)  # this room's: the other is filtered out
    rate = rows.filter(has_text="Rate (per minute)")
    expect(rate).to_contain_text("Rate (per minute): 120 → 300")
    expect(rate).to_contain_text(f"key {me} (you)")
    expect(rate).to_contain_text("Spring drop")
    expect(rate.locator('td[data-label="When"]')).to_have_text(
        re.compile(r"^\d{1,2} \w{3} \d{4}, \d{2}:\d{2}$")
    )
    expect(rows.filter(has_text="Paused")).to_contain_text("Status: open → paused")
    notice = rows.filter(has_text="Notice")
    expect(notice).to_contain_text('Brazilian Portuguese (pt-BR): "Esgotado"')
    expect(table).not_to_contain_text("ratePerMinute")
    expect(table).not_to_contain_text("{")
    # Filtered by action, then every room.
    page.get_by_label("Action", exact=True).select_option("Paused")
    expect(rows).to_have_count(1)
    page.get_by_label("Action", exact=True).select_option("")
    page.get_by_label("Room", exact=True).select_option("")
    expect(rows).to_have_count(4)
    expect(rows.filter(has_text="Deleted the room")).to_contain_text("Autumn drop")
    assert_no_violations(page, "console room page with its audit log, desktop")


def test_the_audit_log_fits_a_phone(stack: Stack, new_context: Any) -> None:
    live, engine, _ = stack
    env = "audit" + secrets.token_hex(3)
    record, secret = KeyStore(engine.redis, engine.keys).create(env)
    room = make_room(engine, env=env, slug="drop-" + secrets.token_hex(4))
    engine.open(room)
    seed_audit(engine, env, room, record.id)
    # What a phone cannot break at spaces: a long text, and a theme with a long logo address.
    long_text = {"*": "Sizes S and M are sold out; " * 6, "fr": "Épuisé-" * 20}
    logo = "https://cdn.shop.example/brand/" + "a1b2c3d4" * 12 + "/logo.png"
    theme = {"accentColor": "#2a5bd7", "backgroundColor": "#ffffff", "logoUrl": logo}
    for changes in (
        {"notice": {"before": None, "after": long_text}},
        {"theme": {"before": None, "after": theme}},
    ):
        AuditLog(engine.redis, engine.keys).record(
            env, "queue.updated", queue=engine.get_room(room), key_id=record.id, changes=changes
        )
    page = new_context(viewport={"width": 360, "height": 740}).new_page()
    sign_in(page, live, secret)
    expect(page.locator("table#audit tbody tr")).to_have_count(5, timeout=10_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    assert_no_violations(page, "console rooms list with its audit log, 360 px")
    page.goto(f"{live.url}/console/rooms/{room}")
    expect(page.locator("table#audit tbody tr")).to_have_count(5, timeout=10_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    assert_no_violations(page, "console room page with its audit log, 360 px")
