"""WCAG 2.2 AA conformance checked by axe-core (the npm package) in Debian's Chromium: the hosted
waiting page in each state it shows, in English, Japanese and Arabic (right to left), the page
without JavaScript, the fairness report and the operator console, against a real gunicorn and
Redis; and the documentation site, built and served, at a desktop's and a phone's width.
docs/accessibility.md reports what this covers and what was checked by hand."""

from __future__ import annotations

import functools
import http.server
import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from console_pages import sign_in
from playwright.sync_api import Page, Route, expect

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import make_room, waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.0, 2.1 and 2.2 at levels A and AA: what the report claims, nothing more.
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
LANGUAGES = ("en", "ja", "ar")
RUN = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: tags}});
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    targets: v.nodes.map((n) => n.target.join(" ")),
  }));
}"""


def violations(page: Page, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it stands (injected through the debugging protocol,
    so the page's own Content-Security-Policy stays in force), but for the rules in ``skip``."""
    if not page.evaluate("() => typeof axe === 'object'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    return [v for v in page.evaluate(RUN, TAGS) if v["id"] not in skip]


def assert_no_violations(page: Page, what: str, skip: tuple[str, ...] = ()) -> None:
    found = violations(page, skip)
    report = "\n".join(
        f"  {v['id']} ({v['impact']}): {v['help']}\n    " + "\n    ".join(v["targets"])
        for v in found
    )
    assert not found, f"{what}: {len(found)} WCAG 2.2 AA violation(s)\n{report}"


def at_state(page: Page, url: str, state: str) -> None:
    page.goto(url)
    expect(page.locator("#anteroom")).to_have_attribute("data-state", state, timeout=15_000)


def hold_the_redirect(page: Page) -> None:
    """The site answers the admission with 204, so the browser stays on the admitted page."""
    page.route("**/healthz?from=queue*", lambda route: route.fulfill(status=204))


def refuse_entry(route: Route) -> None:
    body = {"error": "QueueDenied", "message": "We could not place you in this line."}
    route.fulfill(status=403, content_type="application/json", body=json.dumps(body))


def room(engine: Engine, live: LiveServer, **cfg: Any) -> tuple[str, str]:
    slug = "a11y-" + secrets.token_hex(4)
    config = {"redirectUrl": f"{live.url}/healthz?from=queue", "closedMessage": "Sold out"} | cfg
    return make_room(engine, env="web", slug=slug, **config), slug


def waiting(engine: Engine, live: LiveServer, page: Page) -> State:
    return waiting_room(engine, live.url, ahead=3)[1], "waiting", None


def in_the_draw(engine: Engine, live: LiveServer, page: Page) -> State:
    return waiting_room(engine, live.url, ahead=3, mode="random")[1], "waiting", None


def prequeue(engine: Engine, live: LiveServer, page: Page) -> State:
    rid, slug = room(engine, live)
    engine.open(rid, engine.stats(rid).now_ms + 10 * 60_000)
    return slug, "prequeue", None


def paused(engine: Engine, live: LiveServer, page: Page) -> State:
    rid, slug = waiting_room(engine, live.url, ahead=3)
    engine.pause(rid)
    return slug, "paused", None


def not_open(engine: Engine, live: LiveServer, page: Page) -> State:
    return room(engine, live)[1], "idle", None


def closed(engine: Engine, live: LiveServer, page: Page) -> State:
    rid, slug = room(engine, live)
    engine.open(rid)
    engine.close(rid)
    return slug, "idle", None


def rejecting(engine: Engine, live: LiveServer, page: Page) -> State:
    rid, slug = room(engine, live, mode="reject")
    engine.open(rid)
    return slug, "idle", None


def admitted(engine: Engine, live: LiveServer, page: Page) -> State:
    """At the front of a pinned line; once the page shows it, one admission is earned."""
    rid, slug = waiting_room(engine, live.url, ahead=0, ratePerMinute=60)
    hold_the_redirect(page)

    def admit() -> str:
        engine.shift_clock(rid, 1_000)
        return "admitted"

    return slug, "waiting", admit


def error(engine: Engine, live: LiveServer, page: Page) -> State:
    _, slug = waiting_room(engine, live.url, ahead=3)
    page.route("**/api/v1/queue/*", refuse_entry)
    return slug, "error", None


# Each state: the room's slug, the state the page first shows, and what then moves it on (to
# the state it returns), if anything.
State = tuple[str, str, Callable[[], str] | None]
STATES: dict[str, Callable[[Engine, LiveServer, Page], State]] = {
    "waiting": waiting,
    "in-the-draw": in_the_draw,
    "prequeue": prequeue,
    "paused": paused,
    "not-open": not_open,
    "closed": closed,
    "reject": rejecting,
    "admitted": admitted,
    "error": error,
}


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("state", list(STATES))
def test_hosted_page(stack: Stack, new_context: Any, state: str, lang: str) -> None:
    live, engine, api_key = stack
    page = new_context(locale=lang).new_page()
    slug, shown, then = STATES[state](engine, live, page)
    at_state(page, f"{live.url}/queue/{slug}?key={api_key}&lang={lang}", shown)
    if then:
        expect(page.locator("#anteroom")).to_have_attribute("data-state", then(), timeout=15_000)
    if state == "in-the-draw":
        expect(page.locator("#anteroom")).to_have_attribute("data-draw", "1")
    assert page.evaluate("() => document.documentElement.lang") == lang
    assert_no_violations(page, f"hosted page, {state}, {lang}")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_page_without_javascript(stack: Stack, new_context: Any, lang: str) -> None:
    """With JavaScript off, the hosted page's <noscript> leads here. Its refresh is kept on by
    default (a visitor who never polls loses the place) and axe's meta-refresh rule, which
    cannot see the control that turns it off, is left out there only; the page with the refresh
    turned off is held to every rule."""
    live, engine, api_key = stack
    # Behind the front of the line (its first 100 poll every second or two), so the page
    # refreshes every 120 s, not while axe reads it.
    _, slug = waiting_room(engine, live.url, ahead=120)
    without = new_context(locale=lang, java_script_enabled=False).new_page()
    without.goto(f"{live.url}/queue/{slug}?key={api_key}&lang={lang}")
    without.wait_for_url("**/plain?*")
    expect(without.locator("#anteroom")).to_have_attribute("data-state", "plain")
    # axe waits on the page's timers, which do not run with scripts off: the page has no
    # script of its own, so it is read where they run (its own visitor, one more in line).
    page = new_context(locale=lang).new_page()
    page.goto(without.url)
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "plain")
    assert_no_violations(page, f"page without JavaScript, {lang}", skip=("meta-refresh",))
    page.locator("#stop-refresh").click()
    expect(page.locator("#check-again")).to_be_visible()
    assert_no_violations(page, f"page without JavaScript, refresh off, {lang}")


def drawn_room(engine: Engine) -> str:
    """A room whose opening drew a pre-queue of three (its fairness report has a draw)."""
    slug = "drawn-" + secrets.token_hex(4)
    rid = make_room(engine, env="web", slug=slug, name="Spring drop")
    start = engine.stats(rid).now_ms
    engine.set_clock(rid, start)
    engine.open(rid, start + 60_000)
    for i in range(3):
        engine.enter(rid, f"pre{i}", "s", 10)
    engine.shift_clock(rid, 60_000)
    engine.tick(rid)
    return slug


@pytest.mark.parametrize("lang", LANGUAGES)
def test_fairness_page(stack: Stack, new_context: Any, lang: str) -> None:
    live, engine, api_key = stack
    slug = drawn_room(engine)
    page = new_context(locale=lang).new_page()
    page.goto(f"{live.url}/queue/{slug}/fairness?key={api_key}&lang={lang}")
    expect(page.locator("#entrants")).to_have_text("3")
    assert_no_violations(page, f"fairness page, {lang}")


def test_console_sign_in(stack: Stack, new_context: Any) -> None:
    live, _, _ = stack
    page = new_context().new_page()
    page.goto(f"{live.url}/console")
    expect(page.get_by_label("Secret key")).to_be_visible()
    assert_no_violations(page, "console sign-in")
    # The check can fail: an image with no text alternative is one violation.
    page.evaluate("() => document.querySelector('main').append(document.createElement('img'))")
    assert [v["id"] for v in violations(page)] == ["image-alt"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_console_rooms_and_room_page(stack: Stack, new_context: Any, scheme: str) -> None:
    live, engine, _ = stack
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    rid, _ = waiting_room(engine, live.url, ahead=3, capacity=50)
    page = new_context(color_scheme=scheme).new_page()
    sign_in(page, live, secret)
    assert_no_violations(page, f"console rooms list, {scheme}")
    page.goto(f"{live.url}/console/rooms/{rid}")
    expect(page.locator('[data-figure="Status"]')).to_have_text("open", timeout=10_000)
    assert_no_violations(page, f"console room page, {scheme}")


@pytest.mark.parametrize(("motion", "still"), [("no-preference", False), ("reduce", True)])
def test_reduced_motion_stills_the_waiting_bar(
    stack: Stack, new_context: Any, motion: str, still: bool
) -> None:
    """While the page connects its bar has no value, and Chromium sweeps such a bar whatever
    the visitor asked for: with reduced motion asked for, it stands still."""
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=3)
    page = new_context(reduced_motion=motion).new_page()
    page.route("**/api/v1/arrive", lambda route: None)  # unanswered: the page stays connecting
    page.goto(f"{live.url}/queue/{slug}?key={api_key}")
    bar = page.locator("#progress")
    assert bar.evaluate("p => p.matches(':indeterminate')")
    frames = set()
    for _ in range(4):
        frames.add(bar.screenshot(animations="allow"))
        page.wait_for_timeout(250)  # frames of the sweep, a second apart in all
    assert (len(frames) == 1) == still, f"{len(frames)} distinct frames with {motion}"


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_dark_mode_and_the_not_found_page(stack: Stack, new_context: Any, lang: str) -> None:
    """Dark mode (its own colours) on the waiting page and the console's sign-in, and the error
    page a wrong link shows."""
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=3)
    context = new_context(locale=lang, color_scheme="dark")
    page = context.new_page()
    at_state(page, f"{live.url}/queue/{slug}?key={api_key}&lang={lang}", "waiting")
    assert_no_violations(page, f"hosted page, dark, {lang}")
    response = page.goto(f"{live.url}/queue/no-such-room?key={api_key}&lang={lang}")
    assert response and response.status == 404
    assert_no_violations(page, f"not-found page, dark, {lang}")
    page.goto(f"{live.url}/console")
    expect(page.get_by_label("Secret key")).to_be_visible()
    assert_no_violations(page, "console sign-in, dark")


# The documentation site (mkdocs.yml), at each width: the home page, the configuration reference,
# long prose with code (deploying, queue) and generated tables, the benchmark page at a desktop's
# width (its ~2,000 table rows take axe 30 s on a loaded machine) and the management API (the
# OpenAPI document as tables, scrolling sideways) at a phone's.
DOCS_PAGES = {
    "desktop": ("", "configuration/", "benchmarks/", "deploying/", "queue/"),
    "phone": ("", "configuration/", "management-api/", "deploying/", "queue/"),
}
WIDTHS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built as CI builds it (--strict) and served over HTTP, as a host would."""
    out = tmp_path_factory.mktemp("docs-site")
    root = Path(__file__).resolve().parents[2]
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=root, env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    handler = functools.partial(QuietFiles, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_docs_site(docs_site: str, new_context: Any, width: str) -> None:
    page = new_context(viewport=WIDTHS[width]).new_page()
    for path in DOCS_PAGES[width]:
        page.goto(f"{docs_site}/{path}")
        expect(page.locator("article h1")).to_be_visible()
        assert_no_violations(page, f"docs site, /{path}, {width}")
    # The check can fail: docs/assets/extra.css is what makes the theme pass. Without it axe
    # finds the theme's grey code comments and its links told apart by colour alone.
    page.evaluate("() => document.querySelector('link[href$=\"extra.css\"]').remove()")
    found = {v["id"] for v in violations(page)}
    assert {"color-contrast", "link-in-text-block"} <= found, found
    # The search, its results listed.
    page.goto(f"{docs_site}/")
    page.keyboard.press("/")
    page.locator("input.md-search__input").press_sequentially("capacity", delay=20)
    expect(page.locator(".md-search-result__item").first).to_be_visible(timeout=15_000)
    assert_no_violations(page, f"docs site, search results, {width}")
