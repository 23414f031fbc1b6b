"""Typed claims: readable names in code, the same short claims on the wire as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anteroom.sdk.tokens import (
    ADMISSION,
    SESSION,
    TICKET,
    AdmissionClaims,
    Keyring,
    MalformedToken,
    SessionClaims,
    TicketClaims,
    decode,
    sign,
)
from anteroom.verify import verify_admission

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tokens.json"

SESSION_WIRE = {"jti": "s1", "vid": "v1", "env": "shop", "score": 10, "sig": ["headless"],
                "iat": 1_700_000_000, "exp": 1_700_021_600}  # fmt: skip
TICKET_WIRE = {"qr": "r1", "vid": "v1", "t": 42, "g": 3, "env": "shop", "qj": "s1", "qs": 10,
               "qi": "tag", "qn": 1, "iat": 1_700_000_000, "exp": 1_700_000_960}  # fmt: skip
ADMISSION_WIRE = {"q": "drop", "qr": "r1", "vid": "v1", "env": "shop", "jti": "a1", "qj": "s1",
                  "qi": "tag", "fo": True, "iat": 1_700_000_000, "exp": 1_700_000_300}  # fmt: skip


def test_session_claims_by_name() -> None:
    claims = SessionClaims.from_wire(SESSION_WIRE)
    assert (claims.session_id, claims.visitor_id, claims.environment) == ("s1", "v1", "shop")
    assert claims.score == 10 and claims.signals == ("headless",)
    assert (claims.issued_at, claims.expires_at) == (1_700_000_000, 1_700_021_600)
    assert claims.to_wire() == SESSION_WIRE


def test_ticket_claims_by_name() -> None:
    claims = TicketClaims.from_wire(TICKET_WIRE)
    assert (claims.room_id, claims.visitor_id) == ("r1", "v1")
    assert (claims.ticket, claims.generation) == (42, 3)
    assert (claims.session_id, claims.score, claims.network_tag) == ("s1", 10, "tag")
    assert claims.near_head is True
    assert claims.to_wire() == TICKET_WIRE  # `qn` goes out as 1, as the poll's router reads it


def test_a_far_tickets_order_key_and_kept_until_by_name() -> None:
    # The far poll answers from these two (queue/line/far_poll.py); a ticket without them (an
    # entry's,
    # a near spot's) sends neither.
    far = TicketClaims.from_wire(
        TICKET_WIRE | {"qk": 4_503_599_627_370_538, "qu": 1_700_000_500_000}
    )
    assert (far.order_key, far.kept_until) == (4_503_599_627_370_538, 1_700_000_500_000)
    assert far.to_wire() == TICKET_WIRE | {"qk": 4_503_599_627_370_538, "qu": 1_700_000_500_000}
    near = TicketClaims.from_wire(TICKET_WIRE)
    assert near.order_key is None and near.kept_until is None


def test_claims_read_from_the_wire_are_the_claims_built_by_name_and_stay_frozen() -> None:
    read = TicketClaims.from_wire({"qr": "r1", "vid": "v1", "t": 42, "g": 3, "env": "shop"})
    built = TicketClaims(room_id="r1", visitor_id="v1", ticket=42, generation=3, environment="shop")
    assert read == built and hash(read) == hash(built)
    with pytest.raises(AttributeError):
        read.ticket = 7  # type: ignore[misc]


def test_admission_claims_by_name() -> None:
    claims = AdmissionClaims.from_wire(ADMISSION_WIRE)
    assert (claims.room_slug, claims.room_id, claims.admission_id) == ("drop", "r1", "a1")
    assert claims.fail_open is True and claims.session_id == "s1"
    assert claims.to_wire() == ADMISSION_WIRE


def test_optional_claims_are_left_out_and_read_as_unset() -> None:
    """A ticket issued before qj/qs/exp existed, far from the head, in an open (not bindIp) room."""
    old = {"qr": "r1", "vid": "v1", "t": 7, "g": 0, "env": "shop"}
    claims = TicketClaims.from_wire(old)
    assert claims.session_id is None and claims.score is None and claims.expires_at is None
    assert claims.near_head is False and claims.network_tag is None
    assert claims.to_wire() == old  # no `qn: 0`, no nulls: nothing the wire did not carry
    admission = AdmissionClaims.from_wire(ADMISSION_WIRE | {"fo": False})
    assert admission.fail_open is False and "fo" not in admission.to_wire()


@pytest.mark.parametrize(
    ("kind", "wire", "missing"),
    [
        (SessionClaims, SESSION_WIRE, "score"),
        (TicketClaims, TICKET_WIRE, "t"),
        (AdmissionClaims, ADMISSION_WIRE, "q"),
    ],
)
def test_a_missing_required_claim_is_named(kind: type, wire: dict, missing: str) -> None:
    without = {k: v for k, v in wire.items() if k != missing}
    with pytest.raises(MalformedToken, match=f"'{missing}'"):
        kind.from_wire(without)


def test_claims_are_frozen() -> None:
    claims = SessionClaims.from_wire(SESSION_WIRE)
    with pytest.raises(AttributeError):
        claims.score = 0  # type: ignore[misc]


def test_signed_typed_claims_verify_and_decode_back() -> None:
    keyring = Keyring.generate("k1")
    unbound = {k: v for k, v in ADMISSION_WIRE.items() if k != "qi"}  # no client_ip to check
    admission = AdmissionClaims.from_wire(unbound | {"exp": 4_102_444_800})
    token = sign(keyring, ADMISSION, admission.to_wire())
    result = verify_admission(token, keyring, room="drop", session_jti="s1", now=1_700_000_001)
    assert result.valid, result.reason
    assert AdmissionClaims.from_wire(result.claims or {}) == admission
    for kind, token_type, wire in ((SessionClaims, SESSION, SESSION_WIRE),
                                   (TicketClaims, TICKET, TICKET_WIRE)):  # fmt: skip
        typed = kind.from_wire(wire)
        decoded = decode(keyring, sign(keyring, token_type, typed.to_wire()), token_type, now=0)
        assert kind.from_wire(decoded) == typed


def test_the_fixture_admissions_the_service_would_issue_read_by_name() -> None:
    """The shared token fixtures (also read by the Node SDK's tests) that model a service-issued
    admission (the others are bare payloads for the verifier's parsing) fit the typed one."""
    cases = json.loads(FIXTURES.read_text())["cases"]
    admissions = [
        c
        for c in cases
        if c["kind"] == "admission" and c["expected"]["valid"] and "jti" in c["claims"]
    ]
    assert len(admissions) >= 10
    for case in admissions:
        claims = AdmissionClaims.from_wire(case["claims"])
        assert claims.to_wire() == case["claims"], case["name"]
