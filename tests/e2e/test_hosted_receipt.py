"""A pre-queue entrant downloads the proof of their place from the hosted page and anyone
checks it: real Chromium, a real server (this tree's code) and Redis, and `anteroom verify-draw`
run as a visitor runs it against the live room."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
from playwright.sync_api import expect

import anteroom
from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import make_room
from live_server import LiveServer, LiveServers

pytestmark = [pytest.mark.redis, pytest.mark.slow]

BACKEND = str(Path(anteroom.__file__).parents[1])
START = 1_800_000_000_000
LEAD_MS = 10_000  # opensAt this far ahead: the pre-queue's polls come every few seconds


@pytest.fixture(scope="module")
def server(module_live_server: LiveServers) -> LiveServer:
    # The server runs the code under test (pytest's pythonpath does not reach a subprocess).
    return module_live_server(ANTEROOM_POW_DIFFICULTY="10", PYTHONPATH=BACKEND)


def verify_draw(*args: str) -> subprocess.CompletedProcess[str]:
    """``anteroom verify-draw`` (the CLI's entry point) as a visitor runs it."""
    run = "import sys; from anteroom.ops.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {"PYTHONPATH": BACKEND, "PATH": "/usr/bin:/bin"}  # no proxy: the server is local
    return subprocess.run(
        [sys.executable, "-c", run, "verify-draw", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_a_pre_queue_entrant_downloads_a_receipt_that_verify_draw_accepts(
    server: LiveServer, redis_client: redis.Redis, new_context: Any, tmp_path: Path
) -> None:
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("web")[0].public_key
    slug = "drop-" + secrets.token_hex(3)
    room = make_room(engine, env="web", slug=slug, redirectUrl=f"{server.url}/healthz")
    engine.set_clock(room, START)  # pinned: at opensAt nothing is earned, so they wait
    engine.open(room, START + LEAD_MS)

    page = new_context(accept_downloads=True).new_page()
    page.goto(f"{server.url}/queue/{slug}?key={api_key}")
    main = page.locator("#anteroom")
    expect(main).to_have_attribute("data-state", "prequeue", timeout=15_000)
    proof = page.locator("#receipt")
    expect(proof).to_be_hidden()  # nothing to prove before the draw

    engine.shift_clock(room, LEAD_MS)  # opensAt: the server's ticker draws the pool
    expect(proof).to_be_visible(timeout=30_000)
    expect(proof).to_have_text("Proof of your place (signed receipt)")
    with page.expect_download() as started:
        proof.click()
    download = started.value
    assert re.fullmatch(rf"receipt-{slug}-1\.txt", download.suggested_filename)
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)

    fairness = f"{server.url}/queue/{slug}/fairness.json?key={api_key}"
    done = verify_draw("--fairness", fairness, "--receipt", str(saved))
    assert done.returncode == 0, done.stderr
    assert "rank 1 of 1 checked" in done.stdout and "not checked" not in done.stdout

    # One byte changed anywhere in the receipt: the check fails and says which check failed.
    text = saved.read_text("ascii").strip()
    payload_at, signature_at = text.index(".", 4) + 10, len(text) - 20
    for at, named in ((payload_at, "receipt-[a-z]+"), (signature_at, "receipt-signature")):
        forged = text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1 :]
        (tmp_path / "forged.txt").write_text(forged + "\n")
        failed = verify_draw("--fairness", fairness, "--receipt", str(tmp_path / "forged.txt"))
        assert failed.returncode == 1 and re.search(f"FAILED {named}", failed.stderr), failed
