"""Revoking sessions through the management API: spots dropped, refreshes refused, audited."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from flask.testing import FlaskClient

from anteroom.identity import revocation
from anteroom.identity import sessions as identity
from anteroom.sdk import tokens
from anteroom.service_container import Services
from helpers import Operator, make_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis

BASE = "/api/management/v1"


@pytest.fixture
def keys(services: Services) -> dict[str, Any]:
    shop, secret = services.keystore.create("shop")
    _, reader = services.keystore.create("shop", ["queues:read"])
    other, other_secret = services.keystore.create("other")
    return {"pk": shop.public_key, "secret": secret, "reader": reader, "key_id": shop.id,
            "other_pk": other.public_key, "other": other_secret}  # fmt: skip


@pytest.fixture
def op(client: FlaskClient, keys: dict[str, Any]) -> Operator:
    return Operator(client, keys["secret"])


def rooms(services: Services, env: str = "shop") -> tuple[str, str]:
    """A slow room (visitors wait) and a quick one (visitors are admitted)."""
    slow = make_room(services.engine, env=env, slug="slow", ratePerMinute=1)
    quick = make_room(services.engine, env=env, slug="quick", ratePerMinute=60)
    for room_id in (slow, quick):
        services.engine.open(room_id)
    services.engine.shift_clock(quick, 1_000)
    return slow, quick


def session_of(v: Visitor) -> dict[str, Any]:
    return tokens.decode(tokens.Keyring.parse("k1:" + "a" * 43 + "="), v.session or "", "st1")


def test_revoking_a_session_drops_its_spots_blocks_refresh_and_is_audited(
    client: FlaskClient, services: Services, keys: dict[str, Any], op: Operator
) -> None:
    slow, _ = rooms(services)
    Visitor(client, keys["pk"]).enter("slow")  # someone ahead, so the next one waits
    v = Visitor(client, keys["pk"])
    admission = v.enter("quick").json["token"]
    assert v.enter("slow").json["status"] == "waiting"
    bystander = Visitor(client, keys["pk"])
    bystander.enter("slow")
    jti = session_of(v)["jti"]

    response = op.revoke({"jti": jti, "reason": "card testing"})
    assert response.status_code == 200, response.json
    body = response.json
    assert body["environment"] == "shop" and body["jti"] == jti and body["rooms"] == 2
    assert body["reason"] == "card testing" and body["expiresAt"] > 0

    polled = v.poll()
    assert polled.status_code == 403 and polled.json["error"] == "SessionRevoked"
    assert services.engine.stats(slow).waiting == 2  # its spot is gone, the others stay
    assert bystander.poll().json["position"] == 2
    refreshed = v.post("admission/refresh", {"apiKey": keys["pk"], "token": admission})
    assert refreshed.status_code == 403 and refreshed.json["error"] == "SessionRevoked"
    again = v.enter("slow")
    assert again.status_code == 403 and again.json["error"] == "SessionRevoked"

    event = client.get(BASE + "/audit", headers=op.headers).json["events"][0]
    assert event["type"] == "session.revoked" and event["keyId"] == keys["key_id"]
    assert event["session"] == {"jti": jti} and event["reason"] == "card testing"


def test_revoking_a_visitor_ends_every_session_of_it_and_its_vid(
    client: FlaskClient, services: Services, keys: dict[str, Any], op: Operator
) -> None:
    slow, _ = rooms(services)
    Visitor(client, keys["pk"]).enter("slow")
    v = Visitor(client, keys["pk"])
    v.enter("slow")
    vid = session_of(v)["vid"]
    assert op.revoke({"vid": vid}).status_code == 200
    assert services.engine.stats(slow).waiting == 1  # dropped at once, its place freed
    assert v.poll().json["error"] == "SessionRevoked"
    v.identify()  # previousSession names a revoked visitor: a new one is made
    assert session_of(v)["vid"] != vid
    assert identity.is_revoked(services.identity, "shop", "any", vid)


def test_a_room_created_later_knows_earlier_revocations(
    client: FlaskClient, services: Services, keys: dict[str, Any], op: Operator
) -> None:
    rooms(services)
    v = Visitor(client, keys["pk"])
    v.identify()
    op.revoke({"jti": session_of(v)["jti"]})
    services.engine.open(make_room(services.engine, env="shop", slug="later"))
    assert v.enter("later").json["error"] == "SessionRevoked"


def test_revocations_expire_after_the_longest_token_life(
    client: FlaskClient, services: Services, keys: dict[str, Any], op: Operator
) -> None:
    room_id = make_room(services.engine, env="shop", slug="long", abandonAfterSec=86_400)
    services.engine.open(room_id)
    room = services.engine.get_room(room_id)
    life = revocation.life_sec(room)
    assert life == 86_400  # the queue token's life is the longest here (sessions: 6 h)
    assert revocation.life_sec(room | {"abandonAfterSec": 300}) == identity.SESSION_TTL_SEC
    v = Visitor(client, keys["pk"])
    v.identify()
    op.revoke({"jti": session_of(v)["jti"]})
    services.engine.shift_clock(room_id, (life - 5) * 1000)
    assert v.enter("long").json["error"] == "SessionRevoked"
    services.engine.shift_clock(room_id, 10_000)
    assert v.enter("long").status_code == 200


@pytest.mark.parametrize(
    ("body", "bad"),
    [
        ({}, {"jti", "vid"}),
        ({"jti": "a", "vid": "b"}, {"jti", "vid"}),
        ({"jti": 5}, {"jti"}),
        ({"vid": "has space"}, {"vid"}),
        ({"jti": "x" * 65}, {"jti"}),
        ({"jti": "abc", "reason": 7}, {"reason"}),
        ({"jti": "abc", "reason": "x" * 501}, {"reason"}),
        ({"jti": "abc", "until": 1}, {"until"}),
    ],
)
def test_bad_revocations_name_the_field(op: Operator, body: dict[str, Any], bad: set[str]) -> None:
    response = op.revoke(body)
    assert response.status_code == 400 and response.json["error"] == "BadRequest"
    assert set(response.json["fields"]) == bad


def test_scope_and_environment(
    client: FlaskClient,
    services: Services,
    keys: dict[str, Any],
    op: Operator,
    redis_client: redis.Redis,
) -> None:
    rooms(services)
    rooms(services, env="other")
    v = Visitor(client, keys["other_pk"])
    v.enter("slow")
    jti = session_of(v)["jti"]
    reader = Operator(client, keys["reader"])
    assert reader.revoke({"jti": jti}).status_code == 403
    assert op.revoke({"jti": jti}, environment="other").status_code == 403
    assert op.revoke({"jti": jti}).json["rooms"] == 2  # shop's two rooms, not other's
    assert v.poll().status_code == 200  # another environment's session is untouched
    assert client.post(BASE + "/sessions/revoke", json={"jti": jti}).status_code == 401
    # One store: nothing outside the rooms' own hashes.
    assert not [k for k in redis_client.keys("*") if ":rv:" in k]


def test_enter_asks_redis_nothing_about_revocations_outside_its_script(
    client: FlaskClient, services: Services, keys: dict[str, Any], redis_client: redis.Redis
) -> None:
    rooms(services)
    v = Visitor(client, keys["pk"])
    v.identify()
    v.enter("slow")
    before = redis_client.info("commandstats").get("cmdstat_exists", {}).get("calls", 0)
    v.enter("slow")
    after = redis_client.info("commandstats").get("cmdstat_exists", {}).get("calls", 0)
    assert after == before
