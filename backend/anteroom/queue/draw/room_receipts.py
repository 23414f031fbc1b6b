"""Receipts for a draw's entrants (docs/draw.md), made once per process.

After the draw, each pre-queue entrant's queue answers carry ``receipt``: an ``rc1`` receipt
(:func:`anteroom.sdk.draw.make_receipt`) of the room's slug, the opening (its ``opensAt``), the
entrant's id, drawn rank and Merkle inclusion proof, signed with the room's receipt key
(receipt_keys.py). The proof needs the whole drawn list, so each process reads it once per
opening (with the opening's salt) and keeps the tree compact (:class:`~anteroom.sdk.merkle.Tree`)
and an index of ids to ranks; a poll then costs one HMAC of the visitor's id and a dict lookup,
and a receipt is signed once per visitor while it stays among the last ``MEMO`` made.

The tree is built in the background, never in a request (a second or more at 100,000
entrants): by the process that makes the draw, as it makes it (queue/draw/draw_worker.py), and by
any other as its first answer after the draw finds none; those first answers carry no receipt,
the next ones do.

Rooms without a made draw cost a dict read; a spot whose ticket shows a post-draw order key
(a later arrival: non-negative, queue/draw/room_draw.py) skips even the HMAC.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import threading
from typing import Any

import redis

from anteroom.queue.connection.os_threads import off_the_loop
from anteroom.queue.connection.storage_errors import StorageError, storage_errors
from anteroom.queue.draw.receipt_keys import ReceiptSigner
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.queue.rooms.room_hash import stored
from anteroom.sdk import draw
from anteroom.sdk.merkle import Tree

log = logging.getLogger("anteroom")

# Receipts kept signed per opening: ~1.7 kB each at 100,000 entrants, so ~35 MB at most.
MEMO = 20_000


class DrawnOpening:
    """One opening's drawn list, as a tree and an index: what its receipts are made from."""

    def __init__(
        self, room: dict[str, Any], root: str, salt: bytes, ids: list[str], signer: ReceiptSigner
    ) -> None:
        self.root = root
        self.room, self.opening = str(room["slug"]), int(room.get("opensAt") or 0)
        # a draw across regions: the rank is in this region's list (queue/regions/shared_draw.py)
        self.region = (room.get("draw") or {}).get("region") or None
        self.signer = signer
        self.tree = Tree([e.encode("ascii") for e in ids])
        # Keyed by the id's 32 raw bytes (half a hex str's memory); ranks are 0-based here.
        self.rank_of = {bytes.fromhex(e): rank for rank, e in enumerate(ids)}
        # HMAC-SHA-256 keyed with the salt (draw.entrant_id): the key's pads hashed once.
        self.salted = hmac.new(salt, digestmod=hashlib.sha256)
        self.receipt_at = functools.lru_cache(maxsize=MEMO)(self._make)

    def receipt(self, vid: str) -> str | None:
        """``vid``'s receipt when it is an entrant of this draw, else None."""
        mac = self.salted.copy()
        mac.update(vid.encode("utf-8"))
        rank = self.rank_of.get(mac.digest())
        return None if rank is None else self.receipt_at(rank, mac.hexdigest())

    def _make(self, rank: int, entrant: str) -> str:
        claims = draw.ReceiptClaims(
            self.room, self.opening, entrant, rank + 1, self.tree.proof(rank), self.region
        )
        return draw.make_receipt(claims, self.signer.kid, self.signer.sign)


class ReceiptBook:
    """This process's drawn openings, one per room (the latest), read when first needed."""

    def __init__(self, client: redis.Redis, keys: KeySpace, signer: ReceiptSigner) -> None:
        self.client, self.keys, self.signer = client, keys, signer
        self._openings: dict[str, DrawnOpening] = {}
        self._loading = threading.Lock()
        self._pending: set[tuple[str, str]] = set()
        self._pending_lock = threading.Lock()

    def receipt(self, room: dict[str, Any], vid: str, order_key: int | None = None) -> str | None:
        """``vid``'s receipt in ``room``'s made draw, or None (no draw, not an entrant, or the
        draw's tree not built in this process yet: :meth:`prepare` builds it in the
        background, never in the request, and the next answer carries the receipt).

        ``order_key``: the spot's, when the answer knows it; a non-negative one is a later
        arrival's.
        """
        made = room.get("draw")
        if made is None or not made.get("root") or (order_key is not None and order_key >= 0):
            return None
        opening = self._openings.get(room["id"])
        if opening is None or opening.root != made["root"]:
            self.prepare_later(room)
            return None
        return opening.receipt(vid)

    def prepare_later(self, room: dict[str, Any]) -> None:
        """Build ``room``'s drawn opening in a background thread, unless one builds it."""
        key = (room["id"], room["draw"]["root"])
        with self._pending_lock:
            if key in self._pending:
                return
            self._pending.add(key)
        threading.Thread(
            target=self._prepare_then_forget, args=(room, key), name="anteroom-receipts",
            daemon=True,
        ).start()  # fmt: skip

    def _prepare_then_forget(self, room: dict[str, Any], key: tuple[str, str]) -> None:
        try:
            self.prepare(room)
        except StorageError:
            pass  # Redis failed: the next answer asks again
        except Exception:  # a thread's failure must be seen, and the next answer asks again
            log.exception("receipts: the tree of %s's draw was not built", room["id"])
        finally:
            with self._pending_lock:
                self._pending.discard(key)

    def prepare(self, room: dict[str, Any]) -> DrawnOpening | None:
        """Build ``room``'s drawn opening now (the draw worker calls it as it makes the draw,
        a background thread as a process first sees one); None when it has no made draw."""
        made = room.get("draw")
        if made is None or not made.get("root"):
            return None
        opening = self._openings.get(room["id"])
        if opening is not None and opening.root == made["root"]:
            return opening
        return self._load(room, made["root"])

    def _load(self, room: dict[str, Any], root: str) -> DrawnOpening:
        # One build at a time in a process: the first polls after a draw all want it.
        with self._loading:
            opening = self._openings.get(room["id"])
            if opening is not None and opening.root == root:
                return opening
            names = self.keys.room_keys(room["id"])
            with storage_errors():
                pipe = self.client.pipeline(transaction=False)
                pipe.hmget(names["room"], [stored("drawSalt"), stored("drawRoot")])
                pipe.lrange(names["drawn"], 0, -1)
                (salt, stored_root), ids = pipe.execute()
            if stored_root != root or not salt:
                # This process's room is not Redis's (a newer opening): no receipts until
                # the directory catches up, and nothing wrong is signed meanwhile.
                ids = []
            # The tree and the index: a second or more of CPU at 100,000 entrants.
            opening = off_the_loop(
                DrawnOpening, room, root, bytes.fromhex(salt or ""), ids, self.signer
            )
            if ids and opening.tree.root != root:
                opening = DrawnOpening(room, root, b"", [], self.signer)
            self._openings[room["id"]] = opening
            return opening
