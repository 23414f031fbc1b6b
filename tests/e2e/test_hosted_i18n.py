"""The hosted page's languages, branding, notices and call-back in real headless Chromium,
against a real server (gunicorn, 4 workers) and Redis. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, expect

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from anteroom.web.pages import page_languages as languages
from helpers import make_room, waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
PHONE = {"width": 360, "height": 740}
SCREENSHOTS = ("en", "de", "ja", "ar")
# What no rendered page may show: a catalog key instead of its text ("status.waiting").
KEY_SHOWN = re.compile(
    r"\b(page|status|error|eta|opens|title|notfound|badkey|unavailable)\.[a-zA-Z]+"
)
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const element of document.querySelectorAll("body *")) {
    const box = element.getBoundingClientRect();
    const outside = box.right > width + 0.5 || box.left < -0.5;
    if (box.width && outside) out.push(element.id || element.tagName);
  }
  return {scroll: document.documentElement.scrollWidth, width, out};
}"""


def room_url(live: LiveServer, slug: str, api_key: str, query: str = "") -> str:
    return f"{live.url}/queue/{slug}?key={api_key}{query}"


def operator(stack: Stack, redis_client: Any) -> tuple[str, dict[str, str]]:
    """The management API's base URL and a secret key's header, for the test's environment."""
    live, engine, _ = stack
    secret = KeyStore(redis_client, engine.keys).create("web")[1]
    return f"{live.url}/api/management/v1", {"Authorization": f"Bearer {secret}"}


def polls(page: Page) -> list[int]:
    """Counts the page's finished polls (a list, so the count is read live)."""
    done = [0]
    page.on("requestfinished", lambda r: done.__setitem__(0, done[0] + ("/queue/poll" in r.url)))
    return done


def test_every_language_renders_whole_at_360_by_740(
    stack: Stack, new_context: Any, artifacts: Path
) -> None:
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=1234)
    for number, lang in enumerate(languages.LANGUAGES):
        page = new_context(viewport=PHONE).new_page()
        page.goto(room_url(live, slug, api_key, f"&lang={lang}"))
        expect(page.locator("#anteroom")).to_have_attribute("data-state", "waiting", timeout=20_000)
        position = 1235 + number  # one more visitor in line for each language
        shown = page.evaluate(
            "(n) => new Intl.NumberFormat(document.documentElement.lang).format(n)", position
        )
        expect(page.locator("#position")).to_have_text(shown)
        expect(page.locator("#ahead")).not_to_be_empty()
        assert page.evaluate("() => document.documentElement.lang") == lang
        direction = page.evaluate("() => getComputedStyle(document.body).direction")
        assert direction == ("rtl" if lang == "ar" else "ltr"), lang
        text = page.locator("body").inner_text()
        assert not KEY_SHOWN.search(text), (lang, KEY_SHOWN.search(text))
        assert page.title() == languages.translate(lang, "page.title", room="Spring drop")
        layout = page.evaluate(OVERFLOW)
        assert layout["scroll"] <= PHONE["width"] and layout["out"] == [], (lang, layout)
        if lang in SCREENSHOTS:
            path = artifacts / f"hosted-{lang}-{PHONE['width']}x{PHONE['height']}.png"
            page.screenshot(path=str(path), full_page=True)
        page.context.close()
    for lang in SCREENSHOTS:
        assert (artifacts / f"hosted-{lang}-360x740.png").stat().st_size > 5_000


def test_numbers_and_plurals_per_locale(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=1234)
    context = new_context()
    # Arabic's digits are the browser's ICU's choice (Arabic-Indic or Latin): read from it.
    ar = context.new_page().evaluate(
        "() => [1235, 1234].map((n) => new Intl.NumberFormat('ar').format(n))"
    )
    expected = {
        "en": ("1,235", "1,234 people ahead of you"),
        "de": ("1.235", "1.234 Personen vor Ihnen"),
        "ja": ("1,235", "あなたの前に 1,234 人"),
        "ar": (ar[0], f"{ar[1]} شخصًا أمامك"),  # 1234: Arabic's "many" (n % 100 in 11..99)
    }
    for lang, (position, ahead) in expected.items():
        page = context.new_page()  # one browser: one ticket, the same place in every language
        page.goto(room_url(live, slug, api_key, f"&lang={lang}"))
        expect(page.locator("#position")).to_have_text(position, timeout=20_000)
        expect(page.locator("#ahead")).to_have_text(ahead)
        page.close()
    _, near = waiting_room(engine, live.url, ahead=2)
    page = context.new_page()
    page.goto(room_url(live, near, api_key, "&lang=pl"))
    expect(page.locator("#ahead")).to_have_text("2 osoby przed Tobą", timeout=20_000)
    page.goto(room_url(live, near, api_key, "&lang=ar"))
    expect(page.locator("#ahead")).to_have_text("شخصان أمامك", timeout=20_000)


def test_accept_language_chooses_and_lang_and_the_switcher_override(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=4)
    german = new_context(locale="de-AT")  # Accept-Language: de-AT
    page = german.new_page()
    page.goto(room_url(live, slug, api_key))
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.locator("#position")).to_have_text("5", timeout=20_000)
    expect(page.locator(".figure-position .label")).to_have_text("Ihr Platz in der Schlange")
    page.goto(room_url(live, slug, api_key, "&lang=ja"))
    expect(page.locator("html")).to_have_attribute("lang", "ja")
    expect(page.locator("#status-text")).to_contain_text("5 番目", timeout=20_000)
    # The switcher: a plain GET form that keeps the key, and the visitor keeps their place.
    page.select_option("#lang", "ar")
    page.locator(".languages button").click()
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    five = page.evaluate("() => new Intl.NumberFormat('ar').format(5)")
    expect(page.locator("#position")).to_have_text(five, timeout=20_000)
    assert "lang=ar" in page.url and f"key={api_key}" in page.url


def test_opening_time_in_the_visitors_own_time_zone(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    slug = "soon-" + secrets.token_hex(4)
    room = make_room(engine, env="web", slug=slug, redirectUrl=f"{live.url}/healthz")
    opens_at = engine.stats(room).now_ms + 12 * 60_000 + 34_500
    engine.open(room, opens_at)
    page = new_context(timezone_id="Asia/Tokyo").new_page()
    page.goto(room_url(live, slug, api_key, "&lang=ja"))
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "prequeue", timeout=20_000)
    tokyo, utc = page.evaluate(
        """(at) => ["Asia/Tokyo", "UTC"].map((timeZone) =>
             new Intl.DateTimeFormat("ja", {timeStyle: "short", timeZone}).format(at))""",
        opens_at,
    )
    assert tokyo != utc
    expect(page.locator("#opens-at")).to_have_text(f"{tokyo} に開始")
    # The countdown says it once (not again as the ETA: there is no wait to estimate yet).
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^1[12]:\d\d$"))
    expect(page.locator("#eta")).to_be_hidden()


def test_a_theme_is_applied_and_an_unreadable_one_refused(
    stack: Stack, new_context: Any, redis_client: Any, artifacts: Path
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url)
    api, auth = operator(stack, redis_client)
    unreadable = {"accentColor": "#9a9a9a", "backgroundColor": "#a0a0a0"}
    refused = requests.patch(f"{api}/queues/{room}", json={"theme": unreadable}, headers=auth)
    assert refused.status_code == 400 and "contrast" in refused.json()["fields"]["theme"]
    theme = {
        "accentColor": "#0b3d91",
        "backgroundColor": "#fff3d6",
        "title": "Spring <drop> at Shop",
        "logoUrl": "https://cdn.brand.example/logo.png",
    }
    applied = requests.patch(f"{api}/queues/{room}", json={"theme": theme}, headers=auth)
    assert applied.status_code == 200, applied.text
    page = new_context(viewport=PHONE).new_page()
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security" in m.text else None)
    # The PATCH went to one worker; another may serve the page before its copy of the room
    # moves (within ~0.2 s, room_directory.CHANGE_CHECK_SEC): a page loaded again soon has it.
    logo_source = "img-src 'self' data: https://cdn.brand.example;"
    deadline = time.monotonic() + 5
    while True:
        response = page.goto(room_url(live, slug, api_key))
        assert response is not None
        policy = response.headers["content-security-policy"]
        if logo_source in policy or time.monotonic() > deadline:
            break
    assert logo_source in policy
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "waiting", timeout=20_000)
    expect(page.locator("h1")).to_have_text("Spring <drop> at Shop")
    logo = page.locator("img.logo")
    expect(logo).to_have_attribute("alt", "Spring <drop> at Shop logo")
    assert logo.bounding_box() is not None and logo.bounding_box()["width"] == 160  # type: ignore[index]
    colours = page.evaluate(
        """() => [getComputedStyle(document.body).backgroundColor,
                  getComputedStyle(document.querySelector("progress")).accentColor,
                  getComputedStyle(document.body).color]"""
    )
    assert colours == ["rgb(255, 243, 214)", "rgb(11, 61, 145)", "rgb(17, 17, 17)"]
    assert blocked == [], blocked  # the theme needed no exception to the CSP
    page.screenshot(path=str(artifacts / "hosted-themed-360x740.png"), full_page=True)


def test_a_notice_set_through_the_api_appears_on_an_open_page_within_one_poll(
    stack: Stack, new_context: Any, redis_client: Any
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=20)  # 21st: a poll every 2.5 s
    api, auth = operator(stack, redis_client)
    page = new_context().new_page()
    done = polls(page)
    page.goto(room_url(live, slug, api_key, "&lang=fr"))
    expect(page.locator("#position")).to_have_text("21", timeout=20_000)
    expect(page.locator(".notice")).to_be_hidden()
    notice = {"en": "Sizes S and M are sold out.", "fr": "Les tailles S et M sont épuisées."}
    changed = requests.patch(f"{api}/queues/{room}", json={"notice": notice}, headers=auth)
    assert changed.status_code == 200
    before = done[0]
    # Room settings are cached two seconds per worker: the first poll after that carries it.
    expect(page.locator("#notice")).to_have_text(notice["fr"], timeout=8_000)
    assert done[0] - before <= 2, done[0] - before
    expect(page.locator(".notice")).to_be_visible()
    expect(page.locator("#announce")).to_contain_text(notice["fr"])


def test_a_closed_room_shows_its_message(stack: Stack, new_context: Any, redis_client: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=3)
    api, auth = operator(stack, redis_client)
    message = {"en": "Sold out — thank you for waiting", "de": "Ausverkauft — danke fürs Warten"}
    requests.patch(f"{api}/queues/{room}", json={"closedMessage": message}, headers=auth)
    page = new_context().new_page()
    page.goto(room_url(live, slug, api_key, "&lang=de"))
    expect(page.locator("#position")).to_have_text("4", timeout=20_000)
    closed = requests.patch(f"{api}/queues/{room}", json={"action": "close"}, headers=auth)
    assert closed.status_code == 200
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "idle", timeout=15_000)
    expect(page.locator("#status-text")).to_have_text(message["de"])


HIDDEN_TAB = """
(() => {
  let state = "hidden";
  const define = (name, get) =>
    Object.defineProperty(Document.prototype, name, {get, configurable: true});
  define("visibilityState", () => state);
  define("hidden", () => state === "hidden");
  window.__show = () => {
    state = "visible";
    document.dispatchEvent(new Event("visibilitychange"));
  };
})();
"""


def test_a_background_tab_is_called_back_at_the_front_and_on_admission(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ratePerMinute=60, admissionTtlSec=30, ahead=1)
    context = new_context()
    context.add_init_script(HIDDEN_TAB)  # Chromium's headless tabs are always "visible"
    page = context.new_page()
    page.goto(room_url(live, slug, api_key))
    expect(page.locator("#position")).to_have_text("2", timeout=20_000)
    expect(page).to_have_title("Almost your turn · Spring drop")
    expect(page.locator("#favicon")).to_have_attribute("href", "/static/favicon-turn.svg")
    engine.shift_clock(room, 1_000)  # one admission earned: the visitor ahead goes in
    expect(page.locator("#position")).to_have_text("1", timeout=10_000)
    engine.shift_clock(room, 1_000)  # and the next one is ours
    expect(page).to_have_title("Your turn! · Spring drop", timeout=20_000)
    # 30 s of admission would run out unseen: the page holds it until the tab is seen.
    page.wait_for_timeout(1_500)
    assert "/healthz" not in page.url
    page.evaluate("() => window.__show()")
    page.wait_for_url(re.compile(r"/healthz\?from=queue&abq="), timeout=10_000)
