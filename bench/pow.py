"""Proof-of-work benchmark: how long the browser agent takes to solve a challenge in Chromium.

One ``anteroom serve`` (gunicorn, default difficulty unless ``--difficulty``) runs against its own
embedded Redis; Debian's Chromium (headless, driven by Playwright) opens the real hosted waiting
page over http://127.0.0.1 in a fresh browser context per solve, so every solve is a real first
visit: a fresh challenge, the agent's Web Worker started from its Blob URL, the search, then
``identify``. An init script wraps the page's ``fetch`` and notes, with ``performance.now()``, when
the challenge's answer arrived and when the identify request left: that span is the solve (the
agent does nothing else in between but read a few signals). The agent searches solutions from 0
upwards, so the solution it sends + 1 is the number of hashes it computed; ``hashes_per_second``
is their sum over the sum of the solve times. The expected count at difficulty d is 2^d.
Run: ``python bench/pow.py [--solves 20] [--difficulty N]``. Writes ``bench/results/pow.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py is named like the standard library's ``http`` package, and a script's folder
# comes first on sys.path: drop it before anything imports ``http.client``.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]  # the tests' live-server harness

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402
from playwright.sync_api import Browser, sync_playwright  # noqa: E402

from anteroom.config import Settings  # noqa: E402
from anteroom.engine import Engine  # noqa: E402
from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.sdk.tokens import Keyring  # noqa: E402
from anteroom.store.keystore import KeyStore  # noqa: E402
from helpers import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from live_server import LiveServer  # noqa: E402

# What a visitor's own (not headless) Chrome says; the signal rules refuse HeadlessChrome.
USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0.0.0 Safari/537.36"
)
TARGET_MEDIAN_MS = 1000

# Runs before the page's own scripts: the agent calls globalThis.fetch when it posts.
TIMING_SCRIPT = """
(() => {
  const seen = {};
  let done;
  window.__powSolved = new Promise((resolve) => (done = resolve));
  const original = window.fetch.bind(window);
  window.fetch = async (url, init) => {
    const path = String(url);
    if (path.endsWith("/api/v1/identify") && seen.identifyAt === undefined) {
      seen.identifyAt = performance.now();
      seen.solution = JSON.parse(init.body).solution;
      done(seen);
    }
    const response = await original(url, init);
    if (path.endsWith("/api/v1/challenge") && seen.challengeAt === undefined) {
      seen.challengeAt = performance.now();
      seen.difficulty = (await response.clone().json()).difficulty;
    }
    return response;
  };
})();
"""


def start_service(redis_url: str, data_dir: str, difficulty: int | None) -> LiveServer:
    """``anteroom serve`` (its default workers) on a free port, once it answers /readyz."""
    env = {
        "ANTEROOM_KEYS": Keyring.generate().serialize(),
        "ANTEROOM_WORKERS": str(Settings().workers),
        "ANTEROOM_LIMIT_CHALLENGE": "1000/minute",  # every solve comes from 127.0.0.1
        "ANTEROOM_LIMIT_IDENTIFY": "1000/minute",
        "ANTEROOM_LIMIT_ENTER": "1000/minute",
    }
    if difficulty is not None:
        env["ANTEROOM_POW_DIFFICULTY"] = str(difficulty)
    return LiveServer(redis_url, data_dir, **env).start()


def solve_once(browser: Browser, page_url: str) -> dict[str, float]:
    """One first visit in a fresh context: the solve's duration, difficulty and solution."""
    context = browser.new_context(user_agent=USER_AGENT, locale="en-GB")
    try:
        page = context.new_page()
        page.add_init_script(TIMING_SCRIPT)
        page.goto(page_url)
        # evaluate() awaits the promise (and, unlike wait_for_function, needs no eval the
        # page's CSP would refuse)
        seen: dict[str, Any] = page.evaluate("() => window.__powSolved")
    finally:
        context.close()
    return {
        "ms": seen["identifyAt"] - seen["challengeAt"],
        "difficulty": int(seen["difficulty"]),
        "hashes": int(seen["solution"]) + 1,
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--solves", type=int, default=20)
    parser.add_argument("--difficulty", type=int, help="default: the service's own default")
    args = parser.parse_args()
    if not (ROOT / "static" / "anteroom.js").exists():
        sys.exit("static/anteroom.js is missing: run `npm run build` first")
    data_dir = tempfile.mkdtemp(prefix="anteroom-bench-pow-")
    server = EmbeddedRedis(data_dir, port=0).start()
    service = None
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        engine = Engine(client)
        api_key = KeyStore(client, engine.keys).create("bench")[0].public_key
        room = engine.create_room(
            "bench",
            {"slug": "pow", "name": "PoW bench", "redirectUrl": "https://shop.example/"},
        )["id"]
        engine.open(room)
        service = start_service(server.url, data_dir, args.difficulty)
        page_url = f"{service.url}/queue/pow?key={api_key}"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            version = browser.version
            solve_once(browser, page_url)  # warm-up: the first page load compiles everything
            solves = [solve_once(browser, page_url) for _ in range(args.solves)]
            browser.close()
    finally:
        if service is not None:
            service.stop()
        server.stop()

    difficulties = {s["difficulty"] for s in solves}
    assert len(difficulties) == 1, difficulties
    difficulty = int(difficulties.pop())
    expected = args.difficulty if args.difficulty is not None else Settings().pow_difficulty
    assert difficulty == expected, (difficulty, expected)
    times = [s["ms"] for s in solves]
    rate = sum(s["hashes"] for s in solves) / (sum(times) / 1000)
    results = {
        "solve_ms_median": round(statistics.median(times), 1),
        "solve_ms_p90": round(percentile(times, 0.9), 1),
        "difficulty": difficulty,
        "hashes_per_second": round(rate),
        "expected_hashes": 2**difficulty,
        "expected_solve_ms": round(2**difficulty / rate * 1000, 1),
        "target_median_ms": TARGET_MEDIAN_MS,
        "setup": {
            "solves": len(solves),
            "browser": f"Debian chromium {version}, headless, via Playwright",
            "page": "the hosted waiting page over http://127.0.0.1, a fresh context per solve",
            "cpus": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2),
        },
    }
    print(
        f"difficulty {difficulty}: median {results['solve_ms_median']} ms, "
        f"p90 {results['solve_ms_p90']} ms over {len(solves)} solves; "
        f"{rate / 1e6:.2f} M hashes/s, so 2^{difficulty} hashes take "
        f"{results['expected_solve_ms']} ms on average"
    )
    out = ROOT / "bench" / "results" / "pow.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
