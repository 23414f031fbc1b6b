"""Typed claims: readable names in code, the same short claims on the wire as before."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from anteroom.sdk.tokens import (
    ADMISSION,
    CHALLENGE,
    SESSION,
    TICKET,
    AdmissionClaims,
    ChallengeClaims,
    Keyring,
    MalformedToken,
    SessionClaims,
    TicketClaims,
    decode,
    issue,
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


CHALLENGE_WIRE = {"env": "shop", "jti": "c1", "d": 12, "iat": 1_700_000_000, "exp": 1_700_000_120,
                  "k": 16, "kl": 4}  # fmt: skip


def test_challenge_claims_by_name() -> None:
    claims = ChallengeClaims.from_wire(CHALLENGE_WIRE)
    assert (claims.environment, claims.challenge_id, claims.bits) == ("shop", "c1", 12)
    assert (claims.puzzles, claims.least, claims.measure) == (16, 4, False)
    assert claims.to_wire() == CHALLENGE_WIRE  # no `m: 0` on a real challenge
    measure = ChallengeClaims.from_wire(CHALLENGE_WIRE | {"m": 1})
    assert measure.measure is True and measure.to_wire()["m"] == 1
    legacy = {k: v for k, v in CHALLENGE_WIRE.items() if k not in ("k", "kl")}
    assert ChallengeClaims.from_wire(legacy).puzzles is None  # one puzzle, the token its prefix


def test_the_service_signer_takes_typed_claims_only_and_signs_each_as_its_type() -> None:
    keyring = Keyring.generate("k1")
    with pytest.raises(TypeError, match="typed claims"):
        issue(keyring, dict(TICKET_WIRE))  # type: ignore[arg-type]
    for kind, token_type, wire in (
        (ChallengeClaims, CHALLENGE, CHALLENGE_WIRE),
        (SessionClaims, SESSION, SESSION_WIRE),
        (TicketClaims, TICKET, TICKET_WIRE),
        (AdmissionClaims, ADMISSION, ADMISSION_WIRE),
    ):
        typed = kind.from_wire(wire)
        token = issue(keyring, typed)
        assert token.startswith(token_type + ".")
        assert kind.from_wire(decode(keyring, token, token_type, now=0)) == typed


# The wire names only tokens use: a dict literal naming one of them (and another claim) is
# claims written by hand. `env`, `iat`, `exp`, `score` are claims too, but common words.
_CLAIM_ONLY = {"qr", "vid", "jti", "qj", "qs", "qi", "qn", "qk", "qu", "fo", "nr", "ie", "iu",
               "il", "kl"}  # fmt: skip
_CLAIMS = _CLAIM_ONLY | {"env", "iat", "exp", "score", "sig", "q", "t", "g", "d", "k", "m"}
# Dicts with such keys that are not claims: the revocation kinds (identity/revocation.py).
NOT_CLAIMS = {("revocation.py", ("jti", "vid"))}


def _hand_written_claims(tree: ast.AST, name: str) -> list[str]:
    """Dicts of claims, claims read by their wire name, and tokens.sign called directly."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = tuple(k.value for k in node.keys if isinstance(k, ast.Constant))
            claimed = [k for k in keys if k in _CLAIMS]
            if set(claimed) & _CLAIM_ONLY and len(claimed) >= 2 and (name, keys) not in NOT_CLAIMS:
                found.append(f"{name}:{node.lineno} a dict of claims {keys}")
        read = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            read = node.slice.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant):
                read = node.args[0].value
            on = func.value.id if isinstance(func.value, ast.Name) else ""
            if func.attr == "sign" and on == "tokens":
                found.append(f"{name}:{node.lineno} signs with tokens.sign, not tokens.issue")
        if read in _CLAIM_ONLY:
            found.append(f"{name}:{node.lineno} reads the claim {read!r} by its wire name")
    return found


def test_no_claims_are_written_by_hand_in_the_service() -> None:
    """Every token the service signs goes through a claim class (tokens.issue): no dict of
    claims is built anywhere in the package, nor handed to the raw signer."""
    package = Path(issue.__code__.co_filename).resolve().parents[1]
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.parent.name == "sdk" and path.name != "tokens.py":
            continue  # the site's SDK reads foreign payloads as they come (verification.py)
        found += _hand_written_claims(ast.parse(path.read_text(encoding="utf-8")), path.name)
    assert found == []


def test_a_dict_of_claims_or_a_raw_signature_is_seen() -> None:
    written = ast.parse('tokens.sign(k, "ab1", {"qj": s, "jti": j})\nx = {"vid": v, "env": e}')
    assert len(_hand_written_claims(written, "fail_open.py")) == 3
    read = ast.parse('room = claims["qr"]\nsession = claims.get("qj")')
    assert len(_hand_written_claims(read, "hot_path.py")) == 2
    kinds = ast.parse('KINDS = {"jti": "j", "vid": "v"}')
    assert _hand_written_claims(kinds, "revocation.py") == []
