"""The server SDK as a site backend uses it: admissions, sessions, reasons, keys in any form."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from anteroom.sdk.tokens import ADMISSION, SESSION, Keyring, network_tag, new_id, sign
from anteroom.verify import VerifyResult, verify_admission, verify_session

NOW = 1_700_000_000
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def keyring() -> Keyring:
    return Keyring.generate("k1")


def admission(keyring: Keyring, **extra: object) -> str:
    claims = {
        "q": "spring-drop",
        "qr": "room_123",
        "qj": "session-jti",
        "vid": new_id(),
        "env": "production",
        "jti": new_id(),
        "iat": NOW,
        "exp": NOW + 300,
        **extra,
    }
    return sign(keyring, ADMISSION, claims)


def session(keyring: Keyring) -> str:
    claims = {
        "jti": "session-jti",
        "vid": new_id(),
        "env": "production",
        "score": 10,
        "sig": [],
        "iat": NOW,
        "exp": NOW + 3600,
    }
    return sign(keyring, SESSION, claims)


def test_valid_admission(keyring: Keyring) -> None:
    result = verify_admission(
        admission(keyring), keyring, room="spring-drop", session_jti="session-jti", now=NOW
    )
    assert result
    assert result.valid and result.reason is None
    assert result.claims is not None and result.claims["q"] == "spring-drop"


def test_valid_session(keyring: Keyring) -> None:
    result = verify_session(session(keyring), keyring, now=NOW)
    assert result and result.claims is not None and result.claims["score"] == 10


def test_session_and_admission_are_not_interchangeable(keyring: Keyring) -> None:
    assert verify_admission(session(keyring), keyring, now=NOW).reason == "malformed"
    assert verify_session(admission(keyring), keyring, now=NOW).reason == "malformed"


def test_result_is_falsy_when_refused() -> None:
    refused = VerifyResult(valid=False, claims=None, reason="forged")
    assert not refused


def test_expired(keyring: Keyring) -> None:
    token = admission(keyring)
    assert verify_admission(token, keyring, now=NOW + 299)
    assert verify_admission(token, keyring, now=NOW + 300).reason == "expired"
    assert verify_session(session(keyring), keyring, now=NOW + 3600).reason == "expired"


def test_default_now_is_the_clock(keyring: Keyring) -> None:
    # NOW lies in the past, so without `now` the token is already expired.
    assert verify_admission(admission(keyring), keyring).reason == "expired"


def test_unknown_key(keyring: Keyring) -> None:
    token = admission(Keyring.generate("other"))
    assert verify_admission(token, keyring, now=NOW).reason == "unknown-key"


def test_forged_and_tampered(keyring: Keyring) -> None:
    token = admission(keyring)
    same_kid_other_secret = Keyring.generate("k1")
    assert verify_admission(token, same_kid_other_secret, now=NOW).reason == "forged"
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for position, char in enumerate(token):
        replacement = next(c for c in alphabet if c != char)
        tampered = token[:position] + replacement + token[position + 1 :]
        result = verify_admission(tampered, keyring, now=NOW)
        assert not result.valid
        assert result.reason in {"forged", "malformed", "unknown-key"}


@pytest.mark.parametrize("token", [None, 42, b"ab1.k1.x.y", "", "ab1", "ab1.k1.x.y", "." * 3])
def test_never_raises_on_junk(keyring: Keyring, token: object) -> None:
    result = verify_admission(token, keyring, now=NOW)  # type: ignore[arg-type]
    assert not result.valid and result.reason in {"malformed", "forged", "unknown-key"}


def test_signed_token_without_expiry_is_refused(keyring: Keyring) -> None:
    token = sign(keyring, ADMISSION, {"q": "spring-drop", "jti": new_id()})
    assert verify_admission(token, keyring, now=NOW).reason == "malformed"


def test_wrong_room(keyring: Keyring) -> None:
    token = admission(keyring)
    assert verify_admission(token, keyring, room="other-room", now=NOW).reason == "wrong-room"
    assert verify_admission(token, keyring, room="room_123", now=NOW)  # the room id also matches
    assert verify_admission(token, keyring, room=None, now=NOW)


def test_session_mismatch(keyring: Keyring) -> None:
    token = admission(keyring)
    result = verify_admission(token, keyring, session_jti="someone-else", now=NOW)
    assert result.reason == "session-mismatch"


def test_ip_binding_ipv4(keyring: Keyring) -> None:
    token = admission(keyring, qi=network_tag(keyring, "198.51.100.20"))
    assert verify_admission(token, keyring, client_ip="198.51.100.20", now=NOW)
    assert verify_admission(token, keyring, client_ip="::ffff:198.51.100.20", now=NOW)
    mismatch = verify_admission(token, keyring, client_ip="198.51.100.21", now=NOW)
    assert mismatch.reason == "ip-mismatch"


def test_ip_binding_ipv6_by_64(keyring: Keyring) -> None:
    token = admission(keyring, qi=network_tag(keyring, "2001:db8:aa:bb::1"))
    assert verify_admission(token, keyring, client_ip="2001:db8:aa:bb:1234::99", now=NOW)
    mismatch = verify_admission(token, keyring, client_ip="2001:db8:aa:bc::1", now=NOW)
    assert mismatch.reason == "ip-mismatch"


@pytest.mark.parametrize("client_ip", [None, "", "not-an-ip", "300.1.1.1"])
def test_bound_admission_without_a_usable_address(keyring: Keyring, client_ip: str | None) -> None:
    token = admission(keyring, qi=network_tag(keyring, "198.51.100.20"))
    assert verify_admission(token, keyring, client_ip=client_ip, now=NOW).reason == "ip-mismatch"


def test_unbound_admission_ignores_the_address(keyring: Keyring) -> None:
    assert verify_admission(admission(keyring), keyring, client_ip="198.51.100.20", now=NOW)
    assert verify_admission(admission(keyring), keyring, client_ip="garbage", now=NOW)


def test_ip_binding_survives_rotation(keyring: Keyring) -> None:
    token = admission(keyring, qi=network_tag(keyring, "198.51.100.20"))
    rotated = Keyring.from_mapping({"k2": os.urandom(32), "k1": keyring["k1"]})
    assert verify_admission(token, rotated, client_ip="198.51.100.20", now=NOW)


def test_key_rotation(keyring: Keyring) -> None:
    old_token = admission(keyring)
    rotated = Keyring.from_mapping({"k2": os.urandom(32), "k1": keyring["k1"]})
    assert verify_admission(old_token, rotated, now=NOW)
    new_token = admission(rotated)
    assert new_token.split(".")[1] == "k2"
    assert verify_admission(new_token, rotated, now=NOW)
    assert verify_admission(new_token, keyring, now=NOW).reason == "unknown-key"


def test_keys_as_string_mapping_or_keyring(keyring: Keyring) -> None:
    token = admission(keyring)
    env_value = f"k1:{base64.b64encode(keyring['k1']).decode()}"
    for keys in (keyring, {"k1": keyring["k1"]}, env_value, keyring.serialize()):
        assert verify_admission(token, keys, room="spring-drop", now=NOW), keys


def test_unusable_keys_raise(keyring: Keyring) -> None:
    with pytest.raises(ValueError):
        verify_admission(admission(keyring), "", now=NOW)


def test_imports_with_the_standard_library_alone() -> None:
    code = (
        "import anteroom.verify, sys; "
        "assert 'flask' not in sys.modules and 'redis' not in sys.modules, sorted(sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "backend")}
    completed = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
