"""Small helpers shared by the test suites."""

from __future__ import annotations

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
