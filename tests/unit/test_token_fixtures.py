"""tests/fixtures/tokens.json: current with its generator, and the Python SDK's own verdicts.

The Node SDK checks the same file (tests/js/node-verify.test.mjs), so both SDKs agree case by case.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from anteroom.sdk.tokens import Keyring
from anteroom.verify import verify_admission, verify_session
from fixtures import make_token_fixtures

FIXTURES: dict[str, Any] = json.loads(make_token_fixtures.PATH.read_text(encoding="utf-8"))


def test_the_checked_in_file_is_what_the_generator_writes() -> None:
    # If this fails, run: .venv/bin/python tests/fixtures/make_token_fixtures.py
    assert make_token_fixtures.PATH.read_text(encoding="utf-8") == make_token_fixtures.build()


def test_the_fixtures_cover_every_reason() -> None:
    reasons = {case["expected"]["reason"] for case in FIXTURES["cases"]}
    assert reasons == {
        None, "malformed", "forged", "expired", "unknown-key", "wrong-room", "ip-mismatch",
        "session-mismatch",
    }  # fmt: skip


@pytest.mark.parametrize("case", FIXTURES["cases"], ids=lambda case: case["name"])
def test_python_verdicts(case: dict[str, Any]) -> None:
    options = case["options"]
    if case["kind"] == "admission":
        result = verify_admission(
            case["token"],
            FIXTURES["keys"],
            room=options.get("room"),
            client_ip=options.get("clientIp"),
            session_jti=options.get("sessionJti"),
        )
    else:
        result = verify_session(case["token"], FIXTURES["keys"])
    assert {"valid": result.valid, "reason": result.reason} == case["expected"]
    assert result.claims == case["claims"]


def test_keys_as_a_mapping_give_the_same_verdicts() -> None:
    keys = {kid: bytes.fromhex(secret) for kid, secret in FIXTURES["secretsHex"].items()}
    for case in FIXTURES["cases"]:
        if case["kind"] == "session":
            assert verify_session(case["token"], keys).reason == case["expected"]["reason"]


@pytest.mark.parametrize("case", FIXTURES["keyrings"], ids=lambda case: repr(case["keys"]))
def test_keyring_parsing(case: dict[str, Any]) -> None:
    if case["kids"] is None:
        with pytest.raises(ValueError):
            Keyring.parse(case["keys"])
    else:
        assert list(Keyring.parse(case["keys"])) == case["kids"]
