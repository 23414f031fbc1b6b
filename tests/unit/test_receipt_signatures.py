"""Receipts anyone can check: the service's Ed25519 receipt keys and the SDK's check of them.

The service derives a receipt key per keyring kid and signs with ``cryptography``; a visitor's
``anteroom verify-draw`` checks with the standard library against the fairness document's
``receiptKeys``. Also the compact tree the service reads proofs from, against the SDK's own.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from anteroom.queue.draw.receipt_keys import PURPOSE, ReceiptSigner
from anteroom.sdk import draw, ed25519, merkle
from anteroom.sdk.tokens import Keyring, b64url_decode, b64url_encode
from helpers import verify_draw

ROOT = Path(__file__).resolve().parents[2]
ROOM, OPENING = "spring-drop", 1_767_225_600_000


def honest_draw(size: int) -> tuple[dict[str, object], list[str]]:
    seed, salt = draw.new_seed(), secrets.token_bytes(16)
    ids = draw.drawn_order(seed, [draw.entrant_id(salt, f"v{i}") for i in range(size)])
    document = {
        "room": ROOM,
        "opensAt": OPENING,
        "commitment": draw.commitment(seed),
        "seed": seed,
        "root": draw.tree_root(ids),
        "entrants": size,
    }
    return document, ids


def receipt(ids: list[str], rank: int, signer: ReceiptSigner) -> str:
    tree = merkle.Tree([e.encode("ascii") for e in ids])
    claims = draw.ReceiptClaims(ROOM, OPENING, ids[rank - 1], rank, tree.proof(rank - 1))
    return draw.make_receipt(claims, signer.kid, signer.sign)


def test_every_process_sharing_the_keyring_signs_alike() -> None:
    # Workers and instances build their signer from ANTEROOM_KEYS: same key, same signatures.
    text = Keyring.generate("k1").serialize()
    a, b = ReceiptSigner(Keyring.parse(text)), ReceiptSigner(Keyring.parse(text))
    assert a.public_keys == b.public_keys and a.sign(b"x") == b.sign(b"x")
    assert ReceiptSigner(Keyring.generate("k1")).public_keys != a.public_keys


def test_the_published_key_is_the_one_derived_from_the_kids_secret() -> None:
    # The SDK's own arithmetic derives the same public key from the keyring's derived secret.
    keyring = Keyring.generate("k1")
    derived = keyring.derived_key("k1", PURPOSE)
    assert b64url_decode(ReceiptSigner(keyring).public_keys["k1"]) == ed25519.public_key(derived)


def test_a_receipt_signed_before_a_rotation_still_checks_while_its_kid_is_kept() -> None:
    old = Keyring.generate("k1")
    rotated = Keyring.from_mapping({"k2": secrets.token_bytes(32), "k1": old["k1"]})
    document, ids = honest_draw(9)
    before = receipt(ids, 4, ReceiptSigner(old))
    signer = ReceiptSigner(rotated)
    assert signer.kid == "k2" and set(signer.public_keys) == {"k1", "k2"}
    check = draw.signature_checker(signer.public_keys)
    assert draw.check_receipt(document, ids, before, check).ok
    assert draw.check_receipt(document, ids, receipt(ids, 4, signer), check).signature_checked


def test_a_receipt_signed_by_another_key_or_kid_is_named() -> None:
    document, ids = honest_draw(12)
    signer = ReceiptSigner(Keyring.generate("k1"))
    check = draw.signature_checker(signer.public_keys)
    forged = receipt(ids, 5, ReceiptSigner(Keyring.generate("k1")))
    assert draw.check_receipt(document, ids, forged, check).failure == "receipt-signature"
    other_kid = receipt(ids, 5, ReceiptSigner(Keyring.generate("k9")))
    assert draw.check_receipt(document, ids, other_kid, check).failure == "receipt-signature"
    bad_keys = draw.signature_checker({"k1": "not base64url!"})
    honest = receipt(ids, 5, signer)
    assert draw.check_receipt(document, ids, honest, bad_keys).failure == "receipt-signature"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 64, 65, 100])
def test_the_compact_tree_gives_the_sdks_proofs(size: int) -> None:
    leaves = [secrets.token_hex(32).encode("ascii") for _ in range(size)]
    tree = merkle.Tree(leaves)
    head, proofs = merkle.inclusion_proofs(leaves)
    assert tree.root == head and [tree.proof(i) for i in range(size)] == proofs
    with pytest.raises(IndexError):
        tree.proof(size)


def test_the_command_checks_the_signature_with_the_documents_receipt_keys(tmp_path: Path) -> None:
    document, ids = honest_draw(30)
    signer = ReceiptSigner(Keyring.generate("k1"))
    (tmp_path / "entrants.json").write_text(json.dumps(ids))
    published = document | {"entrantsUrl": "entrants.json", "receiptKeys": signer.public_keys}
    (tmp_path / "fairness.json").write_text(json.dumps(published))
    fairness = str(tmp_path / "fairness.json")

    done = verify_draw("--fairness", fairness, "--receipt", receipt(ids, 11, signer))
    assert done.returncode == 0, done.stderr
    assert "rank 11 of 30" in done.stdout and "not checked" not in done.stdout

    head, _, signature = receipt(ids, 11, signer).rpartition(".")
    other = ReceiptSigner(Keyring.generate("k1")).sign(head.encode("ascii"))
    forged = verify_draw("--fairness", fairness, "--receipt", f"{head}.{b64url_encode(other)}")
    assert forged.returncode == 1 and "FAILED receipt-signature" in forged.stderr
    assert signature != b64url_encode(other)
