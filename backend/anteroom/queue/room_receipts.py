"""Receipts for a draw's entrants (SPEC "A draw anyone can check"), made once per process.

After the draw, each pre-queue entrant's queue answers carry ``receipt``: an ``rc1`` receipt
(:func:`anteroom.sdk.draw.make_receipt`) of the room's slug, the opening (its ``opensAt``), the
entrant's id, drawn rank and Merkle inclusion proof, signed with the room's receipt key
(receipt_keys.py). The proof needs the whole drawn list, so each process reads it once per
opening (with the opening's salt) and keeps the tree compact (:class:`~anteroom.sdk.merkle.Tree`)
and an index of ids to ranks; a poll then costs one HMAC of the visitor's id and a dict lookup,
and a receipt is signed once per visitor while it stays among the last ``MEMO`` made.

Rooms without a made draw cost a dict read; a spot whose ticket shows a post-draw order key
(a later arrival: non-negative, queue/room_draw.py) skips even the HMAC.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import threading
from typing import Any

import redis

from anteroom.queue.key_layout import KeySpace
from anteroom.queue.receipt_keys import ReceiptSigner
from anteroom.queue.room_hash import stored
from anteroom.queue.storage_errors import StorageError, storage_errors
from anteroom.sdk import draw
from anteroom.sdk.merkle import Tree

# Receipts kept signed per opening: ~1.7 kB each at 100,000 entrants, so ~35 MB at most.
MEMO = 20_000


class DrawnOpening:
    """One opening's drawn list, as a tree and an index: what its receipts are made from."""

    def __init__(
        self, room: dict[str, Any], root: str, salt: bytes, ids: list[str], signer: ReceiptSigner
    ) -> None:
        self.root = root
        self.room, self.opening = str(room["slug"]), int(room.get("opensAt") or 0)
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
            self.room, self.opening, entrant, rank + 1, self.tree.proof(rank)
        )
        return draw.make_receipt(claims, self.signer.kid, self.signer.sign)


class ReceiptBook:
    """This process's drawn openings, one per room (the latest), read when first needed."""

    def __init__(self, client: redis.Redis, keys: KeySpace, signer: ReceiptSigner) -> None:
        self.client, self.keys, self.signer = client, keys, signer
        self._openings: dict[str, DrawnOpening] = {}
        self._loading = threading.Lock()

    def receipt(self, room: dict[str, Any], vid: str, order_key: int | None = None) -> str | None:
        """``vid``'s receipt in ``room``'s made draw, or None (no draw, not an entrant).

        ``order_key``: the spot's, when the answer knows it; a non-negative one is a later
        arrival's. A Redis failure while reading the list gives no receipt this time.
        """
        made = room.get("draw")
        if made is None or not made.get("root") or (order_key is not None and order_key >= 0):
            return None
        opening = self._openings.get(room["id"])
        if opening is None or opening.root != made["root"]:
            try:
                opening = self._load(room, made["root"])
            except StorageError:
                return None
        return opening.receipt(vid)

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
            opening = DrawnOpening(room, root, bytes.fromhex(salt or ""), ids, self.signer)
            if ids and opening.tree.root != root:
                opening = DrawnOpening(room, root, b"", [], self.signer)
            self._openings[room["id"]] = opening
            return opening
