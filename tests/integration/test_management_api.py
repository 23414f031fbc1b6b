"""The management API through the real app and a real Redis: keys, scopes, rooms, actions, audit."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from flask.testing import FlaskClient

from anteroom.queue.rooms import room_config as rooms
from anteroom.queue.rooms.room_hash import stored as stored_name
from anteroom.sdk import bypass_rules
from anteroom.service_container import Services
from helpers import Operator
from visitor_client import Visitor

pytestmark = pytest.mark.redis

BASE = "/api/management/v1"
ROOM = {"slug": "spring-drop", "name": "Spring drop", "redirectUrl": "https://shop.example/co"}


@pytest.fixture
def keys(services: Services) -> dict[str, Any]:
    prod, prod_secret = services.keystore.create("prod")
    _, staging_secret = services.keystore.create("staging")
    _, reader = services.keystore.create("prod", ["queues:read"])
    return {"prod": prod, "secret": prod_secret, "staging": staging_secret, "reader": reader}


@pytest.fixture
def op(client: FlaskClient, keys: dict[str, Any]) -> Operator:
    return Operator(client, keys["secret"], ROOM)


def test_without_a_valid_key_every_call_is_401(
    client: FlaskClient, services: Services, keys: dict[str, Any]
) -> None:
    for headers in ({}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer sk_nope"}):
        response = client.get(BASE + "/queues", headers=headers)
        assert response.status_code == 401
        assert response.json["error"] == "Unauthorized"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    # a right-shaped secret with a wrong random part, and a revoked key
    forged = keys["secret"][:-4] + ("AAAA" if not keys["secret"].endswith("AAAA") else "BBBB")
    assert (
        client.get(BASE + "/queues", headers={"Authorization": f"Bearer {forged}"}).status_code
        == 401
    )
    services.keystore.revoke(keys["prod"].id)
    response = client.get(BASE + "/queues", headers={"Authorization": f"Bearer {keys['secret']}"})
    assert response.status_code == 401


def test_scopes_and_environments_are_enforced(
    client: FlaskClient, op: Operator, keys: dict[str, Any]
) -> None:
    room = op.create()
    reader = Operator(client, keys["reader"], ROOM)
    assert reader.call("GET", f"/queues/{room['id']}").status_code == 200
    for method, path, body in (
        ("POST", "/queues", ROOM | {"slug": "other"}),
        ("PATCH", f"/queues/{room['id']}", {"action": "open"}),
        ("DELETE", f"/queues/{room['id']}", None),
    ):
        response = reader.call(method, path, body)
        assert response.status_code == 403 and response.json["error"] == "Forbidden"
        assert "queues:write" in response.json["message"]
    assert reader.call("GET", "/audit").status_code == 403
    staging = Operator(client, keys["staging"], ROOM)
    for method, body in (("GET", None), ("PATCH", {"action": "close"}), ("DELETE", None)):
        assert staging.call(method, f"/queues/{room['id']}", body).status_code == 403
    assert staging.call("GET", "/queues", environment="prod").status_code == 403
    assert op.get(room["id"])["status"] == "idle"  # nothing staging tried took effect


def test_the_same_slug_in_two_environments_is_two_rooms(
    client: FlaskClient, op: Operator, keys: dict[str, Any]
) -> None:
    prod_room = op.create()
    staging = Operator(client, keys["staging"], ROOM)
    response = staging.call("POST", "/queues", ROOM | {"name": "Staging drop"})
    assert response.status_code == 201
    assert response.json["id"] != prod_room["id"]
    assert response.json["environment"] == "staging"
    staging.patch(response.json["id"], {"action": "open"})
    assert op.get(prod_room["id"])["status"] == "idle"
    listing = op.call("GET", "/queues", environment="prod").json
    assert [q["name"] for q in listing["queues"]] == ["Spring drop"]


def test_create_fills_defaults_and_lists(op: Operator) -> None:
    room = op.create()
    assert room["ratePerMinute"] == 60 and room["capacity"] is None
    assert room["holdScore"] == 70 and room["failMode"] == "closed"
    assert room["status"] == "idle" and room["environment"] == "prod"
    assert op.call("GET", "/queues").json["queues"] == [room]


@pytest.mark.parametrize(
    ("body", "bad"),
    [
        ({"slug": "No Caps"}, {"slug"}),
        ({"slug": "ab"}, {"slug"}),
        ({"name": ""}, {"name"}),
        ({"name": "x" * 201}, {"name"}),
        ({"ratePerMinute": 0}, {"ratePerMinute"}),
        ({"ratePerMinute": 100_001}, {"ratePerMinute"}),
        ({"ratePerMinute": "60"}, {"ratePerMinute"}),
        ({"capacity": 0}, {"capacity"}),
        ({"capacity": 10_000_001}, {"capacity"}),
        ({"admissionTtlSec": 29}, {"admissionTtlSec"}),
        ({"admissionTtlSec": 3_601}, {"admissionTtlSec"}),
        ({"holdScore": 0}, {"holdScore"}),
        ({"holdScore": 101}, {"holdScore"}),
        ({"bindIp": "yes"}, {"bindIp"}),
        ({"redirectUrl": "http://shop.example/"}, {"redirectUrl"}),
        ({"redirectUrl": "javascript:alert(1)"}, {"redirectUrl"}),
        ({"redirectUrl": "/relative"}, {"redirectUrl"}),
        ({"maxWaiting": 0}, {"maxWaiting"}),
        ({"abandonAfterSec": 59}, {"abandonAfterSec"}),
        ({"abandonAfterSec": 86_401}, {"abandonAfterSec"}),
        ({"gracePeriodSec": -1}, {"gracePeriodSec"}),
        ({"gracePeriodSec": 86_401}, {"gracePeriodSec"}),
        ({"gracePeriodSec": "600"}, {"gracePeriodSec"}),
        ({"failMode": "sometimes"}, {"failMode"}),
        ({"colour": "red"}, {"colour"}),
        ({"slug": "!", "ratePerMinute": -1, "failMode": 1, "extra": 1},
         {"slug", "ratePerMinute", "failMode", "extra"}),
    ],
)  # fmt: skip
def test_create_names_every_bad_field(op: Operator, body: dict[str, Any], bad: set[str]) -> None:
    response = op.call("POST", "/queues", ROOM | body)
    assert response.status_code == 400
    assert response.json["error"] == "BadRequest"
    assert set(response.json["fields"]) == bad
    assert op.call("GET", "/queues").json["queues"] == []


def test_missing_fields_local_http_and_taken_slug(op: Operator) -> None:
    response = op.client.post(BASE + "/queues", headers=op.headers)
    assert response.status_code == 400
    assert set(response.json["fields"]) == {"body"}
    assert set(op.call("POST", "/queues", {}).json["fields"]) == {"slug", "name", "redirectUrl"}
    response = op.call("POST", "/queues", {"ratePerMinute": 5})
    assert set(response.json["fields"]) == {"slug", "name", "redirectUrl"}
    op.create(redirectUrl="http://localhost:8000/checkout")
    response = op.call("POST", "/queues", ROOM)
    assert response.status_code == 400 and "taken" in response.json["fields"]["slug"]
    for raw in (b"{nope", b"[1]", b'"x"'):
        response = op.client.post(
            BASE + "/queues", data=raw, headers=op.headers, content_type="application/json"
        )
        assert response.status_code == 400 and response.json["fields"] == {
            "body": response.json["fields"]["body"]
        }


def test_patch_validation(op: Operator) -> None:
    room = op.create()
    cases = [
        ({"slug": "new-slug"}, {"slug"}),
        ({"ratePerMinute": 0, "action": "explode"}, {"ratePerMinute", "action"}),
        ({"opensAt": 1_900_000_000_000}, {"opensAt"}),
        ({"action": "open", "opensAt": "soon"}, {"opensAt"}),
        ({"action": "open", "opensAt": -5}, {"opensAt"}),
        ({}, {"body"}),
        ({"action": "pause"}, {"action"}),  # idle rooms cannot pause
    ]
    for body, bad in cases:
        response = op.patch(room["id"], body)
        assert response.status_code == 400, body
        assert set(response.json["fields"]) == bad, body
    after = op.get(room["id"])
    assert after["ratePerMinute"] == 60 and after["status"] == "idle"
    assert op.call("GET", "/queues/qdeadbeefdeadbeef").status_code == 404
    assert op.call("GET", "/queues/not-an-id").status_code == 404


def test_open_pause_resume_close(
    client: FlaskClient, op: Operator, services: Services, keys: dict[str, Any]
) -> None:
    room = op.create(ratePerMinute=60)
    services.engine.set_clock(room["id"], 1_800_000_000_000)
    opens = 1_800_000_600_000
    assert op.patch(room["id"], {"action": "open", "opensAt": opens}).json["opensAt"] == opens
    got = op.get(room["id"])
    assert got["status"] == "open" and got["stats"]["opensAt"] == opens and got["line"] == []
    # resume keeps opensAt; opensAt is refused once the room is not idle
    assert op.patch(room["id"], {"action": "pause"}).json["status"] == "paused"
    response = op.patch(room["id"], {"action": "open", "opensAt": opens + 1})
    assert response.status_code == 400 and "opensAt" in response.json["fields"]
    resumed = op.patch(room["id"], {"action": "open"}).json
    assert resumed["status"] == "open" and resumed["opensAt"] == opens
    # a visitor in line; close expires the spot, its ticket answers 410, counters reset
    pk = keys["prod"].public_key
    visitor = Visitor(client, pk)
    visitor.identify()
    assert visitor.enter("spring-drop").json["status"] == "waiting"
    assert op.get(room["id"])["stats"]["waiting"] == 1
    closed = op.patch(room["id"], {"action": "close"}).json
    assert closed["status"] == "idle" and closed["opensAt"] is None
    assert visitor.poll().status_code == 410
    stats = op.get(room["id"])["stats"]
    assert stats == {
        "waiting": 0, "held": 0, "active": 0, "admittedLastMinute": 0, "dealtTotal": 0,
        "opensAt": None,
    }  # fmt: skip
    assert "line" not in op.get(room["id"])


def test_a_past_opens_at_is_taken_as_given(op: Operator, services: Services) -> None:
    room = op.create(ratePerMinute=600)
    now = 1_800_000_000_000
    services.engine.set_clock(room["id"], now)
    opened = op.patch(room["id"], {"action": "open", "opensAt": now - 3_600_000}).json
    assert opened["opensAt"] == now - 3_600_000
    for i in range(30):
        services.engine.enter(room["id"], f"v{i}", f"s{i}", 10)
    stats = op.get(room["id"])["stats"]
    # the hour owed is banked at most one second's worth (10 at 600/min): no burst
    assert stats["dealtTotal"] == 10


def test_line_shows_the_drain_order_and_a_raised_hold_score_releases_held_spots(
    op: Operator, services: Services
) -> None:
    room = op.create(holdScore=50)
    rid = services.engine.get_room(room["id"])["id"]
    services.engine.set_clock(rid, 1_800_000_000_000)
    op.patch(rid, {"action": "open", "opensAt": 1_800_000_000_000 + 3_600_000})
    scores = [10, 80, 20, 60, 10]
    for i, score in enumerate(scores):
        services.engine.enter(rid, f"v{i}", f"s{i}", score)
    got = op.get(rid)
    assert got["stats"]["waiting"] == 3 and got["stats"]["held"] == 2
    line = got["line"]
    assert [e["position"] for e in line] == [1, 2, 3]
    assert {e["visitor"] for e in line} == {"v0", "v2", "v4"}
    assert {(e["visitor"], e["score"]) for e in line} == {("v0", 10), ("v2", 20), ("v4", 10)}
    before = [e["visitor"] for e in line]
    op.patch(rid, {"holdScore": 90})
    after = op.get(rid)
    assert after["stats"]["held"] == 0 and after["stats"]["waiting"] == 5
    merged = [e["visitor"] for e in after["line"]]
    # the released spots take their original places: the old order is kept as a subsequence
    assert [v for v in merged if v in before] == before
    assert set(merged) == {f"v{i}" for i in range(5)}
    assert [e["position"] for e in after["line"]] == [1, 2, 3, 4, 5]


def test_delete_removes_every_key_and_frees_the_slug(
    client: FlaskClient, op: Operator, services: Services, keys: dict[str, Any],
    redis_client: redis.Redis,
) -> None:  # fmt: skip
    room = op.create()
    op.patch(room["id"], {"action": "open"})
    visitor = Visitor(client, keys["prod"].public_key)
    visitor.identify()
    assert visitor.enter("spring-drop").status_code == 200
    assert redis_client.keys(f"*{{{room['id']}}}*")
    assert op.call("DELETE", f"/queues/{room['id']}").status_code == 204
    assert redis_client.keys(f"*{{{room['id']}}}*") == []
    assert op.call("GET", f"/queues/{room['id']}").status_code == 404
    assert op.call("DELETE", f"/queues/{room['id']}").status_code == 404
    assert visitor.poll().status_code == 410
    again = op.create()
    assert again["id"] != room["id"]


def test_audit_records_every_mutation_newest_first(
    op: Operator, keys: dict[str, Any], client: FlaskClient
) -> None:
    room = op.create()
    op.patch(room["id"], {"ratePerMinute": 120, "name": "Spring drop!"})
    op.patch(room["id"], {"action": "open"})
    op.call("DELETE", f"/queues/{room['id']}")
    page = op.call("GET", "/audit", limit="2").json
    assert [e["type"] for e in page["events"]] == ["queue.deleted", "queue.updated"]
    assert all(e["keyId"] == keys["prod"].id for e in page["events"])
    opened = page["events"][1]
    assert opened["action"] == {"name": "open", "opensAt": None}
    assert opened["changes"]["status"] == {"before": "idle", "after": "open"}
    rest = op.call("GET", "/audit", limit="2", cursor=page["nextCursor"]).json
    assert [e["type"] for e in rest["events"]] == ["queue.updated", "queue.created"]
    assert rest["nextCursor"] is None
    updated = rest["events"][0]
    assert updated["changes"] == {
        "ratePerMinute": {"before": 60, "after": 120},
        "name": {"before": "Spring drop", "after": "Spring drop!"},
    }
    assert "action" not in updated
    created = rest["events"][1]
    assert created["queue"] == {"id": room["id"], "slug": "spring-drop"}
    assert created["changes"]["slug"] == {"before": None, "after": "spring-drop"}
    assert all(isinstance(e["at"], int) for e in page["events"] + rest["events"])
    # another environment's log is its own
    staging = Operator(client, keys["staging"], ROOM)
    assert staging.call("GET", "/audit").json["events"] == []
    assert staging.call("GET", "/audit", environment="prod").status_code == 403
    for bad in ({"cursor": "x"}, {"limit": "0"}, {"limit": "many"}):
        assert op.call("GET", "/audit", **bad).status_code == 400


def test_a_config_change_reaches_the_visitor_api_of_this_instance_at_once(
    client: FlaskClient, op: Operator, keys: dict[str, Any]
) -> None:
    room = op.create()
    op.patch(room["id"], {"action": "open"})
    visitor = Visitor(client, keys["prod"].public_key)
    visitor.identify()
    assert visitor.enter("spring-drop").json["roomName"] == "Spring drop"
    # The rooms directory's copy, current and answering requests, holds the old name.
    directory = client.application.extensions["anteroom"].directory
    directory.refresh_once()
    assert directory.current() is not None
    op.patch(room["id"], {"name": "Renamed"})
    assert visitor.poll().json["roomName"] == "Renamed"
    assert visitor.enter("spring-drop").json["roomName"] == "Renamed"
    directory.refresh_once()  # a round begun after the change: current again, renamed
    assert directory.current() is not None and visitor.poll().json["roomName"] == "Renamed"


def test_a_json_body_without_a_json_content_type_is_read(op: Operator) -> None:
    """``curl -d`` (the README's examples) sends a form content type; the body is still JSON."""
    response = op.client.post(
        BASE + "/queues",
        data='{"slug": "curl-room", "name": "Curl", "redirectUrl": "https://shop.example/"}',
        headers=op.headers,
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 201, response.json
    assert response.json["slug"] == "curl-room"


MONITOR = "monitor-secret-0123456789"
BYPASS = [
    {"kind": "path-prefix", "value": "/static/"},
    {"kind": "address-range", "value": "2001:DB8::/32"},
    {"kind": "header", "name": "X-Monitor", "secret": MONITOR},
]


@pytest.mark.parametrize(
    ("rules", "why"),
    [
        ([{"kind": "address-range", "value": "203.0.113.0/33"}], "bypass[0].value: not a CIDR"),
        ([BYPASS[0], {"kind": "path-prefix", "value": ""}], "bypass[1].value: must be a path"),
        ([{"kind": "cookie", "name": "m", "secret": "short"}], "bypass[0].secret: must be"),
        ("/static/", "bypass: must be a list of rules"),
        ([{"kind": "path-prefix", "value": f"/p{i}"} for i in range(51)], "bypass: at most 50"),
    ],
)
def test_a_bad_bypass_rule_is_a_400_naming_the_field(op: Operator, rules: Any, why: str) -> None:
    room = op.create()
    response = op.patch(room["id"], {"bypass": rules})
    assert response.status_code == 400
    assert response.json["fields"]["bypass"].startswith(why)
    created = op.call("POST", "/queues", ROOM | {"slug": "other-room", "bypass": rules})
    assert created.status_code == 400 and created.json["fields"]["bypass"].startswith(why)
    assert op.get(room["id"])["bypass"] == []


def test_bypass_secrets_are_stored_hashed_and_never_shown(op: Operator, services: Services) -> None:
    room = op.create()
    answer = op.patch(room["id"], {"bypass": BYPASS})
    assert answer.status_code == 200, answer.json
    for shown in (answer.json, op.get(room["id"]), op.call("GET", "/queues").json["queues"][0]):
        assert shown["bypass"][:2] == [
            BYPASS[0],
            {"kind": "address-range", "value": "2001:db8::/32"},
        ]
        header = shown["bypass"][2]
        assert header["secret"] is None and header["name"] == "x-monitor" and header["secretId"]
        assert MONITOR not in str(shown)
    stored = services.redis.hget(services.keys.room(room["id"]), stored_name("bypass"))
    assert MONITOR not in stored
    rules = rooms.stored_bypass(stored)
    assert bypass_rules.match(rules, None, None, {"x-monitor": MONITOR}, {}) == (2, rules[2])
    assert bypass_rules.match(rules, None, None, {"x-monitor": MONITOR + "!"}, {}) is None


def test_the_audit_log_records_a_bypass_change_without_its_secret(op: Operator) -> None:
    room = op.create()
    op.patch(room["id"], {"bypass": BYPASS})
    op.patch(room["id"], {"bypass": BYPASS})  # the same rules, the secret set again
    first, second = op.call("GET", "/audit", limit="2").json["events"][::-1]
    assert first["changes"]["bypass"]["before"] == []
    assert first["changes"]["bypass"]["after"][0] == BYPASS[0]
    change = second["changes"]["bypass"]
    assert change["before"][2]["secretId"] != change["after"][2]["secretId"]
    assert MONITOR not in str(first) + str(second)


def test_a_rule_given_back_by_its_secret_id_keeps_its_secret(
    op: Operator, services: Services
) -> None:
    # Adding one rule must not mean typing every other rule's secret again: the answer's
    # secretId, sent back in place of the secret, keeps the secret the room stores.
    room = op.create()
    shown = op.patch(room["id"], {"bypass": BYPASS}).json["bypass"]
    kept = {k: shown[2][k] for k in ("kind", "name", "secretId")}
    more = [*shown[:2], kept, {"kind": "path-prefix", "value": "/health"}]
    answer = op.patch(room["id"], {"bypass": more})
    assert answer.status_code == 200, answer.json
    assert answer.json["bypass"][2]["secretId"] == kept["secretId"]  # the same secret
    stored = services.redis.hget(services.keys.room(room["id"]), stored_name("bypass"))
    rules = rooms.stored_bypass(stored)
    assert bypass_rules.match(rules, None, None, {"x-monitor": MONITOR}, {}) == (2, rules[2])
    # The audit shows the rule unchanged, and only the one added.
    change = op.call("GET", "/audit", limit="1").json["events"][0]["changes"]["bypass"]
    assert change["before"][2] == change["after"][2] and len(change["after"]) == 4
    # A secretId the room does not keep (or for another name, or on a new room): a 400 naming it.
    for wrong in ({**kept, "secretId": "nothere1"}, {**kept, "name": "X-Other"}):
        refused = op.patch(room["id"], {"bypass": [wrong]})
        assert refused.status_code == 400, refused.json
        assert "bypass[0].secretId" in refused.json["fields"]
    created = op.call("POST", "/queues", ROOM | {"slug": "new-room", "bypass": [kept]})
    assert created.status_code == 400 and "bypass" in created.json["fields"]
    assert op.get(room["id"])["bypass"][2]["secretId"] == kept["secretId"]  # nothing changed
    # Anywhere in the list, and kept again and again.
    first = op.patch(room["id"], {"bypass": [kept, {"kind": "path-prefix", "value": "/x"}]})
    assert first.status_code == 200 and first.json["bypass"][0]["secretId"] == kept["secretId"]


def test_a_mode_switch_is_audited_with_the_key_that_made_it(
    op: Operator, keys: dict[str, Any]
) -> None:
    room = op.create()
    assert room["mode"] == "fifo"
    response = op.patch(room["id"], {"mode": "reject"})
    assert response.status_code == 200 and response.json["mode"] == "reject"
    event = op.call("GET", "/audit", limit="1").json["events"][0]
    assert event["type"] == "queue.updated" and event["keyId"] == keys["prod"].id
    assert event["changes"] == {"mode": {"before": "fifo", "after": "reject"}}
    assert op.get(room["id"])["mode"] == "reject"


def test_a_switch_to_random_and_back_is_audited(op: Operator, keys: dict[str, Any]) -> None:
    room = op.create()
    for mode in ("random", "fifo"):
        assert op.patch(room["id"], {"mode": mode}).json["mode"] == mode
    back, to_random = op.call("GET", "/audit", limit="2").json["events"]
    assert to_random["changes"] == {"mode": {"before": "fifo", "after": "random"}}
    assert back["changes"] == {"mode": {"before": "random", "after": "fifo"}}
    assert to_random["keyId"] == keys["prod"].id


@pytest.mark.parametrize("mode", ["RANDOM", "lifo", "", None, 3])
def test_an_unknown_mode_is_a_400_naming_the_field(op: Operator, mode: Any) -> None:
    room = op.create()
    response = op.patch(room["id"], {"mode": mode})
    assert response.status_code == 400 and set(response.json["fields"]) == {"mode"}
    assert op.get(room["id"])["mode"] == "fifo"


NET = {"activeSessions": 2, "arrivalsPerMinute": 1000, "coolDownSec": 60}


def test_a_bad_safety_net_is_a_400_naming_each_part(op: Operator) -> None:
    room = op.create()
    bad = {"activeSessions": 0, "arrivalsPerMinute": 1.5, "coolDownSec": -1}
    response = op.patch(room["id"], {"safetyNet": bad})
    assert response.status_code == 400
    assert set(response.json["fields"]) == {
        "safetyNet.activeSessions",
        "safetyNet.arrivalsPerMinute",
        "safetyNet.coolDownSec",
    }
    response = op.patch(room["id"], {"safetyNet": {"activeSessions": 1, "limit": 3}})
    assert response.status_code == 400 and set(response.json["fields"]) == {
        "safetyNet.limit",
        "safetyNet.arrivalsPerMinute",
        "safetyNet.coolDownSec",
    }
    response = op.patch(room["id"], {"safetyNet": "on"})
    assert response.status_code == 400 and set(response.json["fields"]) == {"safetyNet"}
    assert op.get(room["id"])["safetyNet"] is None


def test_the_safety_net_switches_itself_and_the_audit_and_get_show_it(
    op: Operator, keys: dict[str, Any], services: Services
) -> None:
    room = op.create()
    response = op.patch(room["id"], {"safetyNet": NET, "action": "open"})
    assert response.status_code == 200
    assert response.json["safetyNet"] == NET | {"state": "calm", "since": None}
    event = op.call("GET", "/audit", limit="1").json["events"][0]
    assert event["keyId"] == keys["prod"].id
    assert event["changes"]["safetyNet"] == {"before": None, "after": response.json["safetyNet"]}
    engine = services.engine
    answers = [engine.enter(room["id"], f"v{i}", f"s{i}", 10).status for i in range(3)]
    assert answers == ["admitted", "admitted", "waiting"]
    services.directory.refresh_once()
    services.ticker.step()
    shown = op.get(room["id"])["safetyNet"]
    assert shown["state"] == "queueing" and shown["since"] is not None
    event = op.call("GET", "/audit", limit="1").json["events"][0]
    assert event["type"] == "queue.updated" and event["keyId"] == "safety-net"
    assert event["changes"]["safetyNet.state"] == {"before": "calm", "after": "queueing"}
    assert event["changes"]["safetyNet.since"]["after"] == shown["since"]
    # the GET's value goes back in a PATCH as it is (state and since are ignored)
    assert op.patch(room["id"], {"safetyNet": shown}).status_code == 200
