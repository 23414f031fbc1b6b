"""JSON request logs (never a token or a key) and the front door, through the real app."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.service_container import Services
from anteroom.web.app_factory import close_app, create_app
from anteroom.web.serving import request_log
from helpers import open_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def json_app(settings: Settings, redis_client: object) -> Iterator[tuple[Flask, Lines]]:
    app = create_app(settings.with_overrides(log_format="json"), {"TESTING": True})
    lines = Lines()
    request_log.log.addHandler(lines)
    yield app, lines
    request_log.log.removeHandler(lines)
    close_app(app)


def test_one_json_line_per_request_without_secrets(json_app: tuple[Flask, Lines]) -> None:
    app, lines = json_app
    services: Services = app.extensions["anteroom"]
    client = app.test_client()
    record, secret = services.keystore.create("shop")
    room = open_room(services.engine, env="shop", slug="drop")
    visitor = Visitor(client, record.public_key)
    visitor.identify()
    visitor.enter("drop")
    visitor.poll()
    client.get(f"/api/management/v1/queues/{room}", headers={"Authorization": f"Bearer {secret}"})
    client.get("/queue/drop?key=" + record.public_key + "&return=https://x.example/?abq=tok")
    parsed = [json.loads(line) for line in lines.lines]
    assert [p["route"] for p in parsed] == [
        "/api/v1/challenge", "/api/v1/identify", "/api/v1/queue/enter", "/api/v1/queue/poll",
        "/api/management/v1/queues/<room_id>", "/queue/<slug>",
    ]  # fmt: skip
    enter, poll, manage, page = parsed[2], parsed[3], parsed[4], parsed[5]
    assert poll["room"] == room  # named by the ticket the poll carries
    assert enter["room"] == "drop" and enter["status"] == 200 and enter["method"] == "POST"
    assert manage["room"] == room and page["room"] == "drop"
    assert all(isinstance(p["latencyMs"], float) and p["instance"] for p in parsed)
    text = "\n".join(lines.lines)
    for secret_value in (secret, record.public_key, visitor.session, "abq"):
        assert secret_value and secret_value not in text


def test_human_readable_by_default_and_a_bad_format_refused(
    client: FlaskClient, settings: Settings
) -> None:
    assert not any(isinstance(h, Lines) for h in request_log.log.handlers)
    with pytest.raises(ValueError, match="ANTEROOM_LOG_FORMAT"):
        create_app(settings.with_overrides(log_format="xml"))


def test_front_door_links_everything_and_never_a_secret(
    settings: Settings, redis_client: object
) -> None:
    app = create_app(settings.with_overrides(demo=True), {"TESTING": True})
    try:
        services: Services = app.extensions["anteroom"]
        _, secret = services.keystore.create("demo")
        open_room(services.engine, env="demo", slug="demo")
        page = app.test_client().get("/")
        html = page.get_data(as_text=True)
        assert page.status_code == 200 and page.mimetype == "text/html"
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        for link in ('href="/console"', 'href="/queue/demo?key=pk_demo"', 'href="/docs"',
                     'href="/api/openapi.json"', 'href="/healthz"', 'href="/readyz"'):  # fmt: skip
            assert link in html
        assert (
            "printed in the terminal" in html
            and secret not in html
            and "sk_" not in html.replace("sk_…", "")
        )
    finally:
        close_app(app)


def test_front_door_outside_demo_mode_lists_no_demo(client: FlaskClient) -> None:
    html = client.get("/").get_data(as_text=True)
    assert 'href="/console"' in html and "pk_demo" not in html and "demo-hint" not in html


def test_the_api_reference_page_is_drawn_from_the_document_by_a_bundled_renderer(
    client: FlaskClient,
) -> None:
    page = client.get("/docs")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    csp = page.headers["Content-Security-Policy"]
    assert csp.startswith("default-src 'none'; script-src 'self'; style-src 'self'")
    assert 'data-document="/api/openapi.json"' in html
    assert 'src="/static/api-reference.js"' in html and "<script>" not in html
    # tests/e2e/test_api_reference.py opens it in Chromium and reads the PATCH fields.
