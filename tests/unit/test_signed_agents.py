"""HTTP Message Signatures (RFC 9421) and the Web Bot Auth rules, in the site SDK."""

from __future__ import annotations

import pytest

from anteroom.sdk.message_signatures import (
    SignatureError,
    SignedRequest,
    signature_base,
    signatures_of,
    verify_signature,
)
from anteroom.sdk.signed_agents import AgentVerifier, Directories, Nonces
from anteroom.sdk.structured_fields import FieldError, InnerList, parse_dictionary, parse_item
from signed_agent import RFC_SECRET, Agent

NOW = 1_800_000_000
DIRECTORY = "https://agent.example/.well-known/http-message-signatures-directory"

# RFC 9421 appendix B.2.6: a request signed with the Ed25519 test key, and its signature.
B26 = SignedRequest("POST", "https", "example.com", "/foo", "param=Value&Pet=dog", {
    "host": "example.com",
    "date": "Tue, 20 Apr 2021 02:07:55 GMT",
    "content-type": "application/json",
    "content-length": "18",
    "signature-input": 'sig-b26=("date" "@method" "@path" "@authority" "content-type" '
    '"content-length");created=1618884473;keyid="test-key-ed25519"',
    "signature": "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6v"
    "uQv5lIp5WPpBKRCw==:",
})  # fmt: skip


def test_the_rfc_example_verifies_and_a_changed_request_does_not() -> None:
    from anteroom.sdk import ed25519

    public = ed25519.public_key(RFC_SECRET)
    [signed] = signatures_of(B26)
    assert signed.label == "sig-b26"
    assert signature_base(B26, signed.covered).decode().splitlines()[-1] == (
        '"@signature-params": ("date" "@method" "@path" "@authority" "content-type" '
        '"content-length");created=1618884473;keyid="test-key-ed25519"'
    )
    assert verify_signature(B26, signed, public)
    changed = SignedRequest(B26.method, B26.scheme, B26.authority, "/bar", B26.query, B26.headers)
    assert not verify_signature(changed, signed, public)


def test_structured_fields_parse_and_refuse_what_is_malformed() -> None:
    parsed = parse_dictionary('a=("x" "@y");n=1;s="t";b, c=:AAE=:, d=tok;p=?0')
    inner = parsed["a"]
    assert isinstance(inner, InnerList)
    assert [i.value for i in inner.items] == ["x", "@y"]
    assert inner.params == {"n": 1, "s": "t", "b": True}
    assert parsed["c"].value == b"\x00\x01"  # type: ignore[union-attr]
    assert parse_item('"https://a.example"').value == "https://a.example"
    for bad in ('a=("x"', "a=:%%:", 'a="unclosed', "A=1", "a=1,", 'a="é"'):
        with pytest.raises(FieldError):
            parse_dictionary(bad)


class Rig:
    """A verifier whose directories are answered from a dict and whose clock the test sets."""

    def __init__(self) -> None:
        self.now = float(NOW)
        self.served: dict[str, tuple[int, str, bytes]] = {}
        self.directories = Directories(self.fetch, lambda: self.now)
        self.verifier = AgentVerifier(self.directories, Nonces(), lambda: self.now)

    def fetch(self, url: str) -> tuple[int, str, bytes]:
        if url not in self.served:
            raise OSError("unreachable")
        return self.served[url]

    def check(self, headers: dict[str, str], path: str = "/shop") -> object:
        request = SignedRequest("GET", "https", "shop.example", path, "", headers)
        return self.verifier.verify(request)


@pytest.fixture
def rig() -> Rig:
    return Rig()


@pytest.fixture
def agent(rig: Rig) -> Agent:
    agent = Agent("https://agent.example")
    rig.served[DIRECTORY] = (200, "max-age=600", agent.directory_body())
    return agent


def reason(rig: Rig, headers: dict[str, str]) -> str:
    with pytest.raises(SignatureError) as refused:
        rig.check(headers)
    return refused.value.reason


def test_a_signed_agent_is_known_by_its_directory(rig: Rig, agent: Agent) -> None:
    verdict = rig.check(agent.sign("GET", "shop.example", "/shop", NOW))
    assert verdict is not None
    assert (verdict.directory, verdict.keyid) == (DIRECTORY, agent.keyid)  # type: ignore[attr-defined]
    assert rig.check({}) is None  # an unsigned request is an ordinary one


def test_forged_expired_replayed_and_strangers_are_refused(rig: Rig, agent: Agent) -> None:
    signed = agent.sign("GET", "shop.example", "/shop", NOW)
    assert reason(rig, signed | {"signature-agent": '"https://agent.example/"'}) == "forged"
    other = Agent("https://agent.example")  # a key the directory does not list
    assert reason(rig, other.sign("GET", "shop.example", "/shop", NOW)) == "unknown-key"
    stale = agent.sign("GET", "shop.example", "/shop", NOW - 120)
    assert reason(rig, stale) == "expired"
    assert reason(rig, agent.sign("GET", "shop.example", "/shop", NOW + 600)) == "early"
    long = agent.sign("GET", "shop.example", "/shop", NOW, expires_in=2 * 86_400)
    assert reason(rig, long) == "window"
    assert rig.check(signed) is not None
    assert reason(rig, signed) == "replayed"  # the same signature again
    untagged = agent.sign("GET", "shop.example", "/shop", NOW, tag="other")
    assert reason(rig, untagged) == "untagged"
    bare = agent.sign("GET", "shop.example", "/shop", NOW, covered=("@authority",))
    assert reason(rig, bare) == "components"  # the directory it names is not signed
    elsewhere = Agent("https://other.example", agent.secret)  # a directory without the key
    rig.served["https://other.example/.well-known/http-message-signatures-directory"] = (
        200, "", b'{"keys": []}',
    )  # fmt: skip
    assert reason(rig, elsewhere.sign("GET", "shop.example", "/shop", NOW)) == "unknown-key"
    insecure = Agent("http://agent.example", agent.secret)
    assert reason(rig, insecure.sign("GET", "shop.example", "/shop", NOW)) == "directory"
    broken = signed | {"signature": "sig1=:not base64!:"}
    assert reason(rig, broken) == "malformed"


def test_a_forged_request_does_not_burn_the_nonce(rig: Rig, agent: Agent) -> None:
    signed = agent.sign("GET", "shop.example", "/shop", NOW, nonce="n-1")
    tampered = signed | {"signature-agent": '"https://agent.example/"'}
    assert reason(rig, tampered) == "forged"
    assert rig.check(signed) is not None


def test_directories_are_kept_for_their_max_age_and_failures_briefly(
    rig: Rig, agent: Agent
) -> None:
    for _ in range(3):
        rig.check(agent.sign("GET", "shop.example", "/shop", int(rig.now)))
    assert rig.directories.fetches == 1
    rig.now += 601  # past max-age: fetched again
    rig.check(agent.sign("GET", "shop.example", "/shop", int(rig.now)))
    assert rig.directories.fetches == 2
    gone = Agent("https://down.example")
    for _ in range(3):
        assert reason(rig, gone.sign("GET", "shop.example", "/shop", int(rig.now))) == "directory"
    assert rig.directories.fetches == 3  # one try for the three, then 30 s of rest
    rig.now += 31
    reason(rig, gone.sign("GET", "shop.example", "/shop", int(rig.now)))
    assert rig.directories.fetches == 4


def test_nonces_are_forgotten_once_their_signature_expires() -> None:
    nonces = Nonces(most=2)
    assert nonces.first_use("k", "a", until=10, now=0)
    assert not nonces.first_use("k", "a", until=10, now=5)
    assert nonces.first_use("k", "b", until=20, now=5)
    assert not nonces.first_use("k", "c", until=20, now=5)  # full of live ones: refused
    assert nonces.first_use("k", "c", until=30, now=11)  # "a" has expired: room again
    assert nonces.first_use("k", "a", until=40, now=21)
