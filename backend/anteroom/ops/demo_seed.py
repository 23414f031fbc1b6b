"""Demo mode: environment ``demo``, public key ``pk_demo`` and an open room ``demo``."""

from __future__ import annotations

import os
from pathlib import Path

from anteroom.queue.line.room_engine import Engine
from anteroom.store.keystore import KeyStore
from anteroom.web.pages.demo_shop import DEMO_ENV, DEMO_PUBLIC_KEY, DEMO_SLUG

DEMO_SECRET_FILE = "demo-secret-key"


def ensure_demo(engine: Engine, base_url: str) -> str:
    """Create (once) and open the demo room; return its id. Safe to call on every start."""
    engine.redis.hset(engine.keys.public_keys(), DEMO_PUBLIC_KEY, DEMO_ENV)
    room_id = engine.room_id(DEMO_ENV, DEMO_SLUG)
    if room_id is None:
        room = engine.create_room(
            DEMO_ENV,
            {
                "slug": DEMO_SLUG,
                "name": "Anteroom demo drop",
                "ratePerMinute": 60,
                "redirectUrl": f"{base_url}/demo/checkout",
            },
        )
        room_id = room["id"]
    elif engine.get_room(room_id)["redirectUrl"] != f"{base_url}/demo/checkout":
        # Served on another address than last time: send admitted visitors to this one.
        engine.update_room(room_id, {"redirectUrl": f"{base_url}/demo/checkout"})
    if engine.get_room(room_id)["status"] == "idle":
        engine.open(room_id)
    return room_id


def ensure_demo_secret(keystore: KeyStore, data_dir: Path) -> str:
    """The demo environment's secret key for the console, kept (0600) in ``data_dir``.

    The same key across restarts while it is live; a new one if it was revoked or lost. Only
    the terminal of ``anteroom serve`` shows it.
    """
    path = Path(data_dir) / DEMO_SECRET_FILE
    if path.exists():
        secret = path.read_text().strip()
        if keystore.authenticate(secret) is not None:
            return secret
    _, secret = keystore.create(DEMO_ENV)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secret + "\n")
    return secret
