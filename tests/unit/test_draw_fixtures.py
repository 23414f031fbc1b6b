"""tests/fixtures/draw.json: current with its generator, and each case named as a visitor reads it.

A second implementation of the checker (the browser page, the Lua shuffle) is held to the same
file, so every implementation agrees case by case with anteroom.sdk.draw.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from anteroom.sdk import draw, merkle
from fixtures import make_draw_fixtures

FIXTURES: dict[str, Any] = json.loads(make_draw_fixtures.PATH.read_text(encoding="utf-8"))
# What each tampering must be called, written out: a regenerated file cannot quietly rename one.
NAMED = {
    "honest": None,
    "changed seed": "commitment-mismatch",
    "dropped entrant": "entrant-dropped",
    "dropped and recounted": "root-mismatch",
    "added entrant": "entrant-added",
    "swapped ranks": "order-mismatch",
    "listed twice": "duplicate-entrant",
    "forged proof": "receipt-proof",
    "wrong rank": "receipt-rank",
    "wrong room": "receipt-room",
    "not an entrant": "receipt-entrant",
    "forged signature": "receipt-signature",
}


def test_the_checked_in_file_is_what_the_generator_writes() -> None:
    # If this fails, run: .venv/bin/python tests/fixtures/make_draw_fixtures.py
    assert make_draw_fixtures.PATH.read_text(encoding="utf-8") == make_draw_fixtures.build()


def test_each_case_expects_the_failure_it_must_be_named_by() -> None:
    assert {case["name"]: case["expected"] for case in FIXTURES["cases"]} == NAMED


@pytest.mark.parametrize("case", FIXTURES["cases"], ids=lambda case: case["name"])
def test_the_checker_names_each_case_as_the_file_says(case: dict[str, Any]) -> None:
    verdict = draw.check_draw(case["document"], case["entrants"])
    if verdict.ok and "receipt" in case:
        verdict = draw.check_receipt(
            case["document"], case["entrants"], case["receipt"], make_draw_fixtures.genuine
        )
    assert verdict.failure == case["expected"]


@pytest.mark.parametrize("fixture", FIXTURES["draws"], ids=lambda fixture: fixture["name"])
def test_each_draws_order_keys_and_order_are_the_files(fixture: dict[str, Any]) -> None:
    document = fixture["document"]
    beacon = draw.beacon_value(document)
    keys = {e: draw.order_key(document["seed"], e, beacon) for e in fixture["entrants"]}
    assert keys == fixture["orderKeys"]
    assert draw.drawn_order(document["seed"], sorted(keys), beacon) == fixture["entrants"]
    assert draw.check_draw(document, fixture["entrants"]).ok


def test_the_files_tree_proofs_verify() -> None:
    tree = FIXTURES["merkle"]
    leaves = [bytes.fromhex(h) for h in tree["leavesHex"]]
    for case in tree["proofs"]:
        index, size = case["index"], case["size"]
        head = tree["roots"][size]
        assert merkle.verify_inclusion(leaves[index], index, size, case["proof"], head)
