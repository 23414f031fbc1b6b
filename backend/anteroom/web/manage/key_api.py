"""The management API's keys (docs/operators.md, "Keys"): list, create, revoke, in the calling
key's own environment.

An environment is an isolation boundary: a key sees and acts on its own environment's keys only
(another's answer 404, as unknown ones), and grants no scope it lacks itself. A new environment
starts from the command line or the setup token. The secret is in the create answer only: never
logged, never in the audit log (which names the key's id and scopes).
"""

from __future__ import annotations

from flask import Response
from flask.typing import ResponseReturnValue

from anteroom.store import keystore
from anteroom.store.audit_log import AuditLog
from anteroom.web.api import api_routes as routes
from anteroom.web.manage.key_models import KeyCreate, KeyCreated, KeyList, shown
from anteroom.web.manage.management_api import Call, management_call, storage
from anteroom.web.serving import http_errors as errors


@management_call(routes.LIST_KEYS)
def list_keys(call: Call[None]) -> ResponseReturnValue:
    """Every key of the environment, oldest first, without secrets."""
    with storage():
        records = call.services.keystore.list(call.env)
    listed = [shown(r) for r in records if r.environment == call.env]
    return KeyList.model_validate({"environment": call.env, "keys": listed})


@management_call(routes.CREATE_KEY)
def create_key(call: Call[KeyCreate]) -> ResponseReturnValue:
    """A new key pair in the caller's environment, with scopes the caller holds (403 else)."""
    s, scopes = call.services, list(call.data.scopes)
    lacking = [scope for scope in scopes if scope not in call.key.scopes]
    if lacking:
        why = f"this key lacks {', '.join(lacking)}: a key grants only scopes it holds itself"
        raise errors.Forbidden("A key cannot grant more than it holds.", fields={"scopes": why})
    with storage():
        record, secret = s.keystore.create(call.env, scopes)
        AuditLog(s.redis, s.keys).record(
            call.env,
            "key.created",
            key_id=call.key.id,
            subject_key={"id": record.id, "scopes": record.scopes},
        )
    location = routes.REVOKE_KEY.path.replace("{keyId}", record.id)
    answer = KeyCreated.model_validate({"key": shown(record), "secret": secret})
    return answer, 201, {"Location": location}


@management_call(routes.REVOKE_KEY)
def revoke_key(call: Call[None], key_id: str) -> ResponseReturnValue:
    """Revoke a key of the environment (not the caller's own: 409); revoking again is a 204."""
    s = call.services
    if not keystore.KEY_ID.match(key_id):
        fields = {"keyId": "must be a key's id: 12 lower-case letters or digits"}
        raise errors.BadRequest("That is not a key id.", fields=fields)
    with storage():
        record = s.keystore.get(key_id)
    if record is None or record.environment != call.env:
        raise errors.KeyNotFound(f"No key {key_id} in this environment.")
    if record.id == call.key.id:
        raise errors.KeyInUse(
            f"Key {key_id} is the one making this call; to revoke it, sign in (or call) with "
            "another key of the environment."
        )
    beyond = [scope for scope in record.scopes if scope not in call.key.scopes]
    if beyond:
        # As a key grants only what it holds, it revokes only what it could have granted: a
        # narrow key must not lock the environment's wider keys out.
        why = f"that key holds {', '.join(beyond)}, which this key lacks"
        raise errors.Forbidden("A key cannot revoke one that holds more.", fields={"keyId": why})
    with storage():
        s.keystore.revoke(key_id)
        # Other processes' directories read the public keys again within their next round.
        s.redis.incr(s.keys.rooms_version())
        AuditLog(s.redis, s.keys).record(
            call.env, "key.revoked", key_id=call.key.id, subject_key={"id": key_id}
        )
    # This process refuses its public key at once (its cache and directory read Redis again).
    s.public_keys.forget(record.public_key)
    s.directory.outdated()
    return Response(status=204)
