"""A draw anyone can check (docs/draw.md): commitment, order, root, receipts.

Standard library only, so a sceptical visitor can run it (``anteroom verify-draw``). The rules:

- **Seed**: 32 random bytes, published as 64 lowercase hex characters. **Commitment**: the
  SHA-256 hex of those 64 characters as text (``printf %s SEED | sha256sum``), published when
  the opening is scheduled, long before the seed.
- **Entrant id**: HMAC-SHA-256 keyed with the opening's salt over the visitor's id, hex. The salt
  is never published, so an id says nothing of the visitor and cannot be guessed from a list of
  likely visitors; the visitor learns their own id from their receipt.
- **Order key**: ``HMAC-SHA-1(key = the seed's 32 bytes, message = BEACON ":" ENTRANT_ID)``, hex,
  where ``BEACON`` is the public beacon's value for the round named at commitment (lowercase
  hex, e.g. drand's ``randomness``) or the empty string when the room names none. The drawn
  order sorts entrants by (order key, entrant id): the id breaks ties, which do not happen in
  practice but must not be left to a sort's whims.
- **Root**: the RFC 6962 Merkle tree head (:mod:`anteroom.sdk.merkle`) whose leaves are the
  entrant ids' ASCII text **in drawn order**, so the root fixes the order as well as the set, and
  a receipt's inclusion proof at index ``rank - 1`` proves the rank itself.

Why HMAC-SHA-1 and not the issue's HMAC-SHA-256: the shuffle runs inside Redis Lua (lua/_draw.lua),
whose one native hash is ``redis.sha1hex``; a pure-Lua SHA-256 over 100,000 entrants would block
Redis for seconds. What the order needs is a pseudo-random function keyed by the secret seed:
unpredictable to anyone without the seed until it is revealed, recomputable by everyone after.
HMAC is a PRF when its hash's compression function is one (Bellare 2006); SHA-1's known attacks
are collisions, which HMAC's security does not rest on (RFC 6151 makes the same argument for
HMAC-MD5; NIST SP 800-107 still allows HMAC-SHA-1). Nothing an entrant controls can steer their
key: entrant ids are hashes the service computes. The operator, who knows the seed, could make
identities until one ranks well, whatever the hash: that is what the beacon is for, whose value
nobody knows at commitment. Cost (bench/draw.py): about 8 us of Redis a key, twice a bare
``redis.sha1hex``; 100,000 in one script call hold Redis for about 0.8 s, so the engine should key
entrants as they enter, or in batches, not in one call.

Receipts are ``rc1.<kid>.<payload>.<sig>`` like the service's tokens: ``payload`` is base64url of
compact JSON ``{"room", "opening", "entrant", "rank", "proof"}``; ``sig`` is the Ed25519
signature (RFC 8032) of the text before its last dot, by the key the fairness document publishes
as ``receiptKeys[kid]`` (base64url of the 32-byte public key). The check is a hook: pass
``verify_signature`` (a function of the receipt text, e.g. :func:`signature_checker`); without
one the signature is not checked and :attr:`Verdict.signature_checked` says so.
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from anteroom.sdk import ed25519
from anteroom.sdk.merkle import inclusion_proof, inclusion_proofs, root, verify_inclusion
from anteroom.sdk.tokens import b64url_decode, b64url_encode

__all__ = [
    "FAILURES",
    "RECEIPT",
    "ReceiptClaims",
    "Verdict",
    "beacon_value",
    "check_draw",
    "check_receipt",
    "commitment",
    "drawn_order",
    "entrant_id",
    "guarantee",
    "inclusion_proof",
    "inclusion_proofs",
    "keyed_order",
    "make_receipt",
    "new_seed",
    "order_key",
    "read_receipt",
    "root",
    "signature_checker",
    "tree_root",
    "verify_inclusion",
]

RECEIPT = "rc1"
_CLAIMS = {"room", "opening", "entrant", "rank", "proof"}
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_HEX = re.compile(r"(?:[0-9a-f]{2})*\Z")
_KID = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")

# Every failure a check can name, in the order check_draw and check_receipt look for them.
FAILURES = {
    "unreadable": "the fairness document or the entrant list cannot be fetched or parsed",
    "malformed": "the fairness document lacks a field or has one of the wrong form",
    "seed-not-revealed": "the draw has no seed yet: nothing to check before the shuffle",
    "commitment-mismatch": "the revealed seed does not hash to the published commitment",
    "duplicate-entrant": "an entrant id is listed twice",
    "entrant-dropped": "fewer entrants are listed than the document counts",
    "entrant-added": "more entrants are listed than the document counts",
    "order-mismatch": "the list is not in the order the seed draws",
    "root-mismatch": "the list's Merkle root is not the published root",
    "receipt-malformed": "the receipt is not an rc1 receipt",
    "receipt-signature": "the receipt's signature does not verify",
    "receipt-room": "the receipt is for another room",
    "receipt-opening": "the receipt is for another opening",
    "receipt-region": "the receipt is for another region's list than the document's",
    "receipt-entrant": "the receipt's entrant is not in the list",
    "receipt-rank": "the receipt's rank is not the entrant's place in the list",
    "receipt-proof": "the receipt's inclusion proof does not lead to the published root",
}


@dataclass(frozen=True)
class Verdict:
    """A check's outcome: ``failure`` is None when it passed, else a name from ``FAILURES``."""

    failure: str | None = None
    detail: str = ""
    signature_checked: bool = False

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return self.failure is None


def _fail(name: str, detail: str) -> Verdict:
    return Verdict(name, f"{name}: {detail}")


def new_seed() -> str:
    """A fresh seed: 32 random bytes as 64 lowercase hex characters."""
    return secrets.token_hex(32)


def commitment(seed: str) -> str:
    """The published commitment to ``seed``: SHA-256 hex of its text."""
    return hashlib.sha256(seed.encode("ascii")).hexdigest()


def entrant_id(salt: bytes, visitor: str) -> str:
    """The published id of ``visitor``: HMAC-SHA-256 keyed with the opening's secret salt."""
    return hmac.new(salt, visitor.encode("utf-8"), hashlib.sha256).hexdigest()


def _check_draw_inputs(seed: str, beacon: str | None) -> None:
    if not isinstance(seed, str) or not _HEX64.match(seed):
        raise ValueError("a seed is 64 lowercase hex characters")
    if beacon is not None and (not isinstance(beacon, str) or not _HEX.match(beacon)):
        raise ValueError("a beacon value is lowercase hex")


def order_key(seed: str, entrant: str, beacon: str | None = None) -> str:
    """``entrant``'s order key: HMAC-SHA-1(seed bytes, beacon ":" entrant), hex (lua/_draw.lua)."""
    _check_draw_inputs(seed, beacon)
    message = f"{beacon or ''}:{entrant}".encode("ascii")
    return hmac.new(bytes.fromhex(seed), message, hashlib.sha1).hexdigest()


_RUN = 4_096  # entrants sorted at once by drawn_order (see there)


def drawn_order(seed: str, entrants: Sequence[str], beacon: str | None = None) -> list[str]:
    """``entrants`` in drawn order: by order key, then by id. ValueError on a repeated id."""
    return [entrant for _, entrant in keyed_order(seed, entrants, beacon)]


def keyed_order(
    seed: str, entrants: Sequence[str], beacon: str | None = None
) -> list[tuple[str, str]]:
    """(order key, id) of ``entrants`` in drawn order (:func:`drawn_order` with the keys it
    sorted by). ValueError on a repeated id."""
    _check_draw_inputs(seed, beacon)
    if len(set(entrants)) != len(entrants):
        raise ValueError("an entrant id is listed twice")
    key = bytes.fromhex(seed)
    prefix = f"{beacon or ''}:"
    # One HMAC object per seed, copied per entrant: the key's pads are hashed once.
    base = hmac.new(key, prefix.encode("ascii"), hashlib.sha1)

    def sort_key(entrant: str) -> tuple[str, str]:
        mac = base.copy()
        mac.update(entrant.encode("ascii"))
        return mac.hexdigest(), entrant

    keyed = [sort_key(entrant) for entrant in entrants]
    if len(keyed) <= _RUN:
        return sorted(keyed)
    # Sorted in runs merged in Python: the same order as one sort (the keys are unique), but
    # a thread drawing 100,000 gives the GIL up between runs instead of holding it ~0.7 s in
    # one C sort, which would stall a gevent worker's every request
    # (queue/connection/os_threads.py).
    runs = [sorted(keyed[at : at + _RUN]) for at in range(0, len(keyed), _RUN)]
    return list(heapq.merge(*runs))


def tree_root(ordered: Sequence[str]) -> str:
    """The Merkle root over entrant ids in drawn order (leaves: each id's ASCII text)."""
    return root([e.encode("ascii") for e in ordered])


def beacon_value(document: Mapping[str, Any]) -> str | None:
    """The beacon value a fairness document names: ``beacon`` as hex, or its ``value``."""
    beacon = document.get("beacon")
    if isinstance(beacon, Mapping):
        beacon = beacon.get("value")
    if beacon is not None and (not isinstance(beacon, str) or not _HEX.match(beacon)):
        raise ValueError("beacon is neither null, lowercase hex nor {value: hex}")
    return beacon


def guarantee(document: Mapping[str, Any]) -> str:
    """Which guarantee a draw had: its seed's commitment alone, or that and a beacon round.

    With the commitment alone, the operator (who knows the seed) could have made identities
    until one ranked well; a beacon value nobody knew at commitment rules that out. The beacon's
    own signature (drand's BLS) is not checked here: fetch the round from the beacon to compare.
    """
    beacon = document.get("beacon")
    if not beacon:
        return "guarantee: commitment only"
    if isinstance(beacon, Mapping) and "round" in beacon:
        where = f" of {beacon['url']}" if isinstance(beacon.get("url"), str) else ""
        return f"guarantee: commitment + beacon round {beacon['round']}{where}"
    return "guarantee: commitment + beacon"


def _first_repeat(entrants: Sequence[str]) -> str:
    seen: set[str] = set()
    for entrant in entrants:
        if entrant in seen:
            return entrant
        seen.add(entrant)
    return ""


def check_draw(document: Mapping[str, Any], entrants: Sequence[str]) -> Verdict:
    """Check one opening's fairness document against its entrant list (ids in drawn order).

    Looks, in this order, for: a malformed document, no seed yet, a seed that is not the one
    committed to, a repeated id, a dropped or added entrant (against ``entrants``, the count),
    a list out of drawn order, a root that is not the list's. The first one found is returned.
    """
    if not isinstance(document, Mapping):
        return _fail("malformed", "the fairness document is not a JSON object")
    for name in ("commitment", "root"):
        if not isinstance(document.get(name), str) or not _HEX64.match(document[name]):
            return _fail("malformed", f"{name} is not 64 lowercase hex characters")
    count = document.get("entrants")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return _fail("malformed", "entrants is not a count")
    if not all(isinstance(e, str) and _HEX64.match(e) for e in entrants):
        return _fail("malformed", "an entrant id is not 64 lowercase hex characters")
    try:
        beacon = beacon_value(document)
    except ValueError as exc:
        return _fail("malformed", str(exc))
    seed = document.get("seed")
    if seed is None:
        return _fail("seed-not-revealed", "seed is null")
    if not isinstance(seed, str) or not _HEX64.match(seed):
        return _fail("malformed", "seed is not 64 lowercase hex characters")
    if commitment(seed) != document["commitment"]:
        return _fail("commitment-mismatch", f"SHA-256(seed) is {commitment(seed)}")
    if len(set(entrants)) != len(entrants):
        return _fail("duplicate-entrant", _first_repeat(entrants))
    if len(entrants) < count:
        return _fail("entrant-dropped", f"{len(entrants)} listed, {count} counted")
    if len(entrants) > count:
        return _fail("entrant-added", f"{len(entrants)} listed, {count} counted")
    expected = drawn_order(seed, entrants, beacon)
    for rank, (listed, drawn) in enumerate(zip(entrants, expected, strict=True), start=1):
        if listed != drawn:
            return _fail("order-mismatch", f"rank {rank} is {drawn}, the list says {listed}")
    head = tree_root(entrants)
    if head != document["root"]:
        return _fail("root-mismatch", f"the list's root is {head}")
    return Verdict(detail=f"draw of {count} entrants checked; {guarantee(document)}")


@dataclass(frozen=True)
class ReceiptClaims:
    """What a receipt states: the room, the opening (its ``opensAt``), the id, rank and proof;
    in a room across regions also the region whose list the rank and proof are in (a receipt
    of a room in one region has no ``region`` field at all)."""

    room: str
    opening: int
    entrant: str
    rank: int
    proof: list[str]
    region: str | None = None


def make_receipt(claims: ReceiptClaims, kid: str, sign: Callable[[bytes], bytes]) -> str:
    """An ``rc1`` receipt: ``sign`` turns the signed part's bytes into the signature's."""
    if not _KID.match(kid):
        raise ValueError("a key id is 1-32 base64url characters")
    fields = {k: v for k, v in asdict(claims).items() if k != "region" or v is not None}
    body = json.dumps(fields, separators=(",", ":"), sort_keys=True).encode("utf-8")
    signed_part = f"{RECEIPT}.{kid}.{b64url_encode(body)}"
    return f"{signed_part}.{b64url_encode(sign(signed_part.encode('ascii')))}"


def read_receipt(text: str) -> ReceiptClaims:
    """The claims of an ``rc1`` receipt (its signature unchecked); ValueError if malformed."""
    parts = text.split(".") if isinstance(text, str) else []
    if len(parts) != 4 or parts[0] != RECEIPT or not _KID.match(parts[1]):
        raise ValueError("not rc1.<kid>.<payload>.<signature>")
    try:
        b64url_decode(parts[3])
        raw = json.loads(b64url_decode(parts[2]))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("payload or signature is not base64url (JSON)") from exc
    if not isinstance(raw, dict) or set(raw) - {"region"} != _CLAIMS:
        raise ValueError("payload is not {room, opening, entrant, rank, proof[, region]}")
    claims = ReceiptClaims(**raw)
    if not (
        (claims.region is None or isinstance(claims.region, str))
        and isinstance(claims.room, str)
        and isinstance(claims.opening, int)
        and isinstance(claims.entrant, str)
        and _HEX64.match(claims.entrant)
        and isinstance(claims.rank, int)
        and not isinstance(claims.rank, bool)
        and claims.rank >= 1
        and isinstance(claims.proof, list)
        and all(isinstance(h, str) and _HEX64.match(h) for h in claims.proof)
    ):
        raise ValueError("a receipt field has the wrong form")
    return claims


def signature_checker(receipt_keys: Mapping[str, Any]) -> Callable[[str], bool]:
    """A ``verify_signature`` hook: True when a receipt is signed by ``receipt_keys[kid]``.

    ``receipt_keys`` maps key ids to base64url Ed25519 public keys (a fairness document's
    ``receiptKeys``); a receipt of a kid not listed, or a key of the wrong form, fails.
    """

    def verify(receipt: str) -> bool:
        signed_part, _, signature = receipt.rpartition(".")
        kid = signed_part.split(".")[1] if signed_part.count(".") == 2 else ""
        key = receipt_keys.get(kid)
        try:
            public = b64url_decode(key) if isinstance(key, str) else b""
            return ed25519.verify(public, signed_part.encode("ascii"), b64url_decode(signature))
        except (ValueError, UnicodeEncodeError):
            return False

    return verify


def check_receipt(
    document: Mapping[str, Any],
    entrants: Sequence[str],
    receipt: str,
    verify_signature: Callable[[str], bool] | None = None,
) -> Verdict:
    """Check a receipt against a fairness document and its list, which check_draw accepted.

    In this order: the receipt's form, its signature (only with ``verify_signature``), its room
    and opening (against the document's ``room`` and ``opensAt`` when it has them), its entrant
    in the list at its rank, and its proof against the published root.
    """
    try:
        claims = read_receipt(receipt)
    except ValueError as exc:
        return _fail("receipt-malformed", str(exc))
    if verify_signature is not None and not verify_signature(receipt):
        return _fail("receipt-signature", "the signature is not the room's")
    room, opening = document.get("room"), document.get("opensAt")
    if room is not None and claims.room != room:
        return _fail("receipt-room", f"receipt for {claims.room!r}, draw of {room!r}")
    if opening is not None and claims.opening != opening:
        return _fail("receipt-opening", f"receipt for {claims.opening}, draw of {opening}")
    if claims.region != document.get("region"):
        # a rank in one region's list is not a rank in another's, nor in a one-region draw
        return _fail(
            "receipt-region", f"receipt for {claims.region!r}, list of {document.get('region')!r}"
        )
    if claims.rank > len(entrants) or entrants[claims.rank - 1] != claims.entrant:
        # Only a receipt that fails looks through the whole list, to say which way it fails.
        if claims.entrant not in entrants:
            return _fail("receipt-entrant", f"{claims.entrant} is not listed")
        return _fail("receipt-rank", f"rank {claims.rank} is not {claims.entrant}'s place")
    leaf = claims.entrant.encode("ascii")
    if not verify_inclusion(
        leaf, claims.rank - 1, len(entrants), claims.proof, document.get("root")
    ):
        return _fail("receipt-proof", "the proof does not lead to the published root")
    return Verdict(
        detail=f"receipt for rank {claims.rank} of {len(entrants)} checked",
        signature_checked=verify_signature is not None,
    )
