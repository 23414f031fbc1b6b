"""Console sign-in sessions: an opaque, signed cookie naming a short-lived session in Redis.

The secret key an operator signs in with is checked once and never kept: the session holds
the key's id (so a revoked key ends every session of it at the next request) and a CSRF token.
The cookie is ``HttpOnly; SameSite=Strict`` (``Secure`` over https), has no expiry of its own
(it ends with the browser session), and the session itself ends after :data:`IDLE_SEC` without
use or :data:`MAX_SEC` after sign-in, whichever comes first.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.service_container import Services
from anteroom.store.keystore import KeyRecord

COOKIE = "anteroom_console"
IDLE_SEC = 30 * 60
MAX_SEC = 8 * 3600
PURPOSE = "console-session"


@dataclass(frozen=True)
class ConsoleSession:
    """A live session: the key it acts as, and the token every change must echo."""

    sid: str
    key: KeyRecord
    csrf: str


def _redis_key(s: Services, sid: str) -> str:
    # The id itself is not stored as a name: reading Redis's key names does not give a cookie.
    digest = hashlib.sha256(sid.encode()).hexdigest()
    return f"{s.keys.prefix}console:{digest}"


def _signature(s: Services, sid: str) -> str:
    key = s.keyring.derived_key(s.keyring.signing_kid, PURPOSE)
    mac = hmac.new(key, sid.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def start(s: Services, key: KeyRecord) -> tuple[str, ConsoleSession]:
    """A new session for ``key``: (cookie value, session)."""
    sid = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(24)
    now = int(time.time())
    with storage_errors():
        s.redis.hset(_redis_key(s, sid), mapping={"kid": key.id, "csrf": csrf, "at": now})
        s.redis.expire(_redis_key(s, sid), IDLE_SEC)
    return f"{sid}.{_signature(s, sid)}", ConsoleSession(sid, key, csrf)


def load(s: Services, cookie: str) -> ConsoleSession | None:
    """The live session the cookie names (its idle time renewed), or None."""
    sid, _, signature = (cookie or "").partition(".")
    if not sid or len(cookie) > 200 or not hmac.compare_digest(signature, _signature(s, sid)):
        return None
    name = _redis_key(s, sid)
    with storage_errors():
        raw = s.redis.hgetall(name)
    if not raw or int(raw.get("at", 0)) + MAX_SEC < time.time():
        return None
    key = s.keystore.get(raw["kid"])
    if key is None or key.revoked:
        return None
    with storage_errors():
        s.redis.expire(name, IDLE_SEC)
    return ConsoleSession(sid, key, raw["csrf"])


def end(s: Services, session: ConsoleSession) -> None:
    """Sign out: the session is gone, whatever cookie still names it."""
    with storage_errors():
        s.redis.delete(_redis_key(s, session.sid))
