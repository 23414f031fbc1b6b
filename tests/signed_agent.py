"""A signed agent for tests: signs requests as the Web Bot Auth drafts say (RFC 9421, Ed25519),
with the site SDK's own Ed25519 signing (tests only: it is not constant-time)."""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass, field

from anteroom.sdk import ed25519
from anteroom.sdk.message_signatures import SignedRequest, jwk_thumbprint, signature_base
from anteroom.sdk.structured_fields import InnerList, Item, Token, serialize_inner_list

# RFC 9421 appendix B.1.4's test key ("test-key-ed25519"): public test material.
RFC_SECRET = base64.urlsafe_b64decode("n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU=")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class Agent:
    """An agent with one key, known by the directory at ``directory``."""

    directory: str
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    @property
    def jwk(self) -> dict[str, str]:
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(ed25519.public_key(self.secret))}

    @property
    def keyid(self) -> str:
        return jwk_thumbprint(self.jwk)

    def directory_body(self) -> bytes:
        return json.dumps({"keys": [self.jwk]}).encode()

    def sign(
        self,
        method: str,
        url_authority: str,
        path: str,
        now: int,
        *,
        headers: dict[str, str] | None = None,
        expires_in: int = 60,
        nonce: str | None = None,
        tag: str = "web-bot-auth",
        covered: tuple[str, ...] = ("@authority", "signature-agent"),
        keyid: str | None = None,
        scheme: str = "https",
        alg: str = "ed25519",
    ) -> dict[str, str]:
        """The headers of a signed request (``Signature-Agent``, ``Signature-Input``,
        ``Signature``) over ``headers``."""
        out = dict(headers or {}) | {"signature-agent": f'"{self.directory}"'}
        params = {
            "created": now,
            "expires": now + expires_in,
            "keyid": keyid or self.keyid,
            "alg": alg,
            "nonce": nonce or b64url(secrets.token_bytes(16)),
            "tag": tag,
        }
        inner = InnerList(tuple(Item(name) for name in covered), params)
        path_only, _, query = path.partition("?")
        request = SignedRequest(method, scheme, url_authority, path_only, query, out)
        signature = ed25519.sign(self.secret, signature_base(request, inner))
        out["signature-input"] = "sig1=" + serialize_inner_list(inner)
        out["signature"] = "sig1=:" + base64.b64encode(signature).decode() + ":"
        return out


__all__ = ["RFC_SECRET", "Agent", "Token", "b64url"]
