"""The hosted page's HTML, its security headers, and the demo storefront."""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.ops.demo_seed import ensure_demo
from anteroom.service_container import Services
from anteroom.web.app_factory import create_app
from anteroom.web.pages import page_languages as languages
from helpers import make_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis


@pytest.fixture
def api_key(services: Services) -> str:
    return services.keystore.create("shop")[0].public_key


def test_hosted_page_escapes_and_locks_down(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    name = '<script>alert("x")</script> & "Drop"'
    make_room(services.engine, env="shop", slug="drop", name=name)
    response = client.get(f"/queue/drop?key={api_key}")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self' 'wasm-unsafe-eval';" in csp and "worker-src blob:" in csp
    # WebAssembly may compile (the proof-of-work search); no inline script nor JS eval may run.
    assert "unsafe-inline" not in csp and "'unsafe-eval'" not in csp
    assert "<script>" not in html.replace('<script src="/static/hosted.js" defer></script>', "")
    assert 'aria-live="polite"' in html and 'name="viewport"' in html
    # The line is never indexed in the shop's place, whoever crawls it.
    assert response.headers["X-Robots-Tag"] == "noindex"
    plain = client.get(f"/queue/drop/plain?key={api_key}")
    assert plain.status_code == 200 and plain.headers["X-Robots-Tag"] == "noindex"


@pytest.mark.parametrize(
    ("path", "status"),
    [("/queue/drop?key=pk_unknown", 401), ("/queue/drop", 401), ("/queue/nowhere?key={k}", 404)],
)
def test_hosted_page_errors(
    client: FlaskClient, services: Services, api_key: str, path: str, status: int
) -> None:
    make_room(services.engine, env="shop", slug="drop")
    response = client.get(path.format(k=api_key))
    assert response.status_code == status
    assert response.mimetype == "text/html" and "<h1>" in response.get_data(as_text=True)


@pytest.mark.parametrize(
    ("candidate", "kept"),
    [
        ("https://shop.example/cart?item=3", True),
        ("https://shop.example:443/x", False),  # another port is another origin
        ("https://evil.example/cart", False),
        ("//evil.example/cart", False),
        ("/cart", False),
        ("javascript:alert(1)", False),
        ("http://shop.example/cart", False),
        ("https://shop.example.evil.example/", False),
        ("https://user@evil.example@shop.example/", False),
    ],
)
def test_return_url_only_on_the_rooms_origin(
    client: FlaskClient, services: Services, api_key: str, candidate: str, kept: bool
) -> None:
    make_room(services.engine, env="shop", slug="drop", redirectUrl="https://shop.example/done")
    response = client.get("/queue/drop", query_string={"key": api_key, "return": candidate})
    html = response.get_data(as_text=True)
    if kept:
        assert 'data-return-url="https://shop.example/cart?item=3"' in html
    else:
        assert 'data-return-url=""' in html


@pytest.fixture
def demo_client(settings: Settings, redis_client: object) -> FlaskClient:
    app = create_app(settings.with_overrides(demo=True))
    ensure_demo(app.extensions["anteroom"].engine, "http://127.0.0.1:8000")
    return app.test_client()


def test_demo_shop_and_checkout(demo_client: FlaskClient) -> None:
    shop = demo_client.get("/demo/shop").get_data(as_text=True)
    assert '<script src="/static/anteroom.js"></script>' in shop
    # The checkout is behind anteroom.edge: opened directly, it sends the browser to the queue.
    navigate = {"Accept": "text/html", "Sec-Fetch-Mode": "navigate"}
    direct = demo_client.get("/demo/checkout", headers=navigate)
    assert direct.status_code == 303
    assert direct.headers["Location"].startswith("http://127.0.0.1:8000/queue/demo?key=pk_demo&")
    forged = demo_client.get("/demo/checkout?abq=ab1.k1.x.y", headers=navigate)
    assert forged.status_code == 303 and "Set-Cookie" not in forged.headers
    services: Services = demo_client.application.extensions["anteroom"]
    room = services.engine.room_id("demo", "demo") or ""
    services.engine.shift_clock(room, 2_000)
    token = Visitor(demo_client, "pk_demo").enter("demo").json["token"]
    handed = demo_client.get("/demo/checkout", query_string={"abq": token}, headers=navigate)
    assert handed.status_code == 307 and handed.headers["Location"].endswith("/demo/checkout")
    checkout = demo_client.get("/demo/checkout", headers=navigate)  # with the _abq cookie now
    assert checkout.status_code == 200 and "You're in" in checkout.get_data(as_text=True)


def test_demo_pages_only_in_demo_mode(client: FlaskClient) -> None:
    assert client.get("/demo/shop").status_code == 404


@pytest.mark.parametrize(
    ("query", "accept", "lang", "text"),
    [
        ("", "de-DE,de;q=0.9,en;q=0.5", "de", "Ihr Platz in der Schlange"),
        ("&lang=ja", "de-DE,de;q=0.9", "ja", "列でのあなたの順番"),
        ("", "ar-EG", "ar", "مكانك في الطابور"),
        ("", "sv-SE", "en", "Your place in line"),
        ("&lang=xx", "fr-CA", "fr", "Votre place dans la file"),
    ],
)
def test_hosted_page_speaks_the_visitors_language(
    client: FlaskClient, services: Services, api_key: str, query: str, accept: str, lang: str,
    text: str,
) -> None:  # fmt: skip
    make_room(services.engine, env="shop", slug="drop", name="Spring <drop>")
    response = client.get(f"/queue/drop?key={api_key}{query}", headers={"Accept-Language": accept})
    html = response.get_data(as_text=True)
    assert f'<html lang="{lang}" dir="{"rtl" if lang == "ar" else "ltr"}">' in html
    assert text in html and 'data-lang="' + lang + '"' in html
    # The script gets the same catalog, embedded as JSON it can parse.
    embedded = html.split('<script type="application/json" id="anteroom-i18n">', 1)[1]
    catalog = json.loads(embedded.split("</script>", 1)[0])
    assert catalog == languages.catalog(lang)
    # The switcher keeps the key and offers every language, the current one selected.
    assert f'<option value="{lang}" lang="{lang}" selected>' in html
    assert html.count("<option ") == len(languages.LANGUAGES)
    assert f'name="key" value="{api_key}"' in html


def test_error_pages_speak_the_visitors_language(client: FlaskClient, services: Services) -> None:
    response = client.get("/queue/drop?key=pk_nope&lang=es")
    assert response.status_code == 401
    html = response.get_data(as_text=True)
    assert '<html lang="es"' in html and "Clave desconocida" in html


def test_an_unknown_path_is_a_page_for_a_browser_and_json_for_an_api_client(
    client: FlaskClient,
) -> None:
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    page = client.get("/no-such-page", headers={"Accept": browser, "Accept-Language": "de"})
    html = page.get_data(as_text=True)
    assert page.status_code == 404 and page.mimetype == "text/html"
    assert "script-src" in page.headers["Content-Security-Policy"]
    assert 'data-error="NotFound"' in html and 'lang="de"' in html and 'href="/"' in html
    # API clients (no Accept, JSON, or anything under /api/) keep the JSON error.
    for path, accept in (
        ("/no-such-page", None),
        ("/no-such-page", "application/json"),
        ("/api/v1/nothing", browser),
    ):
        answer = client.get(path, headers={"Accept": accept} if accept else {})
        assert answer.status_code == 404 and answer.json == {
            "error": "NotFound",
            "message": "Nothing here.",
        }, (path, accept)


def test_the_favicon_is_served(client: FlaskClient) -> None:
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.mimetype == "image/svg+xml"
    assert b"<svg" in icon.data


def test_the_front_door_title_names_the_product_once(client: FlaskClient) -> None:
    html = client.get("/").get_data(as_text=True)
    assert "<title>Anteroom</title>" in html
