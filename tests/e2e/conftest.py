"""Browser fixtures: Debian's Chromium driven by Playwright, against a real gunicorn."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, BrowserContext, Playwright, sync_playwright

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import CHROMIUM, CHROMIUM_ARGS
from live_server import LiveServer, LiveServers

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
# A visitor's own browser is not headless; the test browser says what a real one would,
# since the signal rules would (rightly) refuse a HeadlessChrome user agent and webdriver.
USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0.0.0 Safari/537.36"
)


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
    )
    yield browser
    browser.close()


@pytest.fixture
def new_context(browser: Browser) -> Iterator[object]:
    contexts: list[BrowserContext] = []

    def make(**options: object) -> BrowserContext:
        # A test may speak another language (locale also sets Accept-Language).
        context = browser.new_context(**({"user_agent": USER_AGENT, "locale": "en-GB"} | options))
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()


@pytest.fixture(scope="module")
def live(module_live_server: LiveServers) -> LiveServer:
    return module_live_server(ANTEROOM_POW_DIFFICULTY="10")


@pytest.fixture
def stack(live: LiveServer, redis_client: redis.Redis) -> tuple[LiveServer, Engine, str]:
    """The live server, an engine on its Redis and a fresh public key (the Redis is flushed
    before each test, so rooms and keys are made anew)."""
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("web")[0].public_key
    return live, engine, api_key


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
