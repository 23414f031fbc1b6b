"""anteroom.sdk.bypass_rules beyond the shared edge table: how secrets are kept and compared."""

from __future__ import annotations

import pytest

from anteroom.sdk import bypass_rules as br

SECRET = "monitor-secret-0123456789"


def test_a_stored_secret_is_a_salted_hash_that_verifies_only_the_secret() -> None:
    rule = br.parse_rules([{"kind": "header", "name": "X-Monitor", "secret": SECRET}])[0]
    first, second = rule.stored(), rule.stored()
    assert SECRET not in str(first) and SECRET not in repr(rule)
    assert first["secretHash"] != second["secretHash"]  # a fresh salt each time
    assert br.verify_secret(SECRET, first["secretHash"])
    assert not br.verify_secret(SECRET + "x", first["secretHash"])
    assert not br.verify_secret(SECRET, "scrypt$bad")


def test_rules_read_back_from_storage_match_by_their_hash() -> None:
    written = [
        br.parse_rules([{"kind": "cookie", "name": "monitor", "secret": SECRET}])[0].stored(),
        {"kind": "address-range", "value": "2001:db8::/32"},
    ]
    rules = br.parse_rules(written, stored=True)
    assert br.match(rules, "/x", None, {}, {"monitor": SECRET}) == (0, rules[0])
    assert br.match(rules, "/x", None, {}, {"monitor": "nope-nope-nope-nope"}) is None
    assert br.match(rules, "/x", "2001:db8::1%eth0", {}, {}) == (1, rules[1])


def test_the_public_form_shows_neither_secret_nor_hash_but_says_when_it_changed() -> None:
    rule = br.parse_rules([{"kind": "header", "name": "X-Monitor", "secret": SECRET}])[0]
    stored = br.parse_rules([rule.stored()], stored=True)[0]
    again = br.parse_rules([rule.stored()], stored=True)[0]
    shown = stored.public()
    assert shown["secret"] is None and shown["name"] == "x-monitor"
    assert "secretHash" not in shown and stored.secret_hash not in str(shown)
    assert shown["secretId"] != again.public()["secretId"]


def test_an_address_range_is_stored_in_its_canonical_form() -> None:
    rule = br.parse_rules([{"kind": "address-range", "value": "2001:DB8:0::/32"}])[0]
    assert rule.stored() == {"kind": "address-range", "value": "2001:db8::/32"}


@pytest.mark.parametrize("address", ["", "garbage", "203.0.113.007", None])
def test_an_unreadable_client_address_matches_no_range(address: str | None) -> None:
    rules = br.parse_rules([{"kind": "address-range", "value": "0.0.0.0/0"}])
    assert br.match(rules, None, address, {}, {}) is None
