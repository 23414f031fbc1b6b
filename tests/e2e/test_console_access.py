"""The console's keys and invites as an operator works them: real Chromium, real gunicorn and
Redis. Each action is checked where it lands: what the management API then says, and what a
visitor with the invite (or a script with the key) then meets."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from console_pages import open_room_page, sign_in
from playwright.sync_api import Page, expect

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import MANAGEMENT_API, waiting_room
from live_server import LiveServer
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]


def api(live: LiveServer, secret: str, method: str, path: str, body: Any = None) -> Any:
    """The management API over HTTP, as a script holding ``secret`` calls it."""
    with requests.Session() as http:
        http.trust_env = False  # no proxy between the test and its own server
        return http.request(
            method, live.url + MANAGEMENT_API + path, json=body, timeout=10,
            headers={"Authorization": f"Bearer {secret}"},
        )  # fmt: skip


def confirm(page: Page, says: str, method: str) -> None:
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(says)
    with page.expect_response(lambda reply: reply.request.method == method, timeout=10_000):
        dialog.get_by_role("button", name="Confirm").click()


@pytest.fixture
def admin(stack: Stack) -> tuple[str, str]:
    """A key of every scope in the stack's environment: (its id, its secret)."""
    _, engine, _ = stack
    record, secret = KeyStore(engine.redis, engine.keys).create("web")
    return record.id, secret


def test_a_key_is_created_and_its_secret_shown_once(
    stack: Stack, new_context: Any, admin: tuple[str, str]
) -> None:
    live, _, _ = stack
    page = new_context().new_page()
    sign_in(page, live, admin[1])
    keys = page.locator("#keys-section")
    keys.get_by_label("read rooms (queues:read)").check()
    keys.get_by_label("read the audit log (audit:read)").check()
    keys.get_by_role("button", name="Create key").click()
    secret_field = page.locator("#new-key-secret-value")
    expect(secret_field).to_have_value(re.compile(r"^sk_[a-z0-9]{12}_"), timeout=10_000)
    expect(keys).to_contain_text("shown only this once and cannot be shown again")
    secret = secret_field.input_value()
    key_id = secret.split("_")[1]
    row = page.locator(f'#keys tr[data-key="{key_id}"]')
    expect(row).to_contain_text("read rooms, read the audit log")
    # what the API says: listed with its scopes, and the secret works for what it may do
    listed = {k["id"]: k for k in api(live, admin[1], "GET", "/keys").json()["keys"]}
    assert listed[key_id]["scopes"] == ["queues:read", "audit:read"]
    assert api(live, secret, "GET", "/queues").status_code == 200
    assert api(live, secret, "POST", "/queues", {}).status_code == 403
    # shown once: a reload has the key listed, never its secret
    page.reload()
    expect(page.locator(f'#keys tr[data-key="{key_id}"]')).to_be_visible(timeout=10_000)
    assert secret not in page.content()
    expect(page.locator("#new-key-secret-value")).to_have_count(0)


def test_a_key_is_revoked_after_a_confirmation_in_words(
    stack: Stack, new_context: Any, admin: tuple[str, str]
) -> None:
    live, engine, _ = stack
    other, secret = KeyStore(engine.redis, engine.keys).create("web", ["queues:read"])
    assert api(live, secret, "GET", "/queues").status_code == 200
    page = new_context().new_page()
    sign_in(page, live, admin[1])
    own = page.locator(f'#keys tr[data-key="{admin[0]}"]')
    expect(own).to_contain_text("the key you signed in with", timeout=10_000)
    expect(own.get_by_role("button", name="Revoke")).to_have_count(0)
    row = page.locator(f'#keys tr[data-key="{other.id}"]')
    row.get_by_role("button", name="Revoke").click()
    says = f"Revoke key {other.id}? Sites and scripts using it stop working at once"
    confirm(page, says, "DELETE")
    expect(row).to_have_attribute("data-state", "revoked")
    refused = api(live, secret, "GET", "/queues")
    assert refused.status_code == 401 and refused.json()["error"] == "Unauthorized"
    listed = {k["id"]: k for k in api(live, admin[1], "GET", "/keys").json()["keys"]}
    assert listed[other.id]["revoked"] is True


def test_invites_are_issued_and_their_links_let_a_visitor_into_the_lane(
    stack: Stack, new_context: Any, admin: tuple[str, str]
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=2)
    page = open_room_page(new_context().new_page(), live, admin[1], room)
    form = page.locator("#issue-invites")
    form.get_by_label("How many invites").fill("2")
    form.get_by_label("Invited visitors go").select_option("priority")
    form.get_by_role("button", name="Issue invites").click()
    links = page.locator("#invite-links-value")
    expect(links).to_have_value(re.compile(rf"/queue/{slug}\?key=pk_"), timeout=10_000)
    expect(page.locator("#invite-links")).to_contain_text("shown only this once")
    lines = links.input_value().splitlines()
    assert len(lines) == 2
    token = parse_qs(urlsplit(lines[0]).query)["invite"][0]
    guest = Visitor(live.url, api_key)
    answer = guest.enter(slug, token)
    assert answer.status_code == 200, answer.text
    assert (answer.json["status"], answer.json["position"]) == ("waiting", 1)  # ahead of 2
    # the list says it was used; the API says the same
    listed = api(live, admin[1], "GET", f"/queues/{room}/invites").json()
    assert sorted(i["spent"] for i in listed["invites"]) == [0, 1]
    used = next(i["id"] for i in listed["invites"] if i["spent"] == 1)
    row = page.locator(f'#invites tr[data-invite="{used}"]')
    expect(row).to_contain_text("1 of 1", timeout=10_000)


def test_an_invite_is_withdrawn_and_a_visitor_with_it_is_refused(
    stack: Stack, new_context: Any, admin: tuple[str, str]
) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=1)
    expires = engine.stats(room).now_ms + 3_600_000
    body = {"count": 1, "expiresAt": expires, "uses": 3, "lane": "skip"}
    issued = api(live, admin[1], "POST", f"/queues/{room}/invites", body).json()
    [token], [invite_id] = issued["invites"], issued["ids"]
    page = open_room_page(new_context().new_page(), live, admin[1], room)
    row = page.locator(f'#invites tr[data-invite="{invite_id}"]')
    expect(row).to_contain_text("usable", timeout=10_000)
    row.get_by_role("button", name="Withdraw").click()
    confirm(page, f"Withdraw invite {invite_id}? Its link stops working at once", "DELETE")
    expect(row).to_have_attribute("data-state", "withdrawn", timeout=10_000)
    refused = Visitor(live.url, api_key).enter(slug, token)
    assert (refused.status_code, refused.json["error"]) == (410, "InviteWithdrawn")
    [listed] = api(live, admin[1], "GET", f"/queues/{room}/invites").json()["invites"]
    assert listed["state"] == "withdrawn"


def test_the_apis_refusal_is_shown_beside_the_form(
    stack: Stack, new_context: Any, admin: tuple[str, str]
) -> None:
    live, engine, _ = stack
    room, _ = waiting_room(engine, live.url, ahead=0)
    page = open_room_page(new_context().new_page(), live, admin[1], room)
    form = page.locator("#issue-invites")
    form.get_by_label(re.compile(r"^Expires")).fill("2020-01-01T10:00")
    form.get_by_role("button", name="Issue invites").click()
    expect(page.locator("#invite-error")).to_contain_text("Expires at: must be in the future")
    expect(page.locator("#invite-error")).to_contain_text(" UTC, ")  # a time a person reads
    expect(page.locator("#invite-links-value")).to_have_count(0)
    assert api(live, admin[1], "GET", f"/queues/{room}/invites").json()["total"] == 0
