"""API keys: public keys ``pk_…`` name an environment; secret keys ``sk_…`` carry scopes.

A secret is shown once, when created; only its SHA-256 is stored, and it is checked in
constant time. The key id is part of the secret (``sk_<id>_<random>``) so a lookup needs no scan.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import asdict, dataclass, field

from anteroom.queue.connection.redis_link import Client
from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.queue.rooms.key_layout import KeySpace

# keys:write creates and revokes keys of the key's own environment (only with scopes it holds).
SCOPES = ("queues:read", "queues:write", "audit:read", "keys:write")
KEY_ID = re.compile(r"^[a-z0-9]{12}$")
ENV_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_SECRET = re.compile(r"^sk_([a-z0-9]{12})_[A-Za-z0-9_-]{20,64}$")


@dataclass
class KeyRecord:
    """What is stored about a secret key (never the secret itself)."""

    id: str
    environment: str
    scopes: list[str]
    public_key: str
    secret_hash: str
    created_at: int
    revoked: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    def public(self) -> dict[str, object]:
        """The record as shown by ``keys list``: no hash, no secret."""
        return {
            "id": self.id,
            "environment": self.environment,
            "scopes": self.scopes,
            "publicKey": self.public_key,
            "createdAt": self.created_at,
            "revoked": self.revoked,
        }


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class KeyStore:
    """Keys in Redis under one :class:`KeySpace`."""

    def __init__(self, client: Client, keys: KeySpace) -> None:
        self.redis = client
        self.keys = keys

    def create(self, environment: str, scopes: list[str] | None = None) -> tuple[KeyRecord, str]:
        """A new public + secret key pair for ``environment``; returns (record, secret)."""
        self.check_environment(environment)
        scopes = list(SCOPES) if scopes is None else scopes
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown or not scopes:
            raise ValueError(f"scopes must be among {', '.join(SCOPES)}")
        key_id = secrets.token_hex(6)
        secret = f"sk_{key_id}_{secrets.token_urlsafe(24)}"
        public_key = f"pk_{secrets.token_urlsafe(12)}"
        record = KeyRecord(key_id, environment, scopes, public_key, _hash(secret), int(time.time()))
        # Three keys in three Cluster slots, so no transaction: written in an order where a
        # failure part-way leaves nothing usable. The public key, which visitors use, goes last;
        # a secret key written alone is harmless, as its secret was never shown to anyone.
        with storage_errors():
            self.redis.hset(self.keys.secret_keys(), key_id, json.dumps(asdict(record)))
            self.redis.sadd(self.keys.environments(), environment)
            self.redis.hset(self.keys.public_keys(), public_key, environment)
        return record, secret

    @staticmethod
    def check_environment(environment: str) -> None:
        """ValueError unless ``environment`` is a valid environment name."""
        if not isinstance(environment, str) or not ENV_PATTERN.match(environment):
            raise ValueError("environment must match ^[a-z0-9][a-z0-9_-]{0,31}$")

    def get(self, key_id: str) -> KeyRecord | None:
        """The record of ``key_id``, or None."""
        with storage_errors():
            raw = self.redis.hget(self.keys.secret_keys(), key_id)
        return KeyRecord(**json.loads(raw)) if raw else None

    def list(self, environment: str | None = None) -> list[KeyRecord]:
        """Every key record (of one environment), oldest first."""
        with storage_errors():
            raw = self.redis.hvals(self.keys.secret_keys())
        records = [KeyRecord(**json.loads(r)) for r in raw]
        if environment:
            records = [r for r in records if r.environment == environment]
        return sorted(records, key=lambda r: (r.created_at, r.id))

    def revoke(self, key_id: str) -> bool:
        """Revoke a secret key and its public key; False when there is no such key."""
        record = self.get(key_id)
        if record is None:
            return False
        record.revoked = True
        # Two slots, no transaction: the secret is refused first; if dropping the public key
        # then fails, the caller sees the error and revoking again finishes the job.
        with storage_errors():
            self.redis.hset(self.keys.secret_keys(), key_id, json.dumps(asdict(record)))
            self.redis.hdel(self.keys.public_keys(), record.public_key)
        return True

    def authenticate(self, secret: str) -> KeyRecord | None:
        """The live record whose secret is ``secret`` (constant-time check), or None."""
        match = _SECRET.match(secret or "")
        if not match:
            return None
        record = self.get(match.group(1))
        if record is None or record.revoked:
            return None
        if not hmac.compare_digest(record.secret_hash, _hash(secret)):
            return None
        return record

    def environment_of(self, public_key: str) -> str | None:
        """Environment named by a public key, or None."""
        if not isinstance(public_key, str) or not public_key.startswith("pk_"):
            return None
        if len(public_key) > 64:
            return None
        with storage_errors():
            return self.redis.hget(self.keys.public_keys(), public_key)
