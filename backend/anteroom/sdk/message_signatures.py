"""HTTP Message Signatures (RFC 9421) checked with Ed25519, as signed agents use them.

An automated agent that announces itself (the IETF Web Bot Auth drafts) signs each request:
``Signature-Input`` names the signed components and the signature's parameters, ``Signature``
carries the signature, and ``Signature-Agent`` names the agent's key directory, an HTTPS URL
whose ``/.well-known/http-message-signatures-directory`` lists its public keys as JWKs. A key is
named by its JWK thumbprint (RFC 7638), the signature's ``keyid``.

This module builds the signature base (RFC 9421 section 2.5) and checks one signature against a
public key; :mod:`anteroom.sdk.signed_agents` adds the Web Bot Auth rules (tag, time window,
nonce, directory). Standard library only: the site SDK's Ed25519 (``sdk/ed25519.py``) verifies.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from anteroom.sdk import ed25519
from anteroom.sdk.structured_fields import (
    FieldError,
    InnerList,
    Item,
    parse_dictionary,
    serialize_inner_list,
    serialize_item,
)

__all__ = [
    "SignatureError",
    "SignatureInput",
    "SignedRequest",
    "jwk_thumbprint",
    "signature_base",
    "signatures_of",
    "verify_signature",
]  # fmt: skip

DERIVED = ("@method", "@authority", "@scheme", "@target-uri", "@request-target", "@path", "@query")


class SignatureError(ValueError):
    """A signature that cannot be accepted; ``reason`` is a short code, the text says why."""

    def __init__(self, reason: str, text: str) -> None:
        super().__init__(text)
        self.reason = reason


@dataclass(frozen=True)
class SignedRequest:
    """The parts of a request a signature may cover. ``headers``: lower-case names, each with
    its field lines combined (``", "``); ``authority``: the host (and a port) it was sent to."""

    method: str
    scheme: str
    authority: str
    path: str
    query: str  # without its "?"
    headers: Mapping[str, str]

    def header(self, name: str) -> str | None:
        """A header's combined value, or None."""
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class SignatureInput:
    """One labelled signature: what it covers, its parameters, and its bytes."""

    label: str
    covered: InnerList
    signature: bytes

    @property
    def params(self) -> dict[str, object]:
        """``created``, ``expires``, ``keyid``, ``alg``, ``nonce``, ``tag`` (those given)."""
        return dict(self.covered.params)

    def names(self) -> list[str]:
        """The covered components' names, in order."""
        return [str(item.value) for item in self.covered.items]


def signed_request_of(environ: Mapping[str, Any]) -> SignedRequest | None:
    """A WSGI request as a signature covers it, or None when it carries no ``Signature-Input``
    (the common case: nothing else is read). ``@path`` is the path as sent (gunicorn's
    ``RAW_URI``), else ``SCRIPT_NAME`` + ``PATH_INFO`` quoted again."""
    if "HTTP_SIGNATURE_INPUT" not in environ:
        return None
    headers = {
        name[5:].replace("_", "-").lower(): str(value)
        for name, value in environ.items()
        if name.startswith("HTTP_")
    }
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(name):
            headers[name.replace("_", "-").lower()] = str(environ[name])
    raw = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or "")
    if raw.startswith("/"):
        path = raw.partition("?")[0]
    else:
        whole = str(environ.get("SCRIPT_NAME", "")) + str(environ.get("PATH_INFO", ""))
        path = quote(whole.encode("latin-1", "replace"), safe="/!$&'()*+,;=:@-._~%")
    scheme = str(environ.get("wsgi.url_scheme", "http"))
    authority = headers.get("host") or str(environ.get("SERVER_NAME", ""))
    method = str(environ.get("REQUEST_METHOD", "GET"))
    query = str(environ.get("QUERY_STRING", ""))
    return SignedRequest(method, scheme, authority, path, query, headers)


def signatures_of(request: SignedRequest) -> list[SignatureInput]:
    """Every labelled signature the request carries (``Signature-Input`` with ``Signature``).

    SignatureError ``malformed`` for a header that is not a structured dictionary, or a label
    without its counterpart; an unsigned request has none.
    """
    raw_input, raw_signature = request.header("signature-input"), request.header("signature")
    if raw_input is None and raw_signature is None:
        return []
    if raw_input is None or raw_signature is None:
        raise SignatureError("malformed", "Signature-Input and Signature come together")
    try:
        inputs, signatures = parse_dictionary(raw_input), parse_dictionary(raw_signature)
    except FieldError as exc:
        raise SignatureError("malformed", f"a signature header is malformed: {exc}") from None
    out = []
    for label, covered in inputs.items():
        signed = signatures.get(label)
        if not isinstance(covered, InnerList) or not all(
            isinstance(i.value, str) for i in covered.items
        ):
            raise SignatureError("malformed", f"Signature-Input {label} is not a list of names")
        if not isinstance(signed, Item) or not isinstance(signed.value, bytes):
            raise SignatureError("malformed", f"Signature {label} is missing or not bytes")
        out.append(SignatureInput(label, covered, signed.value))
    return out


def component_value(request: SignedRequest, item: Item) -> str:
    """The value a covered component stands for (RFC 9421 sections 2.1 and 2.2)."""
    name = str(item.value)
    if name.startswith("@"):
        if item.params:
            raise SignatureError("components", f"{name} takes no parameters here")
        return _derived(request, name)
    if name != name.lower():
        raise SignatureError("components", f"component names are lower case: {name}")
    value = request.header(name)
    if value is None:
        raise SignatureError("components", f"the signed header {name} is not in the request")
    if not item.params:
        return value
    if set(item.params) != {"key"} or not isinstance(item.params["key"], str):
        raise SignatureError("components", f"{name}: only the key parameter is understood")
    try:
        members = parse_dictionary(value)
    except FieldError:
        raise SignatureError("components", f"{name} is not a dictionary") from None
    member = members.get(item.params["key"])
    if not isinstance(member, Item):
        raise SignatureError("components", f"{name} has no member {item.params['key']}")
    return serialize_item(member)


def _derived(request: SignedRequest, name: str) -> str:
    path = request.path or "/"
    query = "?" + request.query
    match name:
        case "@method":
            return request.method.upper()
        case "@authority":
            return _authority(request.scheme, request.authority)
        case "@scheme":
            return request.scheme.lower()
        case "@target-uri":
            target = f"{request.scheme.lower()}://{_authority(request.scheme, request.authority)}"
            return target + path + (query if request.query else "")
        case "@request-target":
            return path + (query if request.query else "")
        case "@path":
            return path
        case "@query":
            return query
    raise SignatureError("components", f"the derived component {name} is not supported")


def _authority(scheme: str, authority: str) -> str:
    """The authority as RFC 9421 writes it: lower case, without the scheme's default port."""
    host = authority.lower()
    default = {"https": ":443", "http": ":80"}.get(scheme.lower())
    return host[: -len(default)] if default and host.endswith(default) else host


def signature_base(request: SignedRequest, covered: InnerList) -> bytes:
    """The bytes a signature is made over (RFC 9421 section 2.5)."""
    lines, seen = [], set()
    for item in covered.items:
        identifier = serialize_item(item)
        if identifier in seen:
            raise SignatureError("components", f"{identifier} is covered twice")
        seen.add(identifier)
        value = component_value(request, item)
        if "\n" in value or "\r" in value:
            raise SignatureError("components", f"{identifier} holds a line break")
        lines.append(f"{identifier}: {value}")
    lines.append(f'"@signature-params": {serialize_inner_list(covered)}')
    try:
        return "\n".join(lines).encode("ascii")
    except UnicodeEncodeError:
        raise SignatureError("components", "a signed value is not ASCII") from None


def verify_signature(request: SignedRequest, signed: SignatureInput, public_key: bytes) -> bool:
    """True when ``signed`` is ``public_key``'s Ed25519 signature over its signature base."""
    return ed25519.verify(public_key, signature_base(request, signed.covered), signed.signature)


def jwk_thumbprint(jwk: Mapping[str, object]) -> str:
    """The RFC 7638 thumbprint (SHA-256, base64url without padding) of an Ed25519 JWK."""
    members = {"crv": jwk.get("crv"), "kty": jwk.get("kty"), "x": jwk.get("x")}
    text = json.dumps(members, separators=(",", ":"), sort_keys=True)
    digest = hashlib.sha256(text.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def ed25519_key(jwk: Mapping[str, object]) -> bytes | None:
    """The 32-byte public key of an Ed25519 JWK (``kty`` OKP, ``crv`` Ed25519), or None."""
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or not isinstance(jwk.get("x"), str):
        return None
    x = str(jwk["x"])
    try:
        key = base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
    except ValueError:
        return None
    return key if len(key) == 32 else None


def directory_url(agent: str) -> str:
    """The key directory a ``Signature-Agent`` URL names: the URL itself when it has a path,
    else its origin's well-known directory. SignatureError unless it is https."""
    parts = urlsplit(agent)
    if parts.scheme != "https" or not parts.hostname or parts.username or parts.password:
        raise SignatureError("directory", "the Signature-Agent must be an https URL")
    if parts.path in ("", "/"):
        return f"https://{parts.netloc}/.well-known/http-message-signatures-directory"
    return agent
