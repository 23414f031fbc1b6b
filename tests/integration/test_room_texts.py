"""A room's texts for its line (``notice``, ``closedMessage``): set through the management API,
checked, audited, and carried to waiting visitors at their next poll. Real app, real Redis."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.service_container import Services
from visitor_client import Visitor

pytestmark = pytest.mark.redis

BASE = "/api/management/v1"
ROOM = {"slug": "spring-drop", "name": "Spring drop", "redirectUrl": "https://shop.example/co"}


@pytest.fixture
def keys(services: Services) -> tuple[str, dict[str, str]]:
    record, secret = services.keystore.create("prod")
    return record.public_key, {"Authorization": f"Bearer {secret}"}


def make(client: FlaskClient, auth: dict[str, str], **config: Any) -> Any:
    return client.post(f"{BASE}/queues", json=ROOM | config, headers=auth)


def patch(client: FlaskClient, auth: dict[str, str], room_id: str, body: dict[str, Any]) -> Any:
    return client.patch(f"{BASE}/queues/{room_id}", json=body, headers=auth)


def test_a_notice_reaches_a_waiting_visitor_at_the_next_poll_and_is_audited(
    client: FlaskClient, keys: tuple[str, dict[str, str]]
) -> None:
    pk, auth = keys
    room = make(client, auth, ratePerMinute=1).json
    assert room["notice"] is None and room["closedMessage"] is None
    patch(client, auth, room["id"], {"action": "open"})
    first, me = Visitor(client, pk), Visitor(client, pk)
    first.enter("spring-drop")
    assert me.enter("spring-drop").json["notice"] is None
    news = {"en": "Sizes S and M are sold out.", "de": "Größen S und M sind ausverkauft."}
    changed = patch(client, auth, room["id"], {"notice": news})
    assert changed.status_code == 200 and changed.json["notice"] == news
    answer = me.poll().json
    assert answer["status"] == "waiting" and answer["notice"] == news
    # Plain text replaces it, null withdraws it; each change is in the audit log.
    assert patch(client, auth, room["id"], {"notice": "Back at 6 pm"}).status_code == 200
    assert me.poll().json["notice"] == "Back at 6 pm"
    assert patch(client, auth, room["id"], {"notice": None}).json["notice"] is None
    assert me.poll().json["notice"] is None
    events = client.get(f"{BASE}/audit", headers=auth).json["events"]
    changes = [e["changes"]["notice"] for e in events if "notice" in e.get("changes", {})]
    assert changes[:3] == [
        {"before": "Back at 6 pm", "after": None},
        {"before": news, "after": "Back at 6 pm"},
        {"before": None, "after": news},
    ]


def test_a_closed_room_answers_with_its_closing_message(
    client: FlaskClient, keys: tuple[str, dict[str, str]]
) -> None:
    pk, auth = keys
    message = {"en": "Sold out — thank you for waiting", "ar": "نفدت الكمية — شكرًا لانتظارك"}
    room = make(client, auth, ratePerMinute=1, closedMessage=message).json
    patch(client, auth, room["id"], {"action": "open"})
    first, me = Visitor(client, pk), Visitor(client, pk)
    first.enter("spring-drop")
    assert me.enter("spring-drop").json["status"] == "waiting"
    patch(client, auth, room["id"], {"action": "close"})
    assert me.poll().status_code == 410  # the spot went with the room's generation
    again = me.enter("spring-drop").json
    assert again["status"] == "idle" and again["closedMessage"] == message


def test_a_room_never_opened_is_not_said_to_be_closed(
    client: FlaskClient, keys: tuple[str, dict[str, str]]
) -> None:
    pk, auth = keys
    make(client, auth, closedMessage="Sold out — thank you for waiting")
    answer = Visitor(client, pk).enter("spring-drop").json
    # Idle, as a closed room is, but it has not sold out: the closing message waits for a close.
    assert answer["status"] == "idle" and answer["closedMessage"] is None


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("x" * 501, "plain text of 1 to 500 characters"),
        ("", "plain text of 1 to 500 characters"),
        ("   ", "plain text of 1 to 500 characters"),
        ("bell\x07", "no control characters"),
        ({}, "at least one language"),
        ({"sv": "Slutsålt"}, "'sv' is not a language of the page"),
        ({"de": "x" * 501}, "de: must be plain text of 1 to 500 characters"),
        (42, "plain text"),
        (["a"], "plain text"),
    ],
)
def test_bad_texts_are_refused_naming_the_field(
    client: FlaskClient, keys: tuple[str, dict[str, str]], value: Any, why: str
) -> None:
    _, auth = keys
    room = make(client, auth).json
    for field in ("notice", "closedMessage"):
        response = patch(client, auth, room["id"], {field: value})
        assert response.status_code == 400, response.json
        assert why in response.json["fields"][field]
    created = make(client, auth, slug="other-drop", notice=value)
    assert created.status_code == 400 and "notice" in created.json["fields"]


def test_a_notice_of_500_characters_with_line_breaks_is_kept_as_given(
    client: FlaskClient, keys: tuple[str, dict[str, str]]
) -> None:
    _, auth = keys
    text = ("Line one <b>not bold</b>\n" + "y" * 500)[:500]
    room = make(client, auth, notice=text).json
    assert room["notice"] == text
    assert client.get(f"{BASE}/queues/{room['id']}", headers=auth).json["notice"] == text
