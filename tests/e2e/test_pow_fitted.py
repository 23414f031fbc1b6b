"""Proof of work, fitted, and the way in without JavaScript, in real headless Chromium.

The live server here pins no difficulty: the work rule decides, as in production.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Request, Route, expect

from anteroom.engine import Engine
from anteroom.sdk import verification as verify
from anteroom.web.pages.hosted_pages import CSP
from helpers import TEST_KEYS, waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]


@pytest.fixture(scope="module")
def live(module_live_server: Any) -> LiveServer:
    return module_live_server()  # type: ignore[no-any-return]


# Chromium throttles a page's CPU (CDP Emulation.setCPUThrottlingRate) but refuses to throttle
# workers ("only supported for pages, not workers"): at 6x the page has no Worker, so the agent
# solves on its throttled main thread, one slow core, as bench/pow.py's "6x" figures do.
NO_WORKERS = "delete window.Worker;"
# Whether the page's CSP lets it compile WebAssembly (the smallest module: magic and version).
COMPILES = """() => {
  try {
    return new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])) && true;
  } catch {
    return false;
  }
}"""


def solve_in_chromium(
    stack: Stack, new_context: Any, slowdown: int = 1, csp: str | None = None
) -> bool:
    """A first visit to a hosted waiting page until the visitor waits in line, checking what the
    agent sent to /arrive and /queue/join; True when the page may compile WebAssembly."""
    live, engine, api_key = stack
    _, slug = waiting_room(engine, live.url, ahead=1)
    context = new_context()
    page = context.new_page()
    if slowdown > 1:  # Chromium's budget-phone stand-in
        page.add_init_script(NO_WORKERS)
        context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": slowdown})
    if csp is not None:  # the hosted page as an operator's own CSP might serve it

        def recast(route: Route) -> None:
            response = route.fetch()
            route.fulfill(
                response=response, headers=response.headers | {"content-security-policy": csp}
            )

        page.route(re.compile(rf"/queue/{slug}\?"), recast)
    sent: dict[str, list[Any]] = {}

    def note(request: Request) -> None:
        path = urlsplit(request.url).path
        if path in ("/api/v1/arrive", "/api/v1/queue/join"):
            sent.setdefault(path, []).append(json.loads(request.post_data or "{}"))

    page.on("request", note)
    page.goto(f"{live.url}/queue/{slug}?key={api_key}")
    expect(page.locator("#anteroom")).to_have_attribute("data-state", "waiting", timeout=30_000)
    expect(page.locator("#position")).to_have_text("2")
    (ask,) = sent["/api/v1/arrive"]  # one challenge: the device measures on its floor's puzzles
    assert ask["room"] == slug and ask["maxPuzzles"] == 16
    (join,) = sent["/api/v1/queue/join"]
    # low-calm: 16 puzzles of 2^11, the first 4 the floor; the agent solved the floor or more
    assert "solution" not in join and 4 <= len(join["solutions"]) <= 16
    return bool(page.evaluate(COMPILES))


@pytest.mark.parametrize("slowdown", [1, 6])
def test_the_agent_solves_a_fitted_split_challenge(
    stack: Stack, new_context: Any, slowdown: int
) -> None:
    assert solve_in_chromium(stack, new_context, slowdown)  # its CSP allows the WebAssembly search


def test_a_page_whose_csp_refuses_webassembly_still_solves_in_javascript(
    stack: Stack, new_context: Any
) -> None:
    # An operator's page without 'wasm-unsafe-eval': neither it nor its workers may compile the
    # WebAssembly search, so they search in JS; the visitor still gets in line.
    strict = CSP.replace(" 'wasm-unsafe-eval'", "")
    assert "wasm-unsafe-eval" not in strict
    assert not solve_in_chromium(stack, new_context, csp=strict)


def test_without_javascript_the_hosted_page_still_lets_the_visitor_in(
    stack: Stack, new_context: Any
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ratePerMinute=60, ahead=1)
    page = new_context(java_script_enabled=False).new_page()
    page.goto(f"{live.url}/queue/{slug}?key={api_key}")
    page.wait_for_url(re.compile(rf"/queue/{slug}/plain\?"), timeout=15_000)
    # Landmarks and live text a screen reader finds: the main region, the heading, the status.
    expect(page.get_by_role("main")).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_have_text("Spring drop")
    expect(page.get_by_role("status")).to_contain_text("number 2 in line")
    expect(page.locator("#eta")).not_to_be_empty()
    engine.shift_clock(room, 1_000)  # the visitor ahead goes in: the page's own refresh says so
    expect(page.get_by_role("status")).to_contain_text("number 1", timeout=20_000)
    engine.shift_clock(room, 1_000)  # and then ours
    page.wait_for_url(re.compile(r"/healthz\?from=queue&abq="), timeout=30_000)
    query = parse_qs(urlsplit(page.url).query)
    result = verify.verify_admission(query["abq"][0], TEST_KEYS, room=slug)
    assert result.valid, result.reason
