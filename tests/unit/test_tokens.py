"""The token format and keyring: round trips, refusals, rotation, ANTEROOM_KEYS parsing."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from anteroom.sdk import tokens
from anteroom.sdk.tokens import (
    ADMISSION,
    CHALLENGE,
    SESSION,
    TICKET,
    Keyring,
    TokenError,
    b64url_decode,
    b64url_encode,
    decode,
    network_tag,
    new_id,
    sign,
)

NOW = 1_700_000_000
SECRET_A = bytes(range(32))
SECRET_B = bytes(range(100, 132))


@pytest.fixture
def keyring() -> Keyring:
    return Keyring.from_mapping({"ka": SECRET_A})


def claims(**extra: object) -> dict[str, object]:
    return {"jti": new_id(), "iat": NOW, "exp": NOW + 300, **extra}


def reason_of(keyring: Keyring, token: str, token_type: str, now: float = NOW) -> str:
    with pytest.raises(TokenError) as caught:
        decode(keyring, token, token_type, now=now)
    return caught.value.reason


@pytest.mark.parametrize("token_type", [CHALLENGE, SESSION, TICKET, ADMISSION])
def test_round_trip_of_each_type(keyring: Keyring, token_type: str) -> None:
    original = claims(vid=new_id(), note="é✓")
    token = sign(keyring, token_type, original)
    assert token.startswith(f"{token_type}.ka.")
    assert decode(keyring, token, token_type, now=NOW) == original


def test_payload_is_compact_sorted_json(keyring: Keyring) -> None:
    token = sign(keyring, SESSION, {"b": 1, "a": [1, 2]})
    payload = token.split(".")[2]
    assert b64url_decode(payload) == b'{"a":[1,2],"b":1}'
    assert "=" not in token


def test_signature_is_hmac_with_the_per_type_key(keyring: Keyring) -> None:
    token = sign(keyring, ADMISSION, {"exp": NOW + 1})
    signed_part, _, signature = token.rpartition(".")
    derived = hmac.new(SECRET_A, b"anteroom-ab1-v1", hashlib.sha256).digest()
    expected = hmac.new(derived, signed_part.encode(), hashlib.sha256).digest()
    assert b64url_decode(signature) == expected


@pytest.mark.parametrize(
    ("signed_as", "presented_as"), [(SESSION, ADMISSION), (ADMISSION, SESSION), (TICKET, SESSION)]
)
def test_one_type_is_refused_as_another(
    keyring: Keyring, signed_as: str, presented_as: str
) -> None:
    token = sign(keyring, signed_as, claims())
    assert reason_of(keyring, token, presented_as) == "malformed"
    # Relabelling the type does not help: the signature key is derived per type.
    relabelled = presented_as + token[len(signed_as) :]
    assert reason_of(keyring, relabelled, presented_as) == "forged"


def test_every_single_character_change_is_refused(keyring: Keyring) -> None:
    token = sign(keyring, ADMISSION, claims(q="spring-drop", vid=new_id()))
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for position, char in enumerate(token):
        replacement = next(c for c in alphabet if c != char)
        tampered = token[:position] + replacement + token[position + 1 :]
        assert reason_of(keyring, tampered, ADMISSION) in {"forged", "malformed", "unknown-key"}


def test_unknown_kid(keyring: Keyring) -> None:
    other = Keyring.from_mapping({"kz": SECRET_A})
    token = sign(other, SESSION, claims())
    assert reason_of(keyring, token, SESSION) == "unknown-key"


def test_expiry_is_exclusive_of_exp(keyring: Keyring) -> None:
    token = sign(keyring, SESSION, claims())
    assert decode(keyring, token, SESSION, now=NOW + 299)["exp"] == NOW + 300
    assert reason_of(keyring, token, SESSION, now=NOW + 300) == "expired"


@pytest.mark.parametrize(
    "token",
    [
        "",
        "st1",
        "st1.ka.x",
        "st1.ka.x.y.z",
        "st1.ka.!!!.AAAA",
        "st1.ka." + "A" * 5000 + ".AAAA",
        "st1.ka.é.AAAA",
    ],
)
def test_malformed_strings(keyring: Keyring, token: str) -> None:
    assert reason_of(keyring, token, SESSION) in {"malformed", "forged"}


def test_signed_garbage_payloads_are_malformed(keyring: Keyring) -> None:
    # Correctly signed, but not a JSON object: proves parsing happens only after verification
    # and still refuses content that is not claims.
    for raw in (b"[1,2]", b"not json", b"\xff\xfe"):
        payload = b64url_encode(raw)
        signed_part = f"st1.ka.{payload}"
        signature = tokens._signature(keyring, "ka", SESSION, signed_part)
        token = f"{signed_part}.{b64url_encode(signature)}"
        assert reason_of(keyring, token, SESSION) == "malformed"


def test_forged_is_reported_before_the_payload_is_read(keyring: Keyring) -> None:
    token = f"st1.ka.{b64url_encode(b'not json')}.{b64url_encode(bytes(32))}"
    assert reason_of(keyring, token, SESSION) == "forged"


def test_key_rotation() -> None:
    old = Keyring.from_mapping({"old": SECRET_A})
    old_token = sign(old, ADMISSION, claims())
    rotated = Keyring.from_mapping({"new": SECRET_B, "old": SECRET_A})
    assert rotated.signing_kid == "new"
    assert decode(rotated, old_token, ADMISSION, now=NOW)["exp"] == NOW + 300
    new_token = sign(rotated, ADMISSION, claims())
    assert new_token.split(".")[1] == "new"
    assert reason_of(old, new_token, ADMISSION) == "unknown-key"


def test_parse_accepts_standard_and_url_base64_with_whitespace() -> None:
    secret = bytes([251, 255, 190] * 8)  # encodes with '+' and '/' in standard base64
    standard = base64.b64encode(secret).decode()
    urlsafe = base64.urlsafe_b64encode(secret).decode().rstrip("=")
    assert "+" in standard or "/" in standard
    keyring = Keyring.parse(f" k1 : {standard} ,\n k2:{urlsafe}")
    assert list(keyring) == ["k1", "k2"]
    assert keyring["k1"] == keyring["k2"] == secret
    assert Keyring.parse(keyring.serialize())["k2"] == secret


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("k1", "':'"),
        ("k1:" + base64.b64encode(b"short").decode(), "at least 16"),
        ("bad kid!:" + base64.b64encode(SECRET_A).decode(), "key id"),
        ("k" * 33 + ":" + base64.b64encode(SECRET_A).decode(), "key id"),
        ("k1:not*base64*at*all*", "base64"),
        ("k1:" + base64.b64encode(SECRET_A).decode() + ",", "empty"),
        ("k1:{0},k1:{0}".format(base64.b64encode(SECRET_A).decode()), "twice"),
    ],
)
def test_parse_errors_name_the_problem(text: str, mentions: str) -> None:
    with pytest.raises(ValueError, match=mentions):
        Keyring.parse(text)


def test_generate_coerce_and_repr() -> None:
    keyring = Keyring.generate()
    kid = keyring.signing_kid
    assert kid.startswith("k") and len(kid) == 9
    assert len(keyring[kid]) == 32
    assert Keyring.generate("main").signing_kid == "main"
    assert Keyring.coerce(keyring) is keyring
    assert Keyring.coerce(keyring.serialize())[kid] == keyring[kid]
    assert Keyring.coerce({kid: keyring[kid]})[kid] == keyring[kid]
    assert base64.b64encode(keyring[kid]).decode() not in repr(keyring)
    with pytest.raises(ValueError):
        Keyring.from_mapping({})
    with pytest.raises(TypeError):
        Keyring.coerce(42)  # type: ignore[arg-type]


def test_new_id_is_16_url_safe_chars() -> None:
    ids = {new_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 16 and len(b64url_decode(i)) == 12 for i in ids)


def test_network_tag(keyring: Keyring) -> None:
    tag = network_tag(keyring, "203.0.113.7")
    assert len(tag) == 22
    assert tag != network_tag(keyring, "203.0.113.8")
    assert tag == network_tag(keyring, "::ffff:203.0.113.7")
    same_64 = network_tag(keyring, "2001:db8:1:2::1")
    assert same_64 == network_tag(keyring, "2001:db8:1:2:ffff:1:2:3")
    assert same_64 != network_tag(keyring, "2001:db8:1:3::1")
    rotated = Keyring.from_mapping({"kb": SECRET_B, "ka": SECRET_A})
    assert network_tag(rotated, "203.0.113.7", kid="ka") == tag
    assert network_tag(rotated, "203.0.113.7") != tag
    with pytest.raises(ValueError):
        network_tag(keyring, "not-an-ip")


def test_queue_tokens_carry_the_outage_binding_and_expire(keyring: Keyring) -> None:
    from types import SimpleNamespace

    from anteroom.engine import QueueAnswer
    from anteroom.queue.rooms import room_config
    from anteroom.visit import answers as visitor

    room = {"id": "q0123456789abcdef", "environment": "shop", "abandonAfterSec": 300}
    answer = QueueAnswer("waiting", 3, 1, 10, None, 1000, "open", 2, None, "s1", "tag", 20)
    token = visitor.queue_token(
        room, SimpleNamespace(keyring=keyring, settings=SimpleNamespace(region="")), "v1", answer
    )  # type: ignore[arg-type]
    got = decode(keyring, token, TICKET)
    assert (got["qj"], got["qs"], got["qi"], got["t"], got["g"]) == ("s1", 20, "tag", 3, 2)
    # it outlives three of the longest polls the room may ask for (5 min in this short a line)
    life = room_config.queue_token_life(room)
    assert got["exp"] - got["iat"] == life
    assert life == 3 * 300 + room_config.QUEUE_TOKEN_GRACE_SEC
    with pytest.raises(tokens.ExpiredToken):
        decode(keyring, token, TICKET, now=got["exp"])
    a_day = room | {"abandonAfterSec": 86_400}
    assert room_config.queue_token_life(a_day) == 86_400  # a day at most
