"""The first start's one-time setup token: exchanged once, in the console, for the first key.

A deployment with no secret key at all prints a setup token on start (or takes
``ANTEROOM_SETUP_TOKEN``); only its SHA-256 is stored. Exchanging any offered token spends them
all for good (``lua/spend_setup.lua``, atomic), so across instances and restarts exactly one
first key is made this way; later keys come from ``anteroom keys create`` or the API.
"""

from __future__ import annotations

import hashlib
import secrets
import time

from anteroom.queue.connection import lua_scripts
from anteroom.queue.connection.redis_link import Client
from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.store.keystore import KeyRecord, KeyStore

MIN_LENGTH = 12
DONE = (
    "Setup is done: this deployment's first key was made already. Sign in with a secret key, "
    "or make one with `anteroom keys create`."
)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A random setup token (160 bits)."""
    return "setup_" + secrets.token_urlsafe(20)


class SetupRefused(Exception):
    """The token was wrong, or setup was already done; the message says which."""


class SetupTokens:
    """Setup tokens in Redis beside the key store."""

    def __init__(self, client: Client, keys: KeySpace) -> None:
        self.redis = client
        self.keys = keys
        self.keystore = KeyStore(client, keys)

    def needed(self) -> bool:
        """No secret key exists (live or revoked) and no setup token was exchanged yet."""
        with storage_errors():
            if self.redis.hlen(self.keys.secret_keys()):
                return False
            return not self.redis.hexists(self.keys.setup(), "spent")

    def offer(self, token: str) -> bool:
        """Accept ``token`` for the exchange; False when setup is already done."""
        if len(token) < MIN_LENGTH:
            raise ValueError(f"a setup token has at least {MIN_LENGTH} characters")
        script = lua_scripts.register_standalone(self.redis, "offer_setup")
        with storage_errors():
            return bool(script(keys=[self.keys.setup()], args=[_hash(token)]))

    def exchange(self, token: str, environment: str) -> tuple[KeyRecord, str]:
        """Spend ``token`` and make the first secret key of ``environment``: (record, secret).

        ``environment`` is checked first, so a typo there does not spend the token.
        """
        if not isinstance(token, str) or not token.strip():
            raise SetupRefused("Enter the setup token printed when Anteroom started.")
        KeyStore.check_environment(environment)
        script = lua_scripts.register_standalone(self.redis, "spend_setup")
        with storage_errors():
            # A key made meanwhile with `anteroom keys create` ends setup too.
            made = self.redis.hlen(self.keys.secret_keys())
            spent = (
                -1
                if made
                else script(keys=[self.keys.setup()], args=[_hash(token.strip()), _now_ms()])
            )
        if spent == -1:
            raise SetupRefused(DONE)
        if spent != 1:
            raise SetupRefused("That setup token is not valid.")
        return self.keystore.create(environment)


def _now_ms() -> int:
    return int(time.time() * 1000)
