"""Small helpers shared by the test suites."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from flask.testing import FlaskClient

from anteroom.engine import Engine
from anteroom.sdk.tokens import TicketClaims

TEST_KEYS = "k1:" + "a" * 43 + "="
# Debian's Chromium, never a downloaded one; the flags keep it off this machine's closed network.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-blink-features=AutomationControlled",
]


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def carried_claims(room: str, vid: str, answer: Any) -> TicketClaims:
    """The ticket claims a visitor carries after ``answer`` (a waiting QueueAnswer of the
    first opening), as the views pass them to a poll: the far poll's order key among them."""
    return TicketClaims(
        room_id=room, visitor_id=vid, ticket=answer.ticket or 0, generation=1,
        environment="test", session_id=answer.session_jti, score=answer.score,
        order_key=answer.order_key, kept_until=answer.kept_until_ms,
    )  # fmt: skip


def make_room(engine: Engine, env: str = "test", slug: str = "drop", **config: Any) -> str:
    """Create a room (defaults suit tests) and return its id."""
    base = {"slug": slug, "name": "Spring drop", "redirectUrl": "https://shop.example/checkout"}
    return str(engine.create_room(env, base | config)["id"])


def open_room(engine: Engine, env: str = "test", slug: str = "drop", **config: Any) -> str:
    """Create and open a room; its bank starts empty."""
    room_id = make_room(engine, env, slug, **config)
    engine.open(room_id)
    return room_id


def waiting_room(engine: Engine, live_url: str, ahead: int = 1, **cfg: Any) -> tuple[str, str]:
    """An open room with ``ahead`` spots already in line (they never poll, so nobody moves).

    Each test gets its own slug: the live server caches room configuration for a moment.
    """
    slug = "drop-" + secrets.token_hex(4)
    config = {"ratePerMinute": 1, "redirectUrl": f"{live_url}/healthz?from=queue"} | cfg
    room = make_room(engine, env="web", slug=slug, **config)
    # Pinned: the line moves only when a test moves the room's clock, never by itself.
    engine.set_clock(room, engine.stats(room).now_ms)
    engine.open(room)
    for i in range(ahead):
        engine.enter(room, f"ahead{i}", "s", 10)
    return room, slug


MANAGEMENT_API = "/api/management/v1"


class Operator:
    """A management client holding one secret key; ``room`` is what ``create`` sends by default."""

    def __init__(
        self, client: FlaskClient, secret: str, room: dict[str, Any] | None = None
    ) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {secret}"}
        self.room = room or {}

    def call(self, method: str, path: str, body: Any = None, **query: str) -> Any:
        return self.client.open(
            MANAGEMENT_API + path, method=method, json=body, headers=self.headers,
            query_string=query,
        )  # fmt: skip

    def create(self, **config: Any) -> dict[str, Any]:
        response = self.call("POST", "/queues", self.room | config)
        assert response.status_code == 201, response.json
        return response.json  # type: ignore[no-any-return]

    def patch(self, room_id: str, body: dict[str, Any]) -> Any:
        return self.call("PATCH", f"/queues/{room_id}", body)

    def get(self, room_id: str) -> dict[str, Any]:
        response = self.call("GET", f"/queues/{room_id}")
        assert response.status_code == 200, response.json
        return response.json  # type: ignore[no-any-return]

    def revoke(self, body: Any, **query: str) -> Any:
        return self.call("POST", "/sessions/revoke", body, **query)


def verify_draw(*args: str) -> subprocess.CompletedProcess[str]:
    """``anteroom verify-draw`` run as a visitor runs it (no proxy: tests serve from 127.0.0.1)."""
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["PYTHONPATH"] = str(root / "backend")
    return subprocess.run(
        [sys.executable, "-m", "anteroom.sdk.verify_draw", *args],
        env=env, cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip


def admitted_in_turn(
    engine: Engine, room: str, expected: list[str], tickets: dict[str, int], seconds: int = 12
) -> list[str]:
    """Poll ``expected`` each second of the room's clock for ``seconds``: who was admitted, in
    the order their admissions were found."""
    admitted: list[str] = []
    for _ in range(seconds):
        engine.shift_clock(room, 1_000)
        for vid in expected:
            if vid not in admitted and engine.poll(room, vid, tickets[vid], 1).admission:
                admitted.append(vid)
    return admitted


T = TypeVar("T")


def in_own_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end as a server would: on an event loop of its own, in a thread
    of its own. In a whole-suite run the browser tests' Playwright holds this thread's running
    loop for the session, and ``asyncio.run`` refuses to start inside a running loop."""
    with ThreadPoolExecutor(1) as own:
        return own.submit(asyncio.run, coroutine).result()
