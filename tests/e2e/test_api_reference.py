"""The API reference at /docs in real headless Chromium: drawn from /api/openapi.json under the
page's strict CSP by the bundled Swagger UI, nothing fetched from elsewhere."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_the_reference_shows_the_patch_body_fields_and_keeps_the_apis_apart(
    live: LiveServer, new_context: Any
) -> None:
    page = new_context().new_page()
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if m.type == "error" else None)
    elsewhere: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(live.url) else elsewhere.append(r.url))
    page.goto(f"{live.url}/docs")

    # The visitor and the management APIs are sections of their own.
    for tag in ("visitor", "management"):
        expect(page.locator(f"h3#operations-tag-{tag}")).to_be_visible()
    visitor = page.locator(".opblock-tag-section", has=page.locator("#operations-tag-visitor"))
    expect(visitor.locator(".opblock-summary-path", has_text="/api/v1/queue/enter")).to_be_visible()
    expect(visitor.locator(".opblock-summary-path", has_text="/api/management")).to_have_count(0)

    # The PATCH of a room: its request body's fields, their types and limits, and an example.
    patch = page.locator(".opblock-patch", has_text="/api/management/v1/queues/{id}").first
    patch.locator(".opblock-summary").click()
    body = patch.locator(".opblock-section-request-body")
    expect(body).to_be_visible()
    body.get_by_role("tab", name="Schema").click()
    fields = body.locator(".json-schema-2020-12-property")
    for field in ("action", "notice", "theme", "holdScore", "closedMessage"):
        title = fields.locator(".json-schema-2020-12__title").get_by_text(field, exact=True)
        expect(title.first).to_be_visible()
    rate = fields.filter(has=page.get_by_text("ratePerMinute", exact=True)).first
    expect(rate).to_contain_text("integer")
    expect(rate).to_contain_text("[1, 100000]")  # its limits
    body.get_by_role("tab", name="Example Value").click()
    expect(body.locator(".highlight-code, .microlight").first).to_contain_text('"ratePerMinute"')
    # Every answer, errors too.
    for status in ("200", "400", "401", "403", "404"):
        expect(patch.locator(f"tr.response[data-code='{status}']")).to_have_count(1)

    assert not [m for m in refused if "Content Security Policy" in m], refused
    assert not elsewhere, elsewhere
