"""Shapes of the management API's keys (docs/operators.md, "Keys"): the create body and answers."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from anteroom.store import keystore
from anteroom.web.api.api_models import Answer, Body, Wording, checked

Scope = Literal[keystore.SCOPES]  # type: ignore[valid-type]
KEY_ID_EXAMPLE = "3f9a0c7d21be"
SCOPES_WORDING = f"must be a non-empty list of distinct scopes among {', '.join(keystore.SCOPES)}"


def _distinct(scopes: list[str]) -> str | None:
    return "names a scope twice" if len(set(scopes)) != len(scopes) else None


class KeyCreate(Body):
    """``POST /keys``: the new key's scopes (each one the calling key holds itself)."""

    scopes: Annotated[list[Scope], checked(_distinct)] = Field(
        min_length=1,
        max_length=len(keystore.SCOPES),
        description="What the new key may do: queues:read (read rooms, their line and series), "
        "queues:write (create, change and delete rooms, invites, events, revocations), "
        "audit:read (the audit log), keys:write (list, create and revoke the environment's "
        "keys). A key only grants scopes it holds itself.",
        examples=[["queues:read", "audit:read"]],
    )
    messages: ClassVar[dict[str, Wording]] = {"scopes": SCOPES_WORDING}


class Key(Answer):
    """A secret key as the API shows it: never its secret, nor the secret's hash."""

    id: str = Field(
        pattern=keystore.KEY_ID.pattern,
        description="The key's id: the part of its secret after sk_, and who did what in the "
        "audit log (keyId).",
        examples=[KEY_ID_EXAMPLE],
    )
    scopes: list[Scope] = Field(
        description="What the key may do.", examples=[["queues:read", "queues:write"]]
    )
    publicKey: str = Field(
        description="The public key made with it, for pages and apps (pk_…); revoking the key "
        "revokes it too.",
        examples=["pk_R2d9xQ4mLw0aZb7C"],
    )
    createdAt: int = Field(description="When it was made, epoch ms.", examples=[1765112400000])
    revoked: bool = Field(
        description="true: refused everywhere, by the management API, the console and (its "
        "public key) the visitor API.",
        examples=[False],
    )


class KeyList(Answer):
    environment: str = Field(description="The environment the keys belong to.", examples=["prod"])
    keys: list[Key] = Field(
        description="Every key of the environment, revoked ones included, oldest first.",
        examples=[
            [
                {
                    "id": KEY_ID_EXAMPLE,
                    "scopes": list(keystore.SCOPES),
                    "publicKey": "pk_R2d9xQ4mLw0aZb7C",
                    "createdAt": 1765112400000,
                    "revoked": False,
                }
            ]
        ],
    )


class KeyCreated(Answer):
    key: Key = Field(
        description="The new key's record, as the list shows it.",
        examples=[
            {
                "id": KEY_ID_EXAMPLE,
                "scopes": ["queues:read"],
                "publicKey": "pk_R2d9xQ4mLw0aZb7C",
                "createdAt": 1765112400000,
                "revoked": False,
            }
        ],
    )
    secret: str = Field(
        pattern=r"^sk_",
        description="The secret key, sent as Authorization: Bearer. Shown in this answer only: "
        "Anteroom keeps its SHA-256, never logs it and the audit log names only its id.",
        examples=[f"sk_{KEY_ID_EXAMPLE}_q8PZt0cVhN3yL5mR2wE7kJ9aB4sD6fG1"],
    )


def shown(record: keystore.KeyRecord) -> dict[str, Any]:
    """A key record as :class:`Key` (createdAt in ms, as every time of the API)."""
    return {
        "id": record.id,
        "scopes": record.scopes,
        "publicKey": record.public_key,
        "createdAt": record.created_at * 1000,
        "revoked": record.revoked,
    }
