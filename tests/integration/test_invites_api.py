"""Invite links through the real app and a real Redis (docs/operators.md, "Invite links"): issued
by the management API (validated, audited without the tokens), spent at the visitor API's enter."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.sdk import tokens
from anteroom.service_container import Services
from helpers import Operator
from visitor_client import Visitor

pytestmark = pytest.mark.redis

ROOM = {"slug": "spring-drop", "name": "Spring drop", "redirectUrl": "https://shop.example/co",
        "ratePerMinute": 1}  # fmt: skip


@pytest.fixture
def keys(services: Services) -> dict[str, Any]:
    prod, secret = services.keystore.create("prod")
    _, reader = services.keystore.create("prod", ["queues:read"])
    return {"public": prod.public_key, "secret": secret, "reader": reader}


@pytest.fixture
def op(client: FlaskClient, keys: dict[str, Any]) -> Operator:
    return Operator(client, keys["secret"], ROOM)


@pytest.fixture
def room(op: Operator) -> dict[str, Any]:
    created = op.create()
    assert op.patch(created["id"], {"action": "open"}).status_code == 200
    return created


def issue(op: Operator, services: Services, room_id: str, **body: Any) -> list[str]:
    later = services.series.now_ms(room_id) + 3_600_000
    base = {"count": 1, "expiresAt": later, "uses": 1, "lane": "skip"}
    response = op.call("POST", f"/queues/{room_id}/invites", base | body)
    assert response.status_code == 201, response.json
    return response.json["invites"]  # type: ignore[no-any-return]


def waiting(client: FlaskClient, keys: dict[str, Any], n: int) -> list[Visitor]:
    out = []
    for _ in range(n):
        v = Visitor(client, keys["public"])
        assert v.enter("spring-drop").json["status"] == "waiting"
        out.append(v)
    return out


def test_invites_are_signed_for_the_room_and_audited_without_them(
    op: Operator, services: Services, room: dict[str, Any]
) -> None:
    invites = issue(op, services, room["id"], count=3, uses=2, lane="priority")
    assert len(set(invites)) == 3
    claims = [tokens.decode(services.keyring, t, tokens.INVITE) for t in invites]
    assert {(c["qr"], c["env"], c["iu"], c["il"]) for c in claims} == {
        (room["id"], "prod", 2, "priority")
    }
    events = op.call("GET", "/audit").json["events"]
    assert events[0]["type"] == "queue.invites"
    assert events[0]["invites"] | {"expiresAt": 0} == {
        "count": 3, "lane": "priority", "uses": 2, "expiresAt": 0
    }  # fmt: skip
    assert not any(t in str(events[0]) for t in invites)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"count": 0}, "count"),
        ({"count": 1001}, "count"),
        ({"uses": 0}, "uses"),
        ({"lane": "vip"}, "lane"),
        ({"expiresAt": 1}, "expiresAt"),
        ({"expiresAt": "soon"}, "expiresAt"),
        ({"count": True}, "count"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(
    op: Operator, room: dict[str, Any], body: dict[str, Any], field: str
) -> None:
    good = {"count": 1, "expiresAt": 2**41, "uses": 1, "lane": "skip"}
    response = op.call("POST", f"/queues/{room['id']}/invites", good | body)
    assert response.status_code == 400 and field in response.json["fields"], response.json


def test_issuing_needs_the_write_scope_and_a_room(
    client: FlaskClient, keys: dict[str, Any], op: Operator, room: dict[str, Any]
) -> None:
    body = {"count": 1, "expiresAt": 2**41, "uses": 1, "lane": "skip"}
    reader = Operator(client, keys["reader"])
    assert reader.call("POST", f"/queues/{room['id']}/invites", body).status_code == 403
    assert op.call("POST", "/queues/q0000000000000000/invites", body).status_code == 404


def test_skip_is_admitted_at_once_and_priority_goes_first(
    client: FlaskClient, keys: dict[str, Any], op: Operator, services: Services,
    room: dict[str, Any],
) -> None:  # fmt: skip
    public = waiting(client, keys, 2)
    [skip] = issue(op, services, room["id"])
    [priority] = issue(op, services, room["id"], lane="priority")
    guest = Visitor(client, keys["public"])
    assert guest.enter("spring-drop", skip).json["status"] == "admitted"
    second = Visitor(client, keys["public"])
    answer = second.enter("spring-drop", priority).json
    assert (answer["status"], answer["position"]) == ("waiting", 1)
    assert public[0].poll().json["position"] == 2


def test_spent_expired_forged_and_other_room_invites(
    client: FlaskClient, keys: dict[str, Any], op: Operator, services: Services,
    room: dict[str, Any],
) -> None:  # fmt: skip
    [once] = issue(op, services, room["id"])
    first = Visitor(client, keys["public"])
    assert first.enter("spring-drop", once).json["status"] == "admitted"
    # the same visitor again: not a second use
    assert first.enter("spring-drop", once).status_code == 200
    refused = Visitor(client, keys["public"]).enter("spring-drop", once)
    assert (refused.status_code, refused.json["error"]) == (409, "InviteSpent")

    soon = services.series.now_ms(room["id"]) + 60_000
    [short] = issue(op, services, room["id"], expiresAt=soon)
    services.engine.shift_clock(room["id"], 60_000)
    late = Visitor(client, keys["public"]).enter("spring-drop", short)
    assert (late.status_code, late.json["error"]) == (410, "InviteExpired")

    head, kid, payload, _ = once.split(".")
    forged = ".".join([head, kid, payload, tokens.b64url_encode(b"x" * 32)])
    other = op.create(slug="autumn-drop")
    [elsewhere] = issue(op, services, other["id"])
    for bad in (forged, elsewhere, "iv1.nonsense", "st1." + once[4:]):
        answer = Visitor(client, keys["public"]).enter("spring-drop", bad)
        assert (answer.status_code, answer.json["error"]) == (401, "TokenInvalid"), bad


def test_an_invite_admits_its_visitor_once_and_re_entry_is_the_public_line(
    client: FlaskClient, keys: dict[str, Any], op: Operator, services: Services,
    room: dict[str, Any],
) -> None:  # fmt: skip
    """A uses=1 skip invite in a room that renews no session: leaving and entering again with
    it, or coming back once the admission is over, is no second admission past the line."""
    # (spots kept unpolled for 10 minutes: the line ahead stays while the clock moves on)
    settings = {"sessionRenewal": False, "abandonAfterSec": 600}
    assert op.patch(room["id"], settings).status_code == 200
    waiting(client, keys, 1)
    [once] = issue(op, services, room["id"])
    guest = Visitor(client, keys["public"])
    admitted = guest.enter("spring-drop", once).json
    assert admitted["status"] == "admitted"
    renew = guest.post("admission/refresh", {"apiKey": keys["public"], "token": admitted["token"]})
    assert (renew.status_code, renew.json["error"]) == (403, "NotRenewable")
    assert guest.leave().status_code == 204
    again = guest.enter("spring-drop", once)
    assert again.status_code == 200, again.json
    assert (again.json["status"], again.json["position"]) == ("waiting", 2)  # behind the one
    assert again.json["ticket"] > admitted["ticket"]

    [other] = issue(op, services, room["id"])
    second = Visitor(client, keys["public"])
    assert second.enter("spring-drop", other).json["status"] == "admitted"
    services.engine.shift_clock(room["id"], (int(room["admissionTtlSec"]) + 61) * 1000)
    back = second.enter("spring-drop", other)  # its admission over: no renewal by re-entry
    assert back.status_code == 200, back.json
    assert back.json["status"] == "waiting" and back.json["position"] == 2
