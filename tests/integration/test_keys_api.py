"""Keys through the management API and the console's JSON calls, on the real app and Redis:
listed without secrets, created with scopes the caller holds (the secret shown once, never
audited), revoked (the secret, the public key and console sessions refused at once), within the
caller's environment only, and never by the key itself."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.service_container import Services
from anteroom.store import keystore
from helpers import Operator
from visitor_client import Visitor

pytestmark = pytest.mark.redis

SAME = {"Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def keys(services: Services) -> dict[str, Any]:
    admin, secret = services.keystore.create("prod")
    narrow, narrow_secret = services.keystore.create("prod", ["queues:read", "keys:write"])
    reader, reader_secret = services.keystore.create("prod", ["queues:read"])
    other, other_secret = services.keystore.create("staging")
    return {
        "admin": admin, "secret": secret, "narrow": narrow, "narrow_secret": narrow_secret,
        "reader": reader, "reader_secret": reader_secret, "other": other,
        "other_secret": other_secret,
    }  # fmt: skip


@pytest.fixture
def op(client: FlaskClient, keys: dict[str, Any]) -> Operator:
    return Operator(client, keys["secret"])


def test_keys_made_without_scopes_named_have_every_scope_keys_write_included(
    services: Services,
) -> None:
    record, _ = services.keystore.create("fresh")
    assert record.scopes == list(keystore.SCOPES) and "keys:write" in record.scopes


def test_the_list_shows_the_environments_keys_and_no_secret(
    op: Operator, keys: dict[str, Any], services: Services
) -> None:
    answer = op.call("GET", "/keys")
    assert answer.status_code == 200 and answer.json["environment"] == "prod"
    listed = {k["id"]: k for k in answer.json["keys"]}
    assert set(listed) == {keys["admin"].id, keys["narrow"].id, keys["reader"].id}
    assert listed[keys["reader"].id] == {
        "id": keys["reader"].id, "scopes": ["queues:read"],
        "publicKey": keys["reader"].public_key,
        "createdAt": keys["reader"].created_at * 1000, "revoked": False,
    }  # fmt: skip
    text = answer.get_data(as_text=True)
    assert keys["secret"] not in text and keys["admin"].secret_hash not in text


def test_a_key_is_created_in_the_callers_environment_with_its_secret_shown_once(
    client: FlaskClient, op: Operator, services: Services
) -> None:
    made = op.call("POST", "/keys", {"scopes": ["queues:read", "audit:read"]})
    assert made.status_code == 201, made.json
    key, secret = made.json["key"], made.json["secret"]
    assert made.headers["Location"] == f"/api/management/v1/keys/{key['id']}"
    assert key["scopes"] == ["queues:read", "audit:read"] and not key["revoked"]
    assert services.keystore.get(key["id"]).environment == "prod"  # type: ignore[union-attr]
    # the secret works, within its scopes, and is listed nowhere again
    fresh = Operator(client, secret)
    assert fresh.call("GET", "/queues").status_code == 200
    assert fresh.call("POST", "/queues", {}).status_code == 403
    assert secret not in op.call("GET", "/keys").get_data(as_text=True)
    # audited by id and scopes, never the secret
    [event] = op.call("GET", "/audit").json["events"][:1]
    assert event["type"] == "key.created" and event["key"] == {
        "id": key["id"], "scopes": ["queues:read", "audit:read"]
    }  # fmt: skip
    assert secret not in str(op.call("GET", "/audit").json)


@pytest.mark.parametrize(
    "body",
    [{"scopes": []}, {"scopes": ["queues:admin"]}, {"scopes": "queues:read"},
     {"scopes": ["queues:read", "queues:read"]}, {}, {"scopes": [1]}],
)  # fmt: skip
def test_bad_scopes_are_a_400_naming_scopes(op: Operator, body: dict[str, Any]) -> None:
    answer = op.call("POST", "/keys", body)
    assert answer.status_code == 400 and set(answer.json["fields"]) == {"scopes"}, answer.json


def test_a_key_grants_no_scope_it_lacks(client: FlaskClient, keys: dict[str, Any]) -> None:
    narrow = Operator(client, keys["narrow_secret"])
    refused = narrow.call("POST", "/keys", {"scopes": ["queues:read", "queues:write"]})
    assert refused.status_code == 403 and "queues:write" in refused.json["fields"]["scopes"]
    assert narrow.call("POST", "/keys", {"scopes": ["queues:read"]}).status_code == 201
    # without keys:write, no key business at all
    reader = Operator(client, keys["reader_secret"])
    assert reader.call("GET", "/keys").status_code == 403
    assert reader.call("POST", "/keys", {"scopes": ["queues:read"]}).status_code == 403


def test_environments_are_boundaries(
    client: FlaskClient, op: Operator, keys: dict[str, Any]
) -> None:
    assert op.call("GET", "/keys", environment="staging").status_code == 403
    assert (
        op.call("POST", "/keys", {"scopes": ["queues:read"]}, environment="staging").status_code
        == 403
    )
    other = keys["other"].id
    gone = op.call("DELETE", f"/keys/{other}")
    assert (gone.status_code, gone.json["error"]) == (404, "KeyNotFound")
    assert Operator(client, keys["other_secret"]).call("GET", "/queues").status_code == 200


def test_revoking_a_key_refuses_its_secret_its_public_key_and_audits_it(
    client: FlaskClient, op: Operator, keys: dict[str, Any], services: Services
) -> None:
    victim = keys["reader"]
    visitor = Visitor(client, victim.public_key)
    assert visitor.post("challenge", {"apiKey": victim.public_key}).status_code == 200
    assert op.call("DELETE", f"/keys/{victim.id}").status_code == 204
    refused = Operator(client, keys["reader_secret"]).call("GET", "/queues")
    assert refused.status_code == 401
    # its public key too, at once in this process (pages and apps using it are refused)
    gone = visitor.post("challenge", {"apiKey": victim.public_key})
    assert (gone.status_code, gone.json["error"]) == (401, "Unauthorized")
    listed = {k["id"]: k for k in op.call("GET", "/keys").json["keys"]}
    assert listed[victim.id]["revoked"] is True
    event = op.call("GET", "/audit").json["events"][0]
    assert (event["type"], event["key"], event["keyId"]) == (
        "key.revoked",
        {"id": victim.id},
        keys["admin"].id,
    )
    # revoking again is no error
    assert op.call("DELETE", f"/keys/{victim.id}").status_code == 204


def test_a_key_cannot_revoke_itself(op: Operator, keys: dict[str, Any]) -> None:
    own = op.call("DELETE", f"/keys/{keys['admin'].id}")
    assert (own.status_code, own.json["error"]) == (409, "KeyInUse")
    assert "another key" in own.json["message"]
    assert op.call("GET", "/queues").status_code == 200


@pytest.mark.parametrize("key_id", ["short", "ABCDEF123456", "0123456789abc", "x" * 200, "a.b"])
def test_a_malformed_key_id_is_a_400(op: Operator, key_id: str) -> None:
    answer = op.call("DELETE", f"/keys/{key_id}")
    assert answer.status_code == 400 and set(answer.json["fields"]) == {"keyId"}, answer.json


def test_an_unknown_key_id_is_a_404(op: Operator) -> None:
    answer = op.call("DELETE", "/keys/000000000000")
    assert (answer.status_code, answer.json["error"]) == (404, "KeyNotFound")


def _sign_in(client: FlaskClient, secret: str) -> str:
    assert client.post("/console/sign-in", data={"secret": secret}, headers=SAME).status_code == 303
    page = client.get("/console").get_data(as_text=True)
    return page.split('name="anteroom-csrf" content="', 1)[1].split('"', 1)[0]


def test_a_key_revoked_through_the_api_ends_its_console_sessions(
    client: FlaskClient, app: Any, keys: dict[str, Any]
) -> None:
    _sign_in(client, keys["narrow_secret"])
    assert client.get("/console/api/queues").status_code == 200
    admin = app.test_client()
    token = _sign_in(admin, keys["secret"])
    headers = SAME | {"X-Anteroom-CSRF": token}
    # the console's own call, as the signed-in admin
    assert (
        admin.delete(f"/console/api/keys/{keys['narrow'].id}", headers=headers).status_code == 204
    )
    assert client.get("/console/api/queues").status_code == 401
    assert client.get("/console").get_data(as_text=True).count('name="secret"') == 1  # sign-in form
    # and the admin's own session cannot revoke its key, in words saying what to do
    own = admin.delete(f"/console/api/keys/{keys['admin'].id}", headers=headers)
    assert own.status_code == 409 and "sign in" in own.json["message"]


def test_the_console_shows_the_keys_section_only_to_a_key_with_keys_write(
    app: Any, keys: dict[str, Any]
) -> None:
    admin, reader = app.test_client(), app.test_client()
    _sign_in(admin, keys["secret"])
    _sign_in(reader, keys["reader_secret"])
    assert 'id="keys-section"' in admin.get("/console").get_data(as_text=True)
    assert 'id="keys-section"' not in reader.get("/console").get_data(as_text=True)
    assert reader.get("/console/api/keys").status_code == 403


def test_a_key_cannot_revoke_one_holding_scopes_it_lacks(
    client: FlaskClient, keys: dict[str, Any], services: Services
) -> None:
    # A key that may only read rooms and manage keys cannot lock out the environment's admin
    # (nor anyone holding more than it does); it may revoke a key within its own scopes.
    narrow = Operator(client, keys["narrow_secret"])
    refused = narrow.call("DELETE", f"/keys/{keys['admin'].id}")
    assert refused.status_code == 403, refused.json
    assert "queues:write" in refused.json["fields"]["keyId"]
    assert services.keystore.authenticate(keys["secret"]) is not None
    assert narrow.call("DELETE", f"/keys/{keys['reader'].id}").status_code == 204
