"""The console's sign-in, session cookie and CSRF rules, through the real app and Redis."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.service_container import Services
from anteroom.web.manage import console_session
from helpers import open_room

pytestmark = pytest.mark.redis

SAME = {"Sec-Fetch-Site": "same-origin"}


def sign_in(client: FlaskClient, secret: str, **headers: str) -> Any:
    return client.post("/console/sign-in", data={"secret": secret}, headers=headers or SAME)


def csrf_of(client: FlaskClient) -> str:
    page = client.get("/console").get_data(as_text=True)
    marker = 'name="anteroom-csrf" content="'
    return page.split(marker, 1)[1].split('"', 1)[0]


@pytest.fixture
def operator(services: Services) -> dict[str, Any]:
    record, secret = services.keystore.create("shop")
    room = open_room(services.engine, env="shop", slug="drop")
    return {"record": record, "secret": secret, "room": room}


def test_sign_in_sets_a_strict_httponly_cookie_without_the_key(
    client: FlaskClient, operator: dict[str, Any]
) -> None:
    page = client.get("/console")
    assert page.status_code == 200 and 'name="secret"' in page.get_data(as_text=True)
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    answer = sign_in(client, operator["secret"])
    assert answer.status_code == 303 and answer.headers["Location"] == "/console"
    cookie = answer.headers["Set-Cookie"]
    assert cookie.startswith(console_session.COOKIE + "=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
    assert "Expires" not in cookie and "Max-Age" not in cookie  # for the browser session only
    assert operator["secret"] not in cookie and operator["record"].id not in cookie
    rooms = client.get("/console")
    assert rooms.status_code == 200 and 'data-page="rooms"' in rooms.get_data(as_text=True)
    listed = client.get("/console/api/queues")
    assert listed.status_code == 200 and listed.json["queues"][0]["id"] == operator["room"]


def test_a_wrong_key_is_refused(client: FlaskClient, operator: dict[str, Any]) -> None:
    answer = sign_in(client, operator["secret"][:-2] + "xx")
    assert answer.status_code == 401 and "Set-Cookie" not in answer.headers
    assert "not valid" in answer.get_data(as_text=True)
    assert client.get("/console/api/queues").status_code == 401


def test_sign_in_from_another_site_is_refused(
    client: FlaskClient, operator: dict[str, Any]
) -> None:
    answer = sign_in(client, operator["secret"], **{"Sec-Fetch-Site": "cross-site"})
    assert answer.status_code == 403 and "Set-Cookie" not in answer.headers
    no_origin = client.post("/console/sign-in", data={"secret": operator["secret"]})
    assert no_origin.status_code == 403


def test_changes_need_the_csrf_token(
    client: FlaskClient, operator: dict[str, Any], services: Services
) -> None:
    sign_in(client, operator["secret"])
    url = f"/console/api/queues/{operator['room']}"
    body = {"action": "pause"}
    assert client.patch(url, json=body, headers=SAME).status_code == 403
    wrong = SAME | {"X-Anteroom-CSRF": "nope"}
    assert client.patch(url, json=body, headers=wrong).status_code == 403
    token = csrf_of(client)
    cross = {"Sec-Fetch-Site": "cross-site", "X-Anteroom-CSRF": token}
    assert client.patch(url, json=body, headers=cross).status_code == 403
    assert services.engine.get_room(operator["room"])["status"] == "open"
    done = client.patch(url, json=body, headers=SAME | {"X-Anteroom-CSRF": token})
    assert done.status_code == 200 and done.json["status"] == "paused"
    audit = client.get("/console/api/audit").json["events"][0]
    assert audit["keyId"] == operator["record"].id and audit["action"]["name"] == "pause"


def test_the_console_keeps_to_the_keys_environment_and_scopes(
    client: FlaskClient, operator: dict[str, Any], services: Services
) -> None:
    other = open_room(services.engine, env="elsewhere", slug="drop")
    _, reader = services.keystore.create("shop", ["queues:read"])
    sign_in(client, reader)
    assert client.get(f"/console/api/queues/{other}").status_code == 403
    assert client.get(f"/console/rooms/{other}").status_code == 404
    token = csrf_of(client)
    url = f"/console/api/queues/{operator['room']}"
    denied = client.patch(url, json={"action": "pause"}, headers=SAME | {"X-Anteroom-CSRF": token})
    assert denied.status_code == 403 and "queues:write" in denied.json["message"]


def test_sign_out_and_revocation_end_the_session(
    client: FlaskClient, operator: dict[str, Any], services: Services
) -> None:
    sign_in(client, operator["secret"])
    token = csrf_of(client)
    assert client.post("/console/sign-out", data={"csrf": token}, headers=SAME).status_code == 303
    assert client.get("/console/api/queues").status_code == 401
    sign_in(client, operator["secret"])
    assert client.get("/console/api/queues").status_code == 200
    services.keystore.revoke(operator["record"].id)
    assert client.get("/console/api/queues").status_code == 401


def test_a_forged_cookie_is_no_session(client: FlaskClient, operator: dict[str, Any]) -> None:
    answer = sign_in(client, operator["secret"])
    value = answer.headers["Set-Cookie"].split(";", 1)[0].split("=", 1)[1]
    sid, signature = value.split(".")
    client.set_cookie(console_session.COOKIE, f"{sid}.{signature[:-2]}AA", path="/console")
    assert client.get("/console/api/queues").status_code == 401


def test_held_preview_counts_held_spots_by_score(
    client: FlaskClient, operator: dict[str, Any], services: Services
) -> None:
    room = operator["room"]
    for i, score in enumerate((75, 75, 90)):
        services.engine.enter(room, f"h{i}", f"s{i}", score)
    sign_in(client, operator["secret"])
    held = client.get(f"/console/api/queues/{room}/held")
    assert held.status_code == 200 and held.json == {"byScore": {"75": 2, "90": 1}}


def test_without_fetch_metadata_the_origin_decides(
    client: FlaskClient, operator: dict[str, Any]
) -> None:
    assert sign_in(client, operator["secret"], Origin="http://evil.example").status_code == 403
    assert sign_in(client, operator["secret"], Origin="http://localhost").status_code == 303


def test_create_delete_and_revoke_run_as_the_key_with_the_csrf_token(
    client: FlaskClient, operator: dict[str, Any], services: Services
) -> None:
    """The console's calls that create or delete a room and revoke a visitor: refused without
    the page's token, run as the signed-in key with it, and audited as that key."""
    sign_in(client, operator["secret"])
    token = SAME | {"X-Anteroom-CSRF": csrf_of(client)}
    room = {"slug": "autumn", "name": "Autumn drop", "redirectUrl": "https://shop.example/a"}
    assert client.post("/console/api/queues", json=room, headers=SAME).status_code == 403
    bad = client.post("/console/api/queues", json=room | {"ratePerMinute": 0}, headers=token)
    assert bad.status_code == 400 and set(bad.json["fields"]) == {"ratePerMinute"}
    made = client.post("/console/api/queues", json=room, headers=token)
    assert made.status_code == 201 and made.json["environment"] == "shop"
    url = f"/console/api/queues/{made.json['id']}"
    assert client.delete(url, headers=SAME).status_code == 403
    assert client.delete(url, headers=token).status_code == 204
    assert client.get(url).status_code == 404
    revoke = {"vid": "v0123456789abcdef", "reason": "scripted"}
    assert client.post("/console/api/sessions/revoke", json=revoke, headers=SAME).status_code == 403
    done = client.post("/console/api/sessions/revoke", json=revoke, headers=token)
    assert done.status_code == 200 and done.json["rooms"] == 1  # the operator's open room
    events = client.get("/console/api/audit").json["events"]
    assert [e["type"] for e in events[:3]] == ["session.revoked", "queue.deleted", "queue.created"]
    assert {e["keyId"] for e in events[:3]} == {operator["record"].id}
