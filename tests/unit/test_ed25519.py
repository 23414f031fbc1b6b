"""The SDK's standard-library Ed25519 (anteroom.sdk.ed25519): what lets anyone check a receipt.

Held to RFC 8032's own test vectors (section 7.1, TEST 1-3 and TEST SHA(abc) whose message
crosses a SHA-512 block), and to the ``cryptography`` package (OpenSSL) on random keys and
messages: both must accept exactly the same signatures, or a receipt the service signs could
fail a visitor's check.
"""

from __future__ import annotations

import hashlib
import secrets

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from anteroom.sdk import ed25519

# RFC 8032, 7.1: (SECRET KEY, PUBLIC KEY, MESSAGE, SIGNATURE), hex, as printed there.
RFC8032 = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
    (
        "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
        "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
        # TEST SHA(abc): the message is SHA-512("abc")
        hashlib.sha512(b"abc").hexdigest(),
        "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704",
    ),
]


@pytest.mark.parametrize(("secret", "public", "message", "signature"), RFC8032)
def test_rfc8032_vectors(secret: str, public: str, message: str, signature: str) -> None:
    """Each RFC vector: the key derives, the signature is reproduced and verifies."""
    sk, msg = bytes.fromhex(secret), bytes.fromhex(message)
    assert ed25519.public_key(sk).hex() == public
    assert ed25519.sign(sk, msg).hex() == signature
    assert ed25519.verify(bytes.fromhex(public), msg, bytes.fromhex(signature))


@pytest.mark.parametrize(("secret", "public", "message", "signature"), RFC8032)
def test_rfc8032_vectors_refuse_any_changed_byte(
    secret: str, public: str, message: str, signature: str
) -> None:
    """A changed message, signature or key fails: a forged receipt is named, not passed."""
    pk, msg, sig = bytes.fromhex(public), bytes.fromhex(message), bytes.fromhex(signature)
    assert not ed25519.verify(pk, msg + b"\x00", sig)
    for at in (0, 31, 32, 63):
        changed = bytearray(sig)
        changed[at] ^= 0x01
        assert not ed25519.verify(pk, msg, bytes(changed))
    other = bytearray(pk)
    other[0] ^= 0x01
    assert not ed25519.verify(bytes(other), msg, sig)


def test_malformed_inputs_are_refused_not_raised() -> None:
    """Wrong lengths, S at or above the group order, a y off the curve: False, never an error."""
    secret, public, message, signature = (bytes.fromhex(x) for x in RFC8032[1])
    assert not ed25519.verify(public[:31], message, signature)
    assert not ed25519.verify(public, message, signature[:63])
    order = 2**252 + 27742317777372353535851937790883648493
    s = int.from_bytes(signature[32:], "little")
    malleable = signature[:32] + (s + order).to_bytes(32, "little")
    assert not ed25519.verify(public, message, malleable)
    assert not ed25519.verify(b"\xff" * 32, message, signature)  # y >= p
    assert ed25519.verify(ed25519.public_key(secret), message, signature)


@settings(max_examples=25, deadline=None)
@given(message=st.binary(max_size=300), seed=st.binary(min_size=32, max_size=32))
def test_agrees_with_cryptography(message: bytes, seed: bytes) -> None:
    """On random keys and messages, the SDK and OpenSSL derive, sign and verify alike."""
    key = Ed25519PrivateKey.from_private_bytes(seed)
    public = key.public_key().public_bytes_raw()
    signature = key.sign(message)
    assert ed25519.public_key(seed) == public
    assert ed25519.sign(seed, message) == signature
    assert ed25519.verify(public, message, signature)
    forged = bytearray(signature)
    forged[secrets.randbelow(64)] ^= 1 << secrets.randbelow(8)
    with pytest.raises(InvalidSignature):
        Ed25519PublicKey.from_public_bytes(public).verify(bytes(forged), message)
    assert not ed25519.verify(public, message, bytes(forged))


def test_a_key_that_keeps_signing_is_checked_alike_with_its_comb() -> None:
    """A key verified twice gets a comb of its own (the fast path of a signed agent's later
    requests): it accepts and refuses exactly what OpenSSL does, also once more keys than
    ``KEY_COMBS`` have pushed the oldest combs out."""
    seeds = [hashlib.sha256(b"comb %d" % i).digest() for i in range(ed25519.KEY_COMBS + 3)]
    for round_ in range(3):
        for seed in seeds:
            key = Ed25519PrivateKey.from_private_bytes(seed)
            public = key.public_key().public_bytes_raw()
            message = b"request %d" % round_
            signature = key.sign(message)
            assert ed25519.verify(public, message, signature)
            assert not ed25519.verify(public, message + b"!", signature)
            forged = bytearray(signature)
            forged[secrets.randbelow(64)] ^= 1 << secrets.randbelow(8)
            assert not ed25519.verify(public, message, bytes(forged))
    combs = [k for k in ed25519._keys.values() if k.comb is not None]
    assert 0 < len(combs) <= ed25519.KEY_COMBS
