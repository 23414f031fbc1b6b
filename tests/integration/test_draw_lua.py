"""The shuffle's order key in Lua (lua/_draw.lua, run by lua/draw_keys.lua) is the verifier's
(anteroom.sdk.draw.order_key), on the real Redis: otherwise a visitor's recomputed order would
differ from the one the room dealt, and an honest draw would fail its check."""

from __future__ import annotations

import json
import random

import pytest
import redis

from anteroom.queue.connection import lua_scripts
from anteroom.sdk import draw
from fixtures import make_draw_fixtures

pytestmark = pytest.mark.redis


@pytest.mark.parametrize("with_beacon", [False, True])
def test_lua_order_keys_equal_pythons_on_10000_random_ids(
    redis_client: redis.Redis, with_beacon: bool
) -> None:
    rng = random.Random(23 + with_beacon)  # seeded: a failure can be run again as it was
    seed = rng.randbytes(32).hex()
    beacon = rng.randbytes(32).hex() if with_beacon else None
    ids = [rng.randbytes(32).hex() for _ in range(10_000)]
    script = redis_client.register_script(lua_scripts.source("draw_keys"))
    keys = script(keys=[], args=[seed, beacon or "", *ids])
    assert keys == [draw.order_key(seed, entrant, beacon) for entrant in ids]
    # And so the order Lua's keys sort into is the one the verifier recomputes.
    lua_order = [e for _, e in sorted(zip(keys, ids, strict=True))]
    assert lua_order == draw.drawn_order(seed, ids, beacon)


def test_lua_keys_agree_on_seeds_of_the_hmac_pads_own_bytes(redis_client: redis.Redis) -> None:
    # Bytes 0x00, 0x36, 0x5c and 0xff XOR to the pad bytes' extremes (0x00 after the pad, 0xff).
    script = redis_client.register_script(lua_scripts.source("draw_keys"))
    ids = [f"{i:064x}" for i in range(50)]
    for seed in ("00" * 32, "36" * 32, "5c" * 32, "ff" * 32):
        assert script(keys=[], args=[seed, "", *ids]) == [draw.order_key(seed, e) for e in ids]


def test_lua_order_keys_are_the_fixture_files(redis_client: redis.Redis) -> None:
    # The case file every implementation shares (tests/fixtures/draw.json), beacon and none.
    fixtures = json.loads(make_draw_fixtures.PATH.read_text(encoding="utf-8"))
    script = redis_client.register_script(lua_scripts.source("draw_keys"))
    for fixture in fixtures["draws"]:
        document, ids = fixture["document"], fixture["entrants"]
        beacon = draw.beacon_value(document) or ""
        keys = script(keys=[], args=[document["seed"], beacon, *ids])
        assert dict(zip(ids, keys, strict=True)) == fixture["orderKeys"]
