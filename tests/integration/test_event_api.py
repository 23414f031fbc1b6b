"""Scheduled events through the management API (docs/operators.md, "Scheduled events"): create,
list, change, cancel; bad input named, overlaps refused, every write audited, and the overrides met
by visitors (texts, theme, mode) on the room's clock."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.service_container import Services
from helpers import Operator
from visitor_client import Visitor

pytestmark = pytest.mark.redis

ROOM = {"slug": "spring-drop", "name": "Spring drop", "redirectUrl": "https://shop.example/co"}
MINUTE = 60_000


@pytest.fixture
def keys(services: Services) -> dict[str, Any]:
    prod, secret = services.keystore.create("prod")
    _, reader = services.keystore.create("prod", ["queues:read"])
    return {"prod": prod, "secret": secret, "reader": reader}


@pytest.fixture
def op(client: FlaskClient, keys: dict[str, Any]) -> Operator:
    return Operator(client, keys["secret"], ROOM)


def pinned(op: Operator, services: Services, **config: Any) -> tuple[str, int]:
    """A room whose clock stands still unless the test moves it, and its now."""
    room = op.create(**config)["id"]
    now = services.engine.stats(room).now_ms
    services.engine.set_clock(room, now)
    return room, now


def events_path(room: str, event: str = "") -> str:
    return f"/queues/{room}/events" + (f"/{event}" if event else "")


def test_create_list_change_cancel(op: Operator, services: Services) -> None:
    room, now = pinned(op, services)
    body = {
        "startsAt": now + MINUTE,
        "endsAt": now + 2 * MINUTE,
        "overrides": {"ratePerMinute": 600},
    }
    created = op.call("POST", events_path(room), body)
    assert created.status_code == 201, created.json
    event = created.json
    assert event["state"] == "scheduled" and event["overrides"] == {"ratePerMinute": 600}
    assert created.headers["Location"].endswith(events_path(room, event["id"]))
    listed = op.call("GET", events_path(room)).json
    assert listed["activeEvent"] is None and [e["id"] for e in listed["events"]] == [event["id"]]

    changed = op.call("PATCH", events_path(room, event["id"]), {"overrides": {"mode": "reject"}})
    assert changed.status_code == 200 and changed.json["overrides"] == {"mode": "reject"}

    services.engine.shift_clock(room, MINUTE)  # the event runs
    listed = op.call("GET", events_path(room)).json
    assert listed["activeEvent"] == event["id"] and listed["events"][0]["state"] == "running"
    refused = op.call("PATCH", events_path(room, event["id"]), {"startsAt": now + 90_000})
    assert refused.status_code == 400 and "startsAt" in refused.json["fields"]

    # cancelling a running event ends it now, on record
    assert op.call("DELETE", events_path(room, event["id"])).status_code == 204
    listed = op.call("GET", events_path(room)).json
    assert listed["activeEvent"] is None and listed["events"][0]["state"] == "ended"
    ended = op.call("PATCH", events_path(room, event["id"]), {"endsAt": now + 5 * MINUTE})
    assert ended.status_code == 409 and ended.json["error"] == "EventEnded"
    assert op.call("DELETE", events_path(room, event["id"])).json["error"] == "EventEnded"


def test_a_scheduled_event_cancelled_is_gone(op: Operator, services: Services) -> None:
    room, now = pinned(op, services)
    body = {"startsAt": now + MINUTE, "endsAt": now + 2 * MINUTE, "overrides": {"capacity": 5}}
    event = op.call("POST", events_path(room), body).json
    assert op.call("DELETE", events_path(room, event["id"])).status_code == 204
    assert op.call("GET", events_path(room)).json["events"] == []
    gone = op.call("DELETE", events_path(room, event["id"]))
    assert gone.status_code == 404 and gone.json["error"] == "EventNotFound"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"endsAt": 2, "overrides": {"capacity": 5}}, "startsAt"),
        ({"startsAt": "soon", "endsAt": 2, "overrides": {"capacity": 5}}, "startsAt"),
        ({"startsAt": "+1", "endsAt": "+0", "overrides": {"capacity": 5}}, "endsAt"),
        ({"startsAt": "-2", "endsAt": "-1", "overrides": {"capacity": 5}}, "endsAt"),
        ({"startsAt": "+1", "endsAt": "+2", "overrides": {}}, "overrides"),
        ({"startsAt": "+1", "endsAt": "+2", "overrides": {"slug": "x"}}, "overrides.slug"),
        ({"startsAt": "+1", "endsAt": "+2", "overrides": {"mode": "lifo"}}, "overrides.mode"),
        (
            {"startsAt": "+1", "endsAt": "+2", "overrides": {"ratePerMinute": 0}},
            "overrides.ratePerMinute",
        ),
        (
            {"startsAt": "+1", "endsAt": "+2", "overrides": {"theme": {"accentColor": "red"}}},
            "overrides.theme",
        ),
        (
            {
                "startsAt": "+1",
                "endsAt": "+2",
                "preQueueOpensAt": "+2",
                "overrides": {"capacity": 5},
            },
            "preQueueOpensAt",
        ),
        ({"startsAt": "+1", "endsAt": "+2", "overrides": {"capacity": 5}, "why": 1}, "why"),
    ],
)
def test_bad_events_are_a_400_naming_the_field(
    op: Operator, services: Services, body: dict[str, Any], field: str
) -> None:
    room, now = pinned(op, services)
    # "+n"/"-n": n minutes from the room's now
    sent = {
        k: now + int(v) * MINUTE if isinstance(v, str) and v[:1] in "+-" else v
        for k, v in body.items()
    }
    answer = op.call("POST", events_path(room), sent)
    assert answer.status_code == 400, answer.json
    assert answer.json["error"] == "BadRequest" and field in answer.json["fields"], answer.json
    assert op.call("GET", events_path(room)).json["events"] == []


def test_events_never_overlap_even_written_at_once(op: Operator, services: Services) -> None:
    room, now = pinned(op, services)
    first = {"startsAt": now + MINUTE, "endsAt": now + 3 * MINUTE, "overrides": {"capacity": 5}}
    taken = op.call("POST", events_path(room), first).json
    overlap = first | {"startsAt": now + 2 * MINUTE, "endsAt": now + 4 * MINUTE}
    refused = op.call("POST", events_path(room), overlap)
    assert refused.status_code == 409 and refused.json["error"] == "EventOverlap"
    assert taken["id"] in refused.json["message"]
    # back to back is fine: windows are half-open
    after = first | {"startsAt": now + 3 * MINUTE, "endsAt": now + 4 * MINUTE}
    assert op.call("POST", events_path(room), after).status_code == 201

    # eight writers race for one window: exactly one gets it
    race = {
        "startsAt": now + 10 * MINUTE,
        "endsAt": now + 11 * MINUTE,
        "overrides": {"capacity": 9},
    }
    app = op.client.application

    def write(_: int) -> int:
        with app.test_client() as client:
            writer = Operator(client, op.headers["Authorization"].split()[1])
            return int(writer.call("POST", events_path(room), race).status_code)

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(write, range(8)))
    assert codes == [201] + [409] * 7
    assert len(op.call("GET", events_path(room)).json["events"]) == 3


def test_scopes_rooms_and_audit(
    op: Operator, services: Services, client: FlaskClient, keys: dict[str, Any]
) -> None:
    room, now = pinned(op, services)
    body = {"startsAt": now + MINUTE, "endsAt": now + 2 * MINUTE, "overrides": {"capacity": 5}}
    reader = Operator(client, keys["reader"])
    assert reader.call("POST", events_path(room), body).status_code == 403
    assert reader.call("GET", events_path(room)).status_code == 200
    assert op.call("GET", events_path("q0000000000000000")).status_code == 404
    assert op.call("PATCH", events_path(room, "ev000000000000"), {"endsAt": 5}).status_code == 404
    event = op.call("POST", events_path(room), body).json
    audit = op.call("GET", "/audit").json["events"][0]
    assert audit["type"] == "queue.updated" and audit["queue"]["id"] == room
    assert audit["changes"] == {
        f"events.{event['id']}": {
            "before": None,
            "after": {k: event[k] for k in ("id", "startsAt", "endsAt", "overrides")},
        }
    }


def test_visitors_meet_the_event_s_texts_and_mode_on_the_room_s_clock(
    op: Operator, services: Services, client: FlaskClient, keys: dict[str, Any]
) -> None:
    room, now = pinned(op, services, notice="Welcome")
    op.patch(room, {"action": "open"})
    overrides = {"notice": "The spring drop is on", "mode": "reject", "closedMessage": "Sold out"}
    body = {"startsAt": now + MINUTE, "endsAt": now + 2 * MINUTE, "overrides": overrides}
    assert op.call("POST", events_path(room), body).status_code == 201
    early = Visitor(client, keys["prod"].public_key)
    early.identify()
    assert early.enter("spring-drop").json["notice"] == "Welcome"
    services.engine.shift_clock(room, MINUTE)
    services.directory.refresh_once()  # the copy requests read carries the moved clock
    assert early.poll().json["notice"] == "The spring drop is on"
    late = Visitor(client, keys["prod"].public_key)
    late.identify()
    refused = late.enter("spring-drop")
    assert refused.status_code == 403 and refused.json["error"] == "RoomClosed"
    assert refused.json["closedMessage"] == "Sold out"
    services.engine.shift_clock(room, MINUTE)  # the event is over: the room's own settings
    services.directory.refresh_once()
    assert late.enter("spring-drop").json["notice"] == "Welcome"


def test_the_series_marks_the_events_boundaries(op: Operator, services: Services) -> None:
    room, now = pinned(op, services)
    first = {"startsAt": now + MINUTE, "endsAt": now + 2 * MINUTE, "overrides": {"capacity": 5}}
    second = {
        "startsAt": now + 2 * MINUTE,
        "endsAt": now + 60 * MINUTE,
        "overrides": {"capacity": 9},
    }
    one = op.call("POST", events_path(room), first).json["id"]
    two = op.call("POST", events_path(room), second).json["id"]
    services.engine.shift_clock(room, 10 * MINUTE)
    series = op.call("GET", f"/queues/{room}/series", **{"from": str(now), "step": "60000"}).json
    assert series["marks"] == [
        {"at": now + MINUTE, "kind": "eventStarts", "event": one},
        {"at": now + 2 * MINUTE, "kind": "eventEnds", "event": one},
        {"at": now + 2 * MINUTE, "kind": "eventStarts", "event": two},
    ]  # the second's end is after the window's `to` (the room's now)


def test_an_event_s_pre_queue_holds_its_window_and_its_times(
    op: Operator, services: Services
) -> None:
    room, now = pinned(op, services)
    body = {
        "startsAt": now + 10 * MINUTE,
        "endsAt": now + 20 * MINUTE,
        "preQueueOpensAt": now + 5 * MINUTE,
        "overrides": {"ratePerMinute": 600},
    }
    event = op.call("POST", events_path(room), body).json
    assert event["preQueueOpensAt"] == now + 5 * MINUTE and event["state"] == "scheduled"
    # the pre-queue's minutes are the event's too: nothing else may run in them
    before = {
        "startsAt": now + 4 * MINUTE,
        "endsAt": now + 6 * MINUTE,
        "overrides": {"capacity": 5},
    }
    refused = op.call("POST", events_path(room), before)
    assert refused.status_code == 409 and event["id"] in refused.json["message"]
    services.engine.shift_clock(room, 6 * MINUTE)
    listed = op.call("GET", events_path(room)).json
    assert listed["events"][0]["state"] == "prequeue" and listed["activeEvent"] is None
    moved = op.call("PATCH", events_path(room, event["id"]), {"startsAt": now + 15 * MINUTE})
    assert moved.status_code == 400 and "startsAt" in moved.json["fields"]
    longer = op.call("PATCH", events_path(room, event["id"]), {"endsAt": now + 30 * MINUTE})
    assert longer.status_code == 200 and longer.json["endsAt"] == now + 30 * MINUTE
