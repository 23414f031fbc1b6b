"""Small helpers shared by the test suites."""

from __future__ import annotations

import secrets
import socket
from typing import Any

from anteroom.engine import Engine

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
