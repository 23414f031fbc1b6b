"""An opening's draw, made by the service (docs/draw.md).

When an opening with a pool is scheduled, lua/open_room.lua stores its seed (secret) beside the
seed's commitment (published at once). At opensAt the drain admits nobody (lua/_drain.lua) until
one process has made the draw, here:

0. when the opening named a beacon round at commitment (queue/draw/draw_beacon.py), its value is
   fetched first; while the beacon does not answer the draw waits, and so does the pre-queue;
1. ``begin_draw`` gives it the draw for a lease (a process that dies mid-draw is replaced when the
   lease runs out) with the seed and the opening's salt;
2. the pool's waiting spots are read, frozen: their vids in the line and the held buckets with a
   pre-opening order key (below ``POST_OPEN_KEY``; later arrivals queue behind, FIFO);
3. each gets its entrant id (:func:`anteroom.sdk.draw.entrant_id`, salted) and the ids are put in
   :func:`anteroom.sdk.draw.drawn_order` — the very function ``anteroom verify-draw`` runs;
4. ``place_drawn`` gives every spot its drawn order key, batch by batch, and appends its id to the
   drawn list; ``finish_draw`` stores the Merkle root and marks the draw made, which reveals the
   seed and opens the drain.

Drawn order keys are negative (``drawn_key``): below every lottery key, so a ticket still carrying
its pre-draw key finds its old block empty and is answered by Redis with its new one, never
placed by the snapshot at its old lottery place. Rank r of n gets -2^51 + floor(r * 2^51 / n):
spread over the 2,048 pool blocks below zero like the lottery's over the 4,096 above, so a far
spot's place told from blocks stays as close (line_blocks.py).

In a draw shared across regions (queue/regions/shared_draw.py) the key is instead the top 51
bits of the entrant's HMAC order key (``regional_key``): the same function of the shared seed in
every region, so the regions' pools compare by their keys as the merged draw orders them
(queue/regions/pool_order.py); uniform like the keys themselves, so they spread over the pool
blocks as evenly in expectation.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from anteroom.queue.connection.os_threads import off_the_loop
from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.queue.draw import draw_beacon
from anteroom.queue.line.line_blocks import POST_OPEN_KEY
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.queue.rooms.room_hash import stored
from anteroom.sdk import draw

DRAWN_SPAN = 2**51  # drawn keys fill [-DRAWN_SPAN, 0)
BATCH = 500  # spots a place_drawn call moves: ~5 ms of Redis each (bench/draw_service.py)
LEASE_MS = 30_000  # a drawer silent this long is presumed dead; another takes over

Run = Callable[..., Any]


@dataclass(frozen=True)
class DrawDone:
    """What one call of :func:`make_draw` did: ``entrants`` drawn, or nothing (``made`` False)."""

    made: bool
    entrants: int = 0
    root: str = ""
    waiting_for_round: int = 0  # the beacon round the draw waits for (0: none)


def drawn_key(rank: int, count: int) -> int:
    """The order key of the entrant at 0-based ``rank`` of ``count``: negative, increasing."""
    return -DRAWN_SPAN + rank * DRAWN_SPAN // count


def regional_key(order_key: str, previous: int) -> int:
    """The order key of an entrant of a draw across regions, from its HMAC order key (hex):
    its top 51 bits in [-DRAWN_SPAN, 0), and at least ``previous`` + 1 so a tie in 51 bits
    (about n^2 / 2^52 likely) keeps the drawn order in the line."""
    return max(-DRAWN_SPAN + (int(order_key[:13], 16) >> 1), previous + 1)


def drawn_keys(order_keys: list[str], shared: bool) -> list[int]:
    """Every entrant's order key in the line, from their HMAC order keys in drawn order: by
    rank, or in a draw across regions from the HMAC key itself (:func:`regional_key`)."""
    count = len(order_keys)
    if not shared:
        return [drawn_key(rank, count) for rank in range(count)]
    keys, previous = [], -DRAWN_SPAN - 1
    for order_key in order_keys:
        previous = regional_key(order_key, previous)
        keys.append(previous)
    return keys


def pool_vids(client: redis.Redis, keys: KeySpace, room_id: str) -> list[str]:
    """The vids of the pool's waiting spots: pre-opening order keys, in the line or held.

    From the lowest drawn key: a draw taken over from a process that died midway finds drawn
    keys too; invitees' lane keys, lower still, are not the pool's and are never drawn.
    """
    base = keys.room_base(room_id)
    top, bottom = f"({POST_OPEN_KEY}", str(-DRAWN_SPAN)
    with storage_errors():
        vids = list(client.zrangebyscore(base + "line", bottom, top))
        for score in client.smembers(base + "bks"):
            vids += client.zrangebyscore(f"{base}b:{score}", bottom, top)
    return vids


def fetch_beacon(client: redis.Redis, keys: KeySpace, room_id: str, run: Run) -> int:
    """Fetch the beacon round the draw named at commitment, if it has one not fetched yet.

    Returns the round when the beacon did not answer (the draw waits: the ticker's next tick
    asks again), else 0. Any process may fetch it: a round's value is the same for all.
    """
    with storage_errors():
        url, round_text, value = client.hmget(
            keys.room(room_id), [stored("beaconUrl"), stored("beaconRound"), stored("beaconValue")]
        )
    if not url or value:
        return 0
    round_number = int(round_text or 0)
    fetched = draw_beacon.fetch_randomness(url, round_number)
    run("set_beacon", room_id, round_number, fetched or "")
    return 0 if fetched else round_number


def ordered(
    seed: str, salt: bytes, vids: list[str], beacon: str | None, shared: bool = False
) -> tuple[dict[str, str], list[str], list[int]]:
    """The pool's entrant ids (id → vid), their drawn order and their drawn order keys."""
    vid_of = {draw.entrant_id(salt, vid): vid for vid in vids}
    keyed = draw.keyed_order(seed, list(vid_of), beacon)
    order = [entrant for _, entrant in keyed]
    return vid_of, order, drawn_keys([key for key, _ in keyed], shared)


def make_draw(client: redis.Redis, keys: KeySpace, room_id: str, run: Run) -> DrawDone:
    """Make the room's draw if it is due and nobody else makes it; ``run`` runs a script.

    ``run`` raises (the engine's ``DrawLost``) when another process took the draw over midway;
    that one starts again from the frozen set, which no entry can grow after opensAt.
    """
    waiting = fetch_beacon(client, keys, room_id, run)
    if waiting:
        return DrawDone(made=False, waiting_for_round=waiting)
    token = secrets.token_hex(8)
    began = run("begin_draw", room_id, token, LEASE_MS)
    if int(began[0]) != 1:
        return DrawDone(made=False)
    seed, salt, beacon = began[1], bytes.fromhex(began[2]), began[3] or None
    with storage_errors():
        shared = bool(client.hget(keys.room(room_id), stored("drawRegion")))
    # Seconds of CPU at 100,000 entrants: off a gevent worker's event loop (os_threads.py).
    vid_of, order, order_keys = off_the_loop(
        ordered, seed, salt, pool_vids(client, keys, room_id), beacon, shared
    )
    count = len(order)
    for start in range(0, count, BATCH):
        args: list[Any] = [token, LEASE_MS]
        for rank in range(start, min(start + BATCH, count)):
            entrant = order[rank]
            args += [vid_of[entrant], order_keys[rank], entrant]
        run("place_drawn", room_id, *args)
    head = off_the_loop(draw.tree_root, order)
    run("finish_draw", room_id, token, head, count)
    return DrawDone(made=True, entrants=count, root=head)
