"""A draw across regions (anteroom.sdk.regional_draw, verify-draw): pure, no Redis, no etcd."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import pytest

from anteroom.sdk import draw, merkle, regional_draw
from anteroom.sdk.draw import ReceiptClaims
from anteroom.sdk.regional_draw import RegionRoot
from anteroom.sdk.tokens import b64url_decode
from fixtures.make_draw_fixtures import sign
from helpers import verify_draw

ROOM, OPENING = "spring-drop", 1_767_225_600_000


class RegionalDraw:
    """Three regions' honest draws with one seed and beacon, as each region publishes them."""

    def __init__(self, sizes: dict[str, int], seed: str, beacon: str | None = None) -> None:
        self.seed, self.beacon = seed, beacon
        self.lists = {
            region: draw.drawn_order(seed, [secrets.token_hex(32) for _ in range(n)], beacon)
            for region, n in sizes.items()
        }
        self.roots = [RegionRoot(r, draw.tree_root(ids), len(ids)) for r, ids in self.lists.items()]

    def document(self, region: str) -> dict[str, Any]:
        ids = self.lists[region]
        return {
            "room": ROOM,
            "opensAt": OPENING,
            "region": region,
            "commitment": draw.commitment(self.seed),
            "seed": self.seed,
            "beacon": self.beacon,
            "root": draw.tree_root(ids),
            "entrants": len(ids),
            "entrantsUrl": f"{region}.json",
            "regions": [
                {
                    "region": r.region,
                    "root": r.root,
                    "entrants": r.entrants,
                    "entrantsUrl": f"{r.region}.json",
                }
                for r in self.roots
            ],
            "globalRoot": regional_draw.global_root(self.roots),
        }

    def receipt(self, region: str, rank: int) -> str:
        ids = self.lists[region]
        leaves = [e.encode("ascii") for e in ids]
        claims = ReceiptClaims(
            ROOM, OPENING, ids[rank - 1], rank, merkle.inclusion_proof(leaves, rank - 1), region
        )
        return draw.make_receipt(claims, "k1", sign)

    def publish(self, folder: Path, region: str, **changes: Any) -> str:
        for r, ids in self.lists.items():
            (folder / f"{r}.json").write_text(json.dumps(ids))
        (folder / "fairness.json").write_text(json.dumps(self.document(region) | changes))
        return str(folder / "fairness.json")


SIZES = {"eu": 30, "us": 20, "ap": 9}


def test_a_region_leaf_is_name_root_count_and_refuses_what_could_be_misread() -> None:
    head = "ab" * 32
    assert regional_draw.region_leaf("eu-west", head, 12) == f"eu-west:{head}:12".encode()
    for region, count in (("EU", 1), ("e:u", 1), ("", 1), ("eu", -1), ("eu", True)):
        with pytest.raises(ValueError):
            regional_draw.region_leaf(region, head, count)  # type: ignore[arg-type]


def test_the_global_root_is_rfc_6962_over_the_leaves_in_region_name_order() -> None:
    roots = [RegionRoot("us", "11" * 32, 3), RegionRoot("ap", "22" * 32, 0)]
    leaves = [f"ap:{'22' * 32}:0".encode(), f"us:{'11' * 32}:3".encode()]
    assert regional_draw.global_root(roots) == merkle.root(leaves)
    assert regional_draw.global_root(roots[::-1]) == merkle.root(leaves)
    index, proof = regional_draw.region_proof(roots, "us")
    assert index == 1 and merkle.verify_inclusion(leaves[1], 1, 2, proof, merkle.root(leaves))


@pytest.mark.parametrize("beacon", [None, "beef" * 8])
def test_the_merge_of_the_regions_lists_is_the_draw_of_all_their_entrants_at_once(
    beacon: str | None,
) -> None:
    # What makes the regions' draws one draw: the merge by key is the one-list order.
    regional = RegionalDraw(SIZES, draw.new_seed(), beacon)
    everyone = [e for ids in regional.lists.values() for e in ids]
    one_list = draw.drawn_order(regional.seed, everyone, beacon)
    merged = regional_draw.merged_order(regional.seed, regional.lists, beacon)
    assert [entrant for _, entrant in merged] == one_list
    for region, ids in regional.lists.items():
        for entrant in ids[:3]:
            rank = regional_draw.global_rank(regional.seed, regional.lists, region, entrant, beacon)
            assert rank == one_list.index(entrant) + 1
    assert regional_draw.global_rank(regional.seed, regional.lists, "eu", "00" * 32) == 0


def test_each_regions_document_passes_and_names_its_root_under_the_global_one() -> None:
    regional = RegionalDraw(SIZES, draw.new_seed())
    for region in SIZES:
        document = regional.document(region)
        assert draw.check_draw(document, regional.lists[region]).ok
        verdict = regional_draw.check_regions(document)
        assert verdict.ok, verdict.detail
        assert document["globalRoot"] in verdict.detail


@pytest.mark.parametrize(
    ("change", "failure"),
    [
        ({"globalRoot": "00" * 32}, "global-root-mismatch"),
        ({"region": "sa"}, "region-missing"),
        ({"regions": []}, "regions-malformed"),
        ({"globalRoot": None}, "regions-malformed"),
    ],
)
def test_each_tampering_with_the_regions_is_named(change: dict[str, Any], failure: str) -> None:
    regional = RegionalDraw(SIZES, draw.new_seed())
    assert regional_draw.check_regions(regional.document("eu") | change).failure == failure


def test_a_region_listed_with_another_root_or_count_than_its_draw_is_named() -> None:
    regional = RegionalDraw(SIZES, draw.new_seed())
    document = regional.document("eu")
    for tamper in ({"root": "00" * 32}, {"entrants": 29}):
        document["regions"] = [
            r | tamper if r["region"] == "eu" else r for r in regional.document("eu")["regions"]
        ]
        assert regional_draw.check_regions(document).failure == "region-root-mismatch"


def test_every_failure_the_regional_check_can_name_is_documented() -> None:
    sources = Path(regional_draw.__file__).read_text("utf-8")
    named = set(re.findall(r'_fail\(\s*"([a-z-]+)"', sources))
    checker = Path(regional_draw.__file__).with_name("verify_draw.py").read_text("utf-8")
    named |= set(re.findall(r'"(region-[a-z-]+|cross-region-[a-z]+)"', checker))
    named |= {"receipt-region"} & set(draw.FAILURES)
    assert named <= set(regional_draw.FAILURES) | set(draw.FAILURES)
    assert named - {"receipt-region"} == set(regional_draw.FAILURES) - {"receipt-region"}


def test_a_region_receipt_passes_only_against_its_own_regions_list() -> None:
    regional = RegionalDraw(SIZES, draw.new_seed())
    receipt = regional.receipt("us", 4)
    assert draw.read_receipt(receipt).region == "us"
    assert draw.check_receipt(regional.document("us"), regional.lists["us"], receipt).ok
    wrong = draw.check_receipt(regional.document("eu"), regional.lists["eu"], receipt)
    assert wrong.failure == "receipt-region"
    # a one-region document takes no receipt of a region, and a one-region receipt has no field
    plain = regional.document("us") | {"region": None}
    assert draw.check_receipt(plain, regional.lists["us"], receipt).failure == "receipt-region"
    one = draw.make_receipt(ReceiptClaims(ROOM, OPENING, "ab" * 32, 1, []), "k1", sign)
    assert "region" not in json.loads(b64url_decode(one.split(".")[2]))


def test_the_command_checks_every_region_and_reports_the_global_rank(tmp_path: Path) -> None:
    regional = RegionalDraw(SIZES, draw.new_seed(), "cafe" * 8)
    fairness = regional.publish(tmp_path, "ap")
    done = verify_draw("--fairness", fairness, "--receipt", regional.receipt("ap", 5))
    assert done.returncode == 0, done.stderr
    entrant = regional.lists["ap"][4]
    everyone = [e for ids in regional.lists.values() for e in ids]
    expected = draw.drawn_order(regional.seed, everyone, "cafe" * 8).index(entrant) + 1
    assert f"global rank {expected} of 59 (5 of 9 in ap)" in done.stdout
    assert "region eu: draw of 30 entrants checked" in done.stdout
    assert "region us: draw of 20 entrants checked" in done.stdout


@pytest.mark.parametrize(
    ("region", "tamper", "failure"),
    [
        ("us", "swap", "region-order-mismatch"),
        ("us", "drop", "region-root-mismatch"),
        ("eu", "copy", "cross-region-duplicate"),
    ],
)
def test_the_command_names_another_regions_tampered_list(
    tmp_path: Path, region: str, tamper: str, failure: str
) -> None:
    regional = RegionalDraw(SIZES, draw.new_seed())
    ids = regional.lists[region]
    if tamper == "swap":
        ids[0], ids[1] = ids[1], ids[0]
        # its published root is of the list as published: only the order betrays it
        regional.roots = [
            RegionRoot(r.region, draw.tree_root(regional.lists[r.region]), r.entrants)
            for r in regional.roots
        ]
    elif tamper == "drop":
        ids.pop()
    else:
        # one of ap's ids listed by eu too, in its drawn place, with roots to match
        regional.lists["eu"] = draw.drawn_order(regional.seed, [*ids, regional.lists["ap"][0]])
        regional.roots = [
            RegionRoot(r, draw.tree_root(lst), len(lst)) for r, lst in regional.lists.items()
        ]
    fairness = regional.publish(tmp_path, "ap")
    done = verify_draw("--fairness", fairness, "--receipt", regional.receipt("ap", 1))
    assert done.returncode == 1
    assert f"FAILED {failure}" in done.stderr, done.stderr


def test_a_regions_document_before_every_region_drew_is_checked_as_its_own_draw(
    tmp_path: Path,
) -> None:
    regional = RegionalDraw(SIZES, draw.new_seed())
    document = regional.document("eu")
    del document["regions"], document["globalRoot"]
    (tmp_path / "eu.json").write_text(json.dumps(regional.lists["eu"]))
    (tmp_path / "fairness.json").write_text(json.dumps(document))
    done = verify_draw(
        "--fairness", str(tmp_path / "fairness.json"), "--receipt", regional.receipt("eu", 2)
    )
    assert done.returncode == 0, done.stderr
    assert "rank 2 of 30" in done.stdout and "not published yet" in done.stdout
    assert "global rank" not in done.stdout
