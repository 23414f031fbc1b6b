"""Demo mode: environment ``demo``, public key ``pk_demo`` and an open room ``demo``."""

from __future__ import annotations

from anteroom.queue.room_engine import Engine

DEMO_ENV = "demo"
DEMO_PUBLIC_KEY = "pk_demo"
DEMO_SLUG = "demo"


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
