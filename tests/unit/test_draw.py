"""A draw anyone can check (anteroom.sdk.draw): honest draws pass, each tampering is named.

The Merkle tree is held to the Certificate Transparency reference vectors (RFC 6962's, as
google/certificate-transparency's merkle_tree_test.cc publishes them and every CT log agrees on)
and to RFC 6962's recursive definition written out below; the checks to property tests over
random draws of 1..300 entrants; the command to its exit codes, run as a visitor would.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import os
import random
import re
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anteroom.sdk import draw, merkle
from anteroom.sdk import verify_draw as checker
from anteroom.sdk.draw import ReceiptClaims
from anteroom.sdk.tokens import b64url_encode
from fixtures.make_draw_fixtures import genuine, sign
from helpers import verify_draw

ROOT = Path(__file__).resolve().parents[2]
ROOM, OPENING = "spring-drop", 1_767_225_600_000

# RFC 6962 reference leaves and tree heads for sizes 0..8, and two inclusion proofs (0-based).
CT_LEAVES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
CT_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_PROOFS = {
    0: [
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    5: [
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
}


# RFC 6962 §2.1 as written: MTH and PATH by the recursive split at the largest power of two < n.
def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def rfc_root(leaves: Sequence[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = _split(len(leaves))
    return hashlib.sha256(b"\x01" + rfc_root(leaves[:k]) + rfc_root(leaves[k:])).digest()


def rfc_path(m: int, leaves: Sequence[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if m < k:
        return [*rfc_path(m, leaves[:k]), rfc_root(leaves[k:])]
    return [*rfc_path(m - k, leaves[k:]), rfc_root(leaves[:k])]


# A draw as the service will publish it.
class Draw:
    """An honest draw of ``size`` entrants: its fairness document, list and receipts."""

    def __init__(self, size: int, seed: str, beacon: str | None = None) -> None:
        salt = secrets.token_bytes(16)
        visitors = [f"visitor-{i}" for i in range(size)]
        self.entrants = draw.drawn_order(seed, [draw.entrant_id(salt, v) for v in visitors], beacon)
        self.document: dict[str, Any] = {
            "room": ROOM,
            "opensAt": OPENING,
            "commitment": draw.commitment(seed),
            "seed": seed,
            "beacon": None if beacon is None else {"round": 1, "value": beacon},
            "root": draw.tree_root(self.entrants),
            "entrants": size,
        }

    def receipt(self, at: int, **changes: Any) -> str:
        leaves = [e.encode("ascii") for e in self.entrants]
        fields = {
            "room": ROOM,
            "opening": OPENING,
            "entrant": self.entrants[at - 1],
            "rank": at,
            "proof": merkle.inclusion_proof(leaves, at - 1),
        } | changes
        return draw.make_receipt(ReceiptClaims(**fields), "k1", sign)


seeds = st.binary(min_size=32, max_size=32).map(bytes.hex)
beacons = st.one_of(st.none(), st.binary(min_size=32, max_size=32).map(bytes.hex))
sizes = st.integers(1, 300)


# The Merkle tree.
def test_the_tree_heads_are_rfc_6962s_reference_roots() -> None:
    assert [merkle.root(CT_LEAVES[:n]) for n in range(9)] == CT_ROOTS
    assert merkle.root([]) == hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("index", sorted(CT_PROOFS))
def test_inclusion_proofs_are_rfc_6962s_reference_paths(index: int) -> None:
    assert merkle.inclusion_proof(CT_LEAVES, index) == CT_PROOFS[index]
    assert merkle.verify_inclusion(CT_LEAVES[index], index, 8, CT_PROOFS[index], CT_ROOTS[8])


def test_every_proof_of_every_small_tree_is_the_rfcs_and_verifies() -> None:
    # Sizes 1..70 cover every shape of the split, odd right edges rising through many levels.
    leaves = [i.to_bytes(2, "big") for i in range(70)]
    for size in range(1, 71):
        head, proofs = merkle.inclusion_proofs(leaves[:size])
        assert head == rfc_root(leaves[:size]).hex()
        for index, proof in enumerate(proofs):
            assert proof == [h.hex() for h in rfc_path(index, leaves[:size])]
            assert merkle.verify_inclusion(leaves[index], index, size, proof, head)


def test_a_leaf_cannot_pass_for_an_inner_node() -> None:
    # Without domain separation, the two children's hashes concatenated would be a "leaf".
    left, right = b"a", b"b"
    head = merkle.root([left, right])
    forged = merkle.leaf_hash(left) + merkle.leaf_hash(right)
    assert merkle.root([forged]) != head
    assert not merkle.verify_inclusion(forged, 0, 1, [], head)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 300), data=st.data())
def test_a_mangled_proof_fails(size: int, data: st.DataObject) -> None:
    leaves = [i.to_bytes(2, "big") for i in range(size)]
    index = data.draw(st.integers(0, size - 1))
    proof = merkle.inclusion_proof(leaves, index)
    head = merkle.root(leaves)
    assert not merkle.verify_inclusion(leaves[index], index, size, [*proof, "00" * 32], head)
    assert not merkle.verify_inclusion(leaves[index] + b"x", index, size, proof, head)
    if proof:
        flipped = [*proof[:-1], ("%064x" % (int(proof[-1], 16) ^ 1))]
        assert not merkle.verify_inclusion(leaves[index], index, size, flipped, head)
        assert not merkle.verify_inclusion(leaves[index], index, size, proof[:-1], head)
        other = index ^ 1 if index ^ 1 < size else index - 1
        assert not merkle.verify_inclusion(leaves[index], other, size, proof, head)


# The order and the commitment.
def test_the_commitment_is_the_sha256_a_visitor_computes_with_sha256sum() -> None:
    seed = "ab" * 32
    assert draw.commitment(seed) == hashlib.sha256(seed.encode()).hexdigest()


def test_the_order_key_is_hmac_sha1_of_beacon_and_id_keyed_with_the_seed_bytes() -> None:
    seed, entrant, beacon = "01" * 32, "cd" * 32, "ef" * 32
    expected = hmac.new(bytes.fromhex(seed), f"{beacon}:{entrant}".encode(), hashlib.sha1)
    assert draw.order_key(seed, entrant, beacon) == expected.hexdigest()
    assert draw.order_key(seed, entrant) == draw.order_key(seed, entrant, "")
    assert draw.order_key(seed, entrant) != draw.order_key(seed, entrant, beacon)


@settings(max_examples=40, deadline=None)
@given(size=sizes, seed=seeds, beacon=beacons)
def test_the_drawn_order_sorts_by_order_key_whatever_order_ids_come_in(
    size: int, seed: str, beacon: str | None
) -> None:
    ids = [secrets.token_hex(32) for _ in range(size)]
    drawn = draw.drawn_order(seed, ids, beacon)
    keys = [draw.order_key(seed, e, beacon) for e in drawn]
    assert keys == sorted(keys) and sorted(drawn) == sorted(ids)
    assert draw.drawn_order(seed, list(reversed(ids)), beacon) == drawn


def test_an_entrant_id_depends_on_the_salt_and_hides_the_visitor() -> None:
    a, b = secrets.token_bytes(16), secrets.token_bytes(16)
    assert draw.entrant_id(a, "v1") == draw.entrant_id(a, "v1") != draw.entrant_id(b, "v1")
    assert "v1" not in draw.entrant_id(a, "v1") and len(draw.entrant_id(a, "v1")) == 64


@pytest.mark.parametrize("seed", ["", "AB" * 32, "ab" * 31, "zz" * 32])
def test_a_seed_that_is_not_64_lowercase_hex_is_refused(seed: str) -> None:
    with pytest.raises(ValueError):
        draw.order_key(seed, "ab" * 32)


# Checking a draw and a receipt.
@settings(max_examples=40, deadline=None)
@given(size=sizes, seed=seeds, beacon=beacons, data=st.data())
def test_every_honest_draw_and_receipt_is_accepted(
    size: int, seed: str, beacon: str | None, data: st.DataObject
) -> None:
    honest = Draw(size, seed, beacon)
    assert draw.check_draw(honest.document, honest.entrants).ok
    rank = data.draw(st.integers(1, size))
    verdict = draw.check_receipt(honest.document, honest.entrants, honest.receipt(rank), genuine)
    assert verdict.ok and verdict.signature_checked


@settings(max_examples=40, deadline=None)
@given(size=st.integers(2, 300), seed=seeds, beacon=beacons, data=st.data())
def test_each_tampering_with_a_draw_is_named(
    size: int, seed: str, beacon: str | None, data: st.DataObject
) -> None:
    honest = Draw(size, seed, beacon)
    doc, entrants = honest.document, honest.entrants
    i, j = sorted(
        data.draw(st.lists(st.integers(0, size - 1), min_size=2, max_size=2, unique=True))
    )

    def failure(document: dict[str, Any], listed: list[str]) -> str | None:
        return draw.check_draw(document, listed).failure

    assert failure(doc | {"seed": draw.new_seed()}, entrants) == "commitment-mismatch"
    assert failure(doc | {"seed": None}, entrants) == "seed-not-revealed"
    dropped = entrants[:i] + entrants[i + 1 :]
    assert failure(doc, dropped) == "entrant-dropped"
    # Dropped and recounted: the order still holds, the root gives it away.
    assert failure(doc | {"entrants": size - 1}, dropped) == "root-mismatch"
    added = draw.drawn_order(seed, [*entrants, secrets.token_hex(32)], beacon)
    assert failure(doc, added) == "entrant-added"
    assert failure(doc | {"entrants": size + 1}, added) == "root-mismatch"
    swapped = list(entrants)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    assert failure(doc, swapped) == "order-mismatch"
    assert failure(doc, [*entrants[:-1], entrants[0]]) == "duplicate-entrant"
    # Another beacon value draws another order (a small draw may draw the same one by chance).
    other_beacon = secrets.token_hex(32)
    if draw.drawn_order(seed, entrants, other_beacon) != entrants:
        assert failure(doc | {"beacon": other_beacon}, entrants) == "order-mismatch"
    assert failure(doc | {"root": merkle.root([b"x"])}, entrants) == "root-mismatch"


@settings(max_examples=40, deadline=None)
@given(size=st.integers(2, 300), seed=seeds, data=st.data())
def test_each_forged_receipt_is_named(size: int, seed: str, data: st.DataObject) -> None:
    honest = Draw(size, seed)
    rank = data.draw(st.integers(1, size))
    other = rank % size + 1
    leaves = [e.encode("ascii") for e in honest.entrants]

    def failure(receipt: str) -> str | None:
        return draw.check_receipt(honest.document, honest.entrants, receipt, genuine).failure

    assert failure(honest.receipt(rank, rank=other)) == "receipt-rank"
    assert failure(honest.receipt(rank, room="other-room")) == "receipt-room"
    assert failure(honest.receipt(rank, opening=OPENING + 1)) == "receipt-opening"
    assert failure(honest.receipt(rank, entrant=secrets.token_hex(32))) == "receipt-entrant"
    forged_proof = merkle.inclusion_proof(leaves, other - 1)
    if forged_proof != merkle.inclusion_proof(leaves, rank - 1):
        assert failure(honest.receipt(rank, proof=forged_proof)) == "receipt-proof"
    assert failure(honest.receipt(rank, proof=["00" * 32] * 3)) == "receipt-proof"
    payload = honest.receipt(rank).split(".")
    assert failure(".".join([*payload[:3], b64url_encode(b"x" * 32)])) == "receipt-signature"
    assert failure("rc1.k1.e30.AAAA") == "receipt-malformed"
    assert failure("st1.k1.e30.AAAA") == "receipt-malformed"


def test_every_failure_a_check_can_name_is_documented() -> None:
    # The names are what a visitor reads and a script matches: each must be in FAILURES.
    source = Path(draw.__file__).read_text("utf-8")
    named = set(re.findall(r'_fail\(\s*"([a-z-]+)"', source)) | {"unreadable"}
    assert named == set(draw.FAILURES)


def test_without_a_signature_check_the_verdict_says_it_did_not_check_one() -> None:
    honest = Draw(5, draw.new_seed())
    verdict = draw.check_receipt(honest.document, honest.entrants, honest.receipt(3))
    assert verdict.ok and not verdict.signature_checked


@pytest.mark.parametrize(
    "change",
    [{"commitment": "x"}, {"root": None}, {"entrants": "5"}, {"seed": 5}, {"beacon": "XYZ"}],
)
def test_a_malformed_document_is_named_not_raised(change: dict[str, Any]) -> None:
    honest = Draw(5, draw.new_seed())
    assert draw.check_draw(honest.document | change, honest.entrants).failure == "malformed"


def publish(folder: Path, honest: Draw, entrants: list[str] | None = None, **changes: Any) -> str:
    (folder / "entrants.json").write_text(json.dumps(entrants or honest.entrants))
    document = honest.document | {"entrantsUrl": "entrants.json"} | changes
    (folder / "fairness.json").write_text(json.dumps(document))
    return str(folder / "fairness.json")


def test_the_command_accepts_an_honest_draw_and_receipt(tmp_path: Path) -> None:
    honest = Draw(40, draw.new_seed(), secrets.token_hex(32))
    done = verify_draw("--fairness", publish(tmp_path, honest), "--receipt", honest.receipt(7))
    assert done.returncode == 0, done.stderr
    assert "draw of 40 entrants checked" in done.stdout
    assert "rank 7 of 40" in done.stdout and "signature was not checked" in done.stdout


def test_the_command_reads_openings_listed_in_one_report(tmp_path: Path) -> None:
    honest = Draw(10, draw.new_seed())
    (tmp_path / "entrants.txt").write_text("\n".join(honest.entrants) + "\n")
    earlier = {"opensAt": OPENING - 1, "seed": None, "commitment": "ab" * 32}
    opening = {k: v for k, v in honest.document.items() if k != "room"}
    report = {"room": ROOM, "openings": [earlier, opening | {"entrantsUrl": "entrants.txt"}]}
    (tmp_path / "fairness.json").write_text(json.dumps(report))
    fairness = str(tmp_path / "fairness.json")
    assert verify_draw("--fairness", fairness, "--receipt", honest.receipt(2)).returncode == 0


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        ("seed", "commitment-mismatch"),
        ("drop", "entrant-dropped"),
        ("swap", "order-mismatch"),
        ("receipt", "receipt-proof"),
        ("missing", "unreadable"),
    ],
)
def test_the_command_exits_1_naming_the_first_failure(
    tmp_path: Path, tamper: str, named: str
) -> None:
    honest = Draw(20, draw.new_seed())
    entrants = list(honest.entrants)
    receipt = honest.receipt(4)
    if tamper == "drop":
        entrants = entrants[1:]
    if tamper == "swap":
        entrants[0], entrants[1] = entrants[1], entrants[0]
    if tamper == "receipt":
        receipt = honest.receipt(4, proof=["00" * 32] * 5)
    fairness = publish(
        tmp_path,
        honest,
        entrants,
        seed=draw.new_seed() if tamper == "seed" else honest.document["seed"],
    )
    if tamper == "missing":
        fairness = str(tmp_path / "nowhere.json")
    done = verify_draw("--fairness", fairness, "--receipt", receipt)
    assert done.returncode == 1
    assert f"FAILED {named}" in done.stderr


def test_anteroom_verify_draw_runs_without_settings_or_redis(tmp_path: Path) -> None:
    from anteroom.ops import cli

    honest = Draw(3, draw.new_seed())
    assert cli.main(["verify-draw", "--fairness", publish(tmp_path, honest)]) == 0
    assert cli.main(["verify-draw", "--fairness", str(tmp_path / "none.json")]) == 1


def test_the_verifier_imports_with_the_standard_library_alone() -> None:
    done = verify_draw("--help")
    assert done.returncode == 0 and "--fairness" in done.stdout
    code = (
        "import anteroom.sdk.verify_draw, sys; "
        "assert not {'flask', 'redis', 'werkzeug'} & set(sys.modules), sorted(sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "backend")}
    checked = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``tmp_path`` served over http://127.0.0.1 (the base URL), as a room serves its report."""
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


def test_the_command_fetches_a_report_and_its_entrants_by_url(tmp_path: Path, served: str) -> None:
    honest = Draw(30, draw.new_seed())
    (tmp_path / "queue").mkdir()
    publish(tmp_path / "queue", honest)  # entrantsUrl "entrants.json": beside the report
    done = verify_draw("--fairness", served + "queue/fairness.json", "--receipt", honest.receipt(9))
    assert done.returncode == 0, done.stderr
    missing = verify_draw("--fairness", served + "queue/none.json")
    assert missing.returncode == 1 and "FAILED unreadable" in missing.stderr


def test_a_fetched_report_names_its_list_on_its_own_host_never_a_local_file() -> None:
    base = "https://shop.example/queue/drop/fairness.json?key=pk_1"
    assert checker.beside(base, "/queue/drop/fairness/entrants.json") == (
        "https://shop.example/queue/drop/fairness/entrants.json"
    )
    assert checker.beside(base, "fairness/entrants.json").startswith("https://shop.example/")
    assert checker.beside(base, "/etc/passwd") == "https://shop.example/etc/passwd"
    assert checker.beside("/tmp/report/fairness.json", "list.json") == "/tmp/report/list.json"


def test_a_pool_larger_than_one_sorted_run_is_in_the_order_one_sort_gives() -> None:
    # drawn_order sorts runs of entrants and merges them (so a thread gives the GIL up); the
    # order must be the definition's: by HMAC-SHA-1(seed, "<beacon>:<id>"), then by id.
    rng = random.Random(32)
    ids = [f"{rng.getrandbits(256):064x}" for _ in range(10_001)]
    seed, beacon = "5a" * 32, "c3" * 32
    for value in (None, beacon):
        prefix = f"{value or ''}:"

        def defined(entrant: str, prefix: str = prefix) -> tuple[str, str]:
            mac = hmac.new(bytes.fromhex(seed), (prefix + entrant).encode(), hashlib.sha1)
            return mac.hexdigest(), entrant

        assert draw.drawn_order(seed, ids, value) == sorted(ids, key=defined)
