"""The key that signs draw receipts (docs/draw.md): Ed25519, public.

Tokens are HMACs that only key holders can check; a receipt must be checkable by anyone, so it
is signed with Ed25519 (the ``cryptography`` package) and its public key is published in the
fairness document as ``receiptKeys`` ({kid: base64url public key}). The SDK verifies with the
standard library alone (sdk/ed25519.py).

Each keyring key id has its receipt key, derived from that key's secret (``derived_key(kid,
"receipt-ed25519")``, an HMAC-SHA-256 of the secret with a fixed label, used as the Ed25519
private key): no new setting to deploy or forget, every worker and instance that shares the
keyring signs alike, and the receipt key rotates with the keyring. The label keeps it apart
from every other key the secret derives, so the public key reveals nothing about them.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from anteroom.sdk.tokens import Keyring, b64url_encode

PURPOSE = "receipt-ed25519"


class ReceiptSigner:
    """Signs receipts with the keyring's signing kid; publishes every kid's public key."""

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring
        self.kid = keyring.signing_kid
        self._keys = {
            kid: Ed25519PrivateKey.from_private_bytes(keyring.derived_key(kid, PURPOSE))
            for kid in keyring
        }
        # Every kid still in the keyring: a receipt signed before a rotation keeps verifying
        # while its key stays in the keyring.
        self.public_keys = {
            kid: b64url_encode(key.public_key().public_bytes_raw())
            for kid, key in self._keys.items()
        }

    def sign(self, data: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``data`` with the signing kid's receipt key."""
        return self._keys[self.kid].sign(data)
