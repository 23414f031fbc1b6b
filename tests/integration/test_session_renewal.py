"""``sessionRenewal`` (docs/operators.md, "Session life") through the real app and a real Redis: the
management API's field, the admission's claim, and the refresh the service refuses."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.sdk import tokens
from anteroom.service_container import Services
from helpers import Operator
from visitor_client import Visitor

pytestmark = pytest.mark.redis

ROOM = {"slug": "fixed-drop", "name": "Fixed drop", "redirectUrl": "https://shop.example/co"}


@pytest.fixture
def op(client: FlaskClient, services: Services) -> Operator:
    _, secret = services.keystore.create("shop")
    return Operator(client, secret, ROOM)


@pytest.fixture
def api_key(services: Services) -> str:
    record, _ = services.keystore.create("shop")
    return record.public_key


@pytest.fixture
def room(op: Operator) -> dict[str, Any]:
    """An open room that admits at once."""
    created = op.call("POST", "/queues", ROOM)
    assert created.status_code == 201, created.json
    opened = op.patch(created.json["id"], {"action": "open"})
    assert opened.status_code == 200, opened.json
    return opened.json  # type: ignore[no-any-return]


def claims_of(services: Services, token: str) -> dict[str, Any]:
    return tokens.decode(services.keyring, token, tokens.ADMISSION, now=0)


def refresh(visitor: Visitor, api_key: str, token: str) -> Any:
    return visitor.post("admission/refresh", {"apiKey": api_key, "token": token})


def test_by_default_admissions_are_renewable_and_renewed(
    client: FlaskClient, services: Services, api_key: str, room: dict[str, Any]
) -> None:
    assert room["sessionRenewal"] is True
    v = Visitor(client, api_key)
    services.engine.shift_clock(room["id"], 1_000)
    token = v.admitted(ROOM["slug"])
    assert tokens.NOT_RENEWABLE not in claims_of(services, token)
    assert not tokens.AdmissionClaims.from_wire(claims_of(services, token)).not_renewable
    renewed = refresh(v, api_key, token)
    assert renewed.status_code == 200 and renewed.json["status"] == "admitted"


def test_off_admissions_say_so_and_are_never_renewed(
    client: FlaskClient, services: Services, op: Operator, api_key: str, room: dict[str, Any]
) -> None:
    patched = op.patch(room["id"], {"sessionRenewal": False})
    assert patched.status_code == 200 and patched.json["sessionRenewal"] is False
    v = Visitor(client, api_key)
    services.engine.shift_clock(room["id"], 1_000)
    token = v.admitted(ROOM["slug"])
    claims = claims_of(services, token)
    assert claims[tokens.NOT_RENEWABLE] == 1
    assert tokens.AdmissionClaims.from_wire(claims).not_renewable
    assert claims["exp"] - claims["iat"] == room["admissionTtlSec"]
    refused = refresh(v, api_key, token)
    assert refused.status_code == 403
    assert refused.json["error"] == "NotRenewable"
    assert "sessionRenewal" in refused.json["message"]
    # Turning renewal back on does not make a token that says otherwise renewable.
    assert op.patch(room["id"], {"sessionRenewal": True}).status_code == 200
    assert refresh(v, api_key, token).json["error"] == "NotRenewable"
    services.engine.shift_clock(room["id"], 1_000)  # the drain earns the next admission
    fresh = Visitor(client, api_key).admitted(ROOM["slug"])
    assert tokens.NOT_RENEWABLE not in claims_of(services, fresh)


def test_turning_it_off_ends_admissions_already_dealt_at_their_expiry(
    client: FlaskClient, services: Services, op: Operator, api_key: str, room: dict[str, Any]
) -> None:
    v = Visitor(client, api_key)
    services.engine.shift_clock(room["id"], 1_000)
    token = v.admitted(ROOM["slug"])  # renewable: dealt before the change
    assert refresh(v, api_key, token).status_code == 200
    assert op.patch(room["id"], {"sessionRenewal": False}).status_code == 200
    refused = refresh(v, api_key, token)
    assert (refused.status_code, refused.json["error"]) == (403, "NotRenewable")


def test_the_field_is_checked_and_audited(
    op: Operator, room: dict[str, Any], services: Services
) -> None:
    bad = op.patch(room["id"], {"sessionRenewal": "no"})
    assert bad.status_code == 400
    assert "sessionRenewal" in bad.json["fields"]
    assert op.call("GET", f"/queues/{room['id']}").json["sessionRenewal"] is True
    assert op.patch(room["id"], {"sessionRenewal": False}).status_code == 200
    event = op.call("GET", "/audit", limit="1").json["events"][0]
    assert event["type"] == "queue.updated"
    assert event["changes"] == {"sessionRenewal": {"before": True, "after": False}}
    created = op.call("POST", "/queues", ROOM | {"slug": "fixed-two", "sessionRenewal": False})
    assert created.status_code == 201 and created.json["sessionRenewal"] is False
