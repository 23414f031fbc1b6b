"""A room's branding on its hosted page: the theme's checks, the page it makes (logo, colours,
title, a CSP widened for that room's logo only) and an operator's own page template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.service_container import Services
from anteroom.web.app_factory import create_app

pytestmark = pytest.mark.redis

BASE = "/api/management/v1"
ROOM = {"slug": "spring-drop", "name": "Spring drop", "redirectUrl": "https://shop.example/co"}
THEME = {
    "logoUrl": "https://cdn.brand.example:8443/logo.png?v=2&size=l",
    "accentColor": "#0b3d91",
    "backgroundColor": "#fff8e7",
    "title": 'Spring <b>"drop"</b>',
}


@pytest.fixture
def keys(services: Services) -> tuple[str, dict[str, str]]:
    record, secret = services.keystore.create("prod")
    return record.public_key, {"Authorization": f"Bearer {secret}"}


def create(client: FlaskClient, auth: dict[str, str], **config: Any) -> Any:
    return client.post(f"{BASE}/queues", json=ROOM | config, headers=auth)


def test_a_theme_brands_that_rooms_page_only(
    client: FlaskClient, keys: tuple[str, dict[str, str]]
) -> None:
    pk, auth = keys
    created = create(client, auth, theme=THEME)
    assert created.status_code == 201 and created.json["theme"] == THEME
    create(client, auth, slug="plain-drop")
    page = client.get(f"/queue/spring-drop?key={pk}")
    html = page.get_data(as_text=True)
    # Title escaped, in the heading and the document title, instead of the room's name.
    assert '<h1 id="room-name">Spring &lt;b&gt;&#34;drop&#34;&lt;/b&gt;</h1>' in html
    assert "<title>Spring &lt;b&gt;&#34;drop&#34;&lt;/b&gt; · waiting room</title>" in html
    assert 'data-room-name="Spring &lt;b&gt;&#34;drop&#34;&lt;/b&gt;"' in html
    assert "Spring drop" not in html
    # The logo: fixed size, alt text, its URL escaped; its origin (only) joins img-src.
    assert (
        '<img class="logo" src="https://cdn.brand.example:8443/logo.png?v=2&amp;size=l" '
        'alt="Spring &lt;b&gt;&#34;drop&#34;&lt;/b&gt; logo" width="160" height="48">'
    ) in html
    csp = page.headers["Content-Security-Policy"]
    assert "img-src 'self' data: https://cdn.brand.example:8443;" in csp
    assert "script-src 'self' 'wasm-unsafe-eval';" in csp and "style-src 'self';" in csp
    assert "unsafe-inline" not in csp and "'unsafe-eval'" not in csp
    # The colours come from a stylesheet of our own origin (no inline style under the CSP).
    link = html.split('<link rel="stylesheet" href="/queue/spring-drop/theme.css?', 1)[1]
    css = client.get("/queue/spring-drop/theme.css?" + link.split('"', 1)[0].replace("&amp;", "&"))
    assert css.status_code == 200 and css.mimetype == "text/css"
    text = css.get_data(as_text=True)
    assert "--accent: #0b3d91" in text and "--bg: #fff8e7" in text and "--ink: #111111" in text
    # Another room of the same environment is untouched.
    plain = client.get(f"/queue/plain-drop?key={pk}")
    assert "theme.css" not in plain.get_data(as_text=True) and 'class="logo"' not in plain.text
    assert "img-src 'self' data:;" in plain.headers["Content-Security-Policy"]


def test_a_dark_background_gets_white_text(
    client: FlaskClient, keys: tuple[str, dict[str, str]]
) -> None:
    pk, auth = keys
    create(client, auth, theme={"accentColor": "#ffd166", "backgroundColor": "#101820"})
    html = client.get(f"/queue/spring-drop?key={pk}").get_data(as_text=True)
    href = html.split('href="/queue/spring-drop/theme.css?', 1)[1].split('"', 1)[0]
    text = client.get("/queue/spring-drop/theme.css?" + href.replace("&amp;", "&")).text
    assert "--ink: #ffffff" in text and "color-scheme: dark" in text
    assert "--on-accent: #111111" in text  # dark text on the yellow buttons


@pytest.mark.parametrize(
    ("theme", "why"),
    [
        ({"accentColor": "#777777", "backgroundColor": "#808080"}, "contrast of 1.13:1"),
        ({"accentColor": "#ffee00"}, "on backgroundColor #ffffff has a contrast"),
        ({"backgroundColor": "#2a5bd7"}, "accentColor #2a5bd7 on backgroundColor #2a5bd7"),
        ({"accentColor": "red"}, "accentColor: must be a colour"),
        ({"accentColor": "#0b3d91; background: url(x)"}, "accentColor: must be a colour"),
        ({"logoUrl": "http://cdn.example/logo.png"}, "logoUrl: must be an absolute https URL"),
        ({"logoUrl": "javascript:alert(1)"}, "logoUrl: must be an absolute https URL"),
        ({"logoUrl": "https://user:pw@cdn.example/l.png"}, "logoUrl: must be an absolute https"),
        ({"logoUrl": "https://cdn.example/l.png' onerror='x"}, "logoUrl: must be an absolute"),
        ({"logoUrl": "https://cdn.example;script-src*/l.png"}, "logoUrl: must be an https URL"),
        ({"logoUrl": "https://cdn.example:0/l.png"}, "logoUrl: must be an https URL with a port"),
        ({"title": ""}, "title: must be a string of 1 to 200 characters"),
        ({"font": "Comic Sans"}, "font: unknown field"),
        ({}, "must be an object of logoUrl"),
        ("dark", "must be an object of logoUrl"),
    ],
)
def test_a_bad_or_unreadable_theme_is_refused(
    client: FlaskClient, keys: tuple[str, dict[str, str]], theme: Any, why: str
) -> None:
    _, auth = keys
    refused = create(client, auth, theme=theme)
    assert refused.status_code == 400
    assert why in refused.json["fields"]["theme"], refused.json
    room = create(client, auth).json
    patched = client.patch(f"{BASE}/queues/{room['id']}", json={"theme": theme}, headers=auth)
    assert patched.status_code == 400 and why in patched.json["fields"]["theme"]


def test_a_theme_change_is_audited_and_null_removes_it(
    client: FlaskClient, keys: tuple[str, dict[str, str]]
) -> None:
    pk, auth = keys
    room = create(client, auth).json
    url = f"{BASE}/queues/{room['id']}"
    assert client.patch(url, json={"theme": THEME}, headers=auth).json["theme"] == THEME
    assert client.patch(url, json={"theme": None}, headers=auth).json["theme"] is None
    events = client.get(f"{BASE}/audit", headers=auth).json["events"]
    assert [e["changes"]["theme"] for e in events[:2]] == [
        {"before": THEME, "after": None},
        {"before": None, "after": THEME},
    ]
    assert 'class="logo"' not in client.get(f"/queue/spring-drop?key={pk}").text


def test_theme_css_of_an_unknown_room_or_key_is_404(
    client: FlaskClient, keys: tuple[str, dict[str, str]]
) -> None:
    pk, _ = keys
    assert client.get(f"/queue/nowhere/theme.css?key={pk}").status_code == 404
    assert client.get("/queue/nowhere/theme.css?key=pk_nope").status_code == 404


def test_an_operators_template_replaces_the_page_and_keeps_the_csp(
    settings: Settings, redis_client: redis.Redis, tmp_path: Path
) -> None:
    folder = tmp_path / "brand"
    folder.mkdir()
    (folder / "queue.html").write_text(
        '{% extends "anteroom/queue.html" %}\n'
        "{% block header %}<header class=\"brand\">{{ title }} — {{ t('page.eyebrow') }}"
        "</header>{% endblock %}\n"
        '{% block footer %}<p class="brand-footer">{{ lang }}/{{ dir }}</p>{% endblock %}\n',
        encoding="utf-8",
    )
    app = create_app(settings.with_overrides(templates_dir=str(folder)))
    services: Services = app.extensions["anteroom"]
    pk = services.keystore.create("prod")[0].public_key
    services.engine.create_room("prod", ROOM | {"name": "<Spring>"})
    page = app.test_client().get(f"/queue/spring-drop?key={pk}&lang=de")
    html = page.get_data(as_text=True)
    assert '<header class="brand">&lt;Spring&gt; — Warteraum</header>' in html
    assert '<p class="brand-footer">de/ltr</p>' in html
    assert 'id="status-text"' in html and "hosted.js" in html  # the rest of the page stays
    assert "script-src 'self' 'wasm-unsafe-eval';" in page.headers["Content-Security-Policy"]
    with pytest.raises(ValueError, match="ANTEROOM_TEMPLATES_DIR"):
        create_app(settings.with_overrides(templates_dir=str(tmp_path / "missing")))
