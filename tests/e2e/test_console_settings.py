"""The console's rooms and their settings as an operator works them (issue 35): create a room,
change every setting, the safety net, bypass rules, delete a room, revoke a visitor, each API
refusal shown by its field; each checked where it lands (the management API's answer) and, where
a visitor meets it, by a visitor. Real Chromium, real gunicorn and Redis."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from console_pages import sign_in
from playwright.sync_api import Page, expect
from test_accessibility import assert_no_violations

from anteroom.engine import Engine
from anteroom.queue.rooms import room_config as rooms
from anteroom.sdk import tokens
from anteroom.store.keystore import KeyStore
from helpers import MANAGEMENT_API, TEST_KEYS, make_room, waiting_room
from live_server import LiveServer
from visitor_client import HUMAN, Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]
SECRET = "monitor-secret-0123456789"
# Words the console's forms and confirmations never show: the API's own names.
API_NAMES = re.compile(r"ratePerMinute|admissionTtlSec|redirectUrl|safetyNet|sessionRenewal|fifo")


@dataclass
class Console:
    page: Page
    live: LiveServer
    engine: Engine
    api_key: str  # the environment's public key, for visitors
    secret: str  # the operator's secret key, for the management API

    def api(self, method: str, path: str, body: Any = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.secret}"}
        url = self.live.url + MANAGEMENT_API + path
        return requests.request(method, url, json=body, headers=headers, timeout=10)

    def room(self, room_id: str) -> dict[str, Any]:
        answer = self.api("GET", f"/queues/{room_id}")
        assert answer.status_code == 200, answer.text
        return answer.json()  # type: ignore[no-any-return]

    def visitor(self, **headers: str) -> Visitor:
        return Visitor(self.live.url, self.api_key, headers=HUMAN | headers)


@pytest.fixture
def console(stack: Stack, new_context: Any) -> Console:
    """A signed-in console (on the rooms list) of environment ``web``."""
    live, engine, api_key = stack
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    page = new_context().new_page()
    sign_in(page, live, secret)
    return Console(page, live, engine, api_key, secret)


def room_page(console: Console, room: str) -> Page:
    """The signed-in console on an open room's page, once it shows the room."""
    page = console.page
    page.goto(f"{console.live.url}/console/rooms/{room}")
    expect(page.locator('[data-figure="Status"]')).to_have_text("open", timeout=10_000)
    return page


def eventually(check: Callable[[], bool], within: float = 6.0) -> bool:
    """Whether ``check()`` comes true within ``within`` s: every worker of the live server sees a
    room's change once its room directory has read the change (a fraction of a second)."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling a condition, not waiting out a race
    return True


def meets(console: Console, slug: str, **headers: str) -> str:
    """What a new visitor entering ``slug`` meets: the status, or the refusal's error (each try is
    a new visitor: a second entry of the same one would find the spot of its first)."""
    with console.visitor(**headers) as visitor:
        answer = visitor.enter(slug).json
        return str(answer.get("status") or answer.get("error"))


def confirm(page: Page, says: str | re.Pattern[str], method: str = "PATCH") -> str:
    """Confirm the dialog (which says ``says``) and wait for the change's answer; its text."""
    dialog = page.locator("dialog[open]")
    expect(dialog).to_contain_text(says)
    text = dialog.inner_text()
    assert not API_NAMES.search(text), text
    with page.expect_response(lambda reply: reply.request.method == method, timeout=10_000):
        dialog.get_by_role("button", name="Confirm").click()
    return text


def refused_by(page: Page, input_id: str, says: str) -> None:
    """The input is marked invalid and its own message (tied to it) says ``says``."""
    field = page.locator(f"#{input_id}")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(page.locator(f"#{input_id}-error")).to_contain_text(says)
    assert f"{input_id}-error" in (field.get_attribute("aria-describedby") or "")


def test_create_a_room_refused_in_place_then_created(console: Console) -> None:
    page, live = console.page, console.live
    form = page.locator("#create-room")
    form.get_by_label("Name").fill("Autumn drop")
    expect(form.get_by_label("Address (slug)")).to_have_value("autumn-drop")
    form.get_by_label("Where admitted visitors are sent").fill("http://shop.example/drop")
    form.get_by_label("Rate (admitted per minute)").fill("0")
    form.get_by_role("button", name="Create room").click()
    # The API's own words, each by its field; nothing was created.
    refused_by(page, "new-redirect", "must use https")
    refused_by(page, "new-rate", "must be from 1 to 100,000")
    assert console.api("GET", "/queues").json()["queues"] == []
    form.get_by_label("Where admitted visitors are sent").fill(f"{live.url}/healthz?from=queue")
    form.get_by_label("Rate (admitted per minute)").fill("120")
    form.get_by_label("Capacity (most visitors active at once)").fill("40")
    form.get_by_label("How the line is served").select_option(label="First come, first served")
    form.get_by_role("button", name="Create room").click()
    page.wait_for_url(re.compile(r"/console/rooms/q[0-9a-f]{16}$"), timeout=10_000)
    room_id = page.url.rsplit("/", 1)[1]
    listed = console.api("GET", "/queues").json()["queues"]
    assert [(r["id"], r["slug"], r["name"]) for r in listed] == [
        (room_id, "autumn-drop", "Autumn drop")
    ]
    assert (listed[0]["ratePerMinute"], listed[0]["capacity"], listed[0]["mode"]) == (
        120,
        40,
        "fifo",
    )
    # Opened from its page, a visitor gets in.
    expect(page.locator('[data-figure="Status"]')).to_have_text("idle", timeout=10_000)
    page.get_by_role("button", name="Open now").click()
    confirm(page, "Open the room now")
    expect(page.locator('[data-figure="Status"]')).to_have_text("open", timeout=10_000)
    with console.visitor() as visitor:
        answer = visitor.enter("autumn-drop")
        assert answer.status_code == 200, answer.text
        assert answer.json["status"] in ("waiting", "admitted")


# Each setting of the form: its label, the value typed (or chosen), and what the API then holds.
SETTINGS: list[tuple[str, str, str | bool, Any]] = [
    ("setting-name", "fill", "Winter drop", "Winter drop"),
    ("setting-redirectUrl", "fill", "https://shop.example/winter", "https://shop.example/winter"),
    ("setting-admissionTtlSec", "fill", "900", 900),
    ("setting-sessionRenewal", "check", False, False),
    ("setting-bindIp", "check", True, True),
    ("setting-noScriptScore", "fill", "80", 80),
    ("setting-maxWaiting", "fill", "5000", 5000),
    ("setting-abandonAfterSec", "fill", "600", 600),
    ("setting-gracePeriodSec", "fill", "120", 120),
    ("setting-pollBudgetPerSecond", "fill", "3000", 3000),
    ("setting-failMode", "select", "open", "open"),
    ("setting-crawlers", "select", "pass", "pass"),
    (
        "setting-agents",
        "fill",
        "* queue\nagent.example lane\nscraper.example refuse",
        {"*": "queue", "agent.example": "lane", "scraper.example": "refuse"},
    ),
    ("setting-agentLaneRatePerMinute", "fill", "30", 30),
    ("setting-publicFairness", "check", False, False),
    ("setting-notify", "check", True, True),
    ("setting-returnWindowSec", "fill", "1800", 1800),
]
FIELD = re.compile(r"^setting-(.*)$")


def test_every_setting_is_saved_as_the_api_then_says(console: Console) -> None:
    room = make_room(console.engine, env="web", slug="drop-" + secrets.token_hex(4))
    console.engine.open(room)
    page = room_page(console, room)
    # Every setting a PATCH takes has its control on the page (a new field needs one too).
    elsewhere = {"bypass": "#bypass-add", "safetyNet": "#safety-net-form"}
    elsewhere |= {"drawBeacon": "#setting-beacon-url"}
    for api in sorted(rooms.MUTABLE):
        control = elsewhere.get(api, f'#setting-{api}, form[data-field="{api}"]')
        expect(page.locator(control), api).to_have_count(1)
    form = page.locator("#settings-form")
    for input_id, how, value, expected in SETTINGS:
        api_name = FIELD.sub(r"\1", input_id)
        field = form.locator(f"#{input_id}")
        if how == "fill":
            field.fill(str(value))
        elif how == "check":
            field.set_checked(bool(value))
        else:
            field.select_option(str(value))
        form.get_by_role("button", name="Review and save").click()
        text = confirm(page, "→")
        assert "these" not in text, text  # one change at a time: only the one setting
        expect(form.locator("#settings-outcome")).to_have_text("Saved.", timeout=10_000)
        assert console.room(room)[api_name] == expected, api_name
    # Crawlers of some engines only: ticked under the choice, said by name.
    form.locator("#setting-crawlers").select_option("some")
    form.get_by_label("Google").check()
    form.get_by_label("Bing").check()
    form.get_by_role("button", name="Review and save").click()
    confirm(page, "every engine's verified crawlers go through → verified crawlers of Google, Bing")
    expect(form.locator("#settings-outcome")).to_have_text("Saved.", timeout=10_000)
    assert console.room(room)["crawlers"] == ["google", "bing"]
    # The draw's beacon: three parts, then none.
    form.get_by_label("Beacon's address").fill("https://api.drand.sh")
    form.get_by_label("Beacon's first round").fill("1595431050")
    form.get_by_label("Seconds between two rounds").fill("30")
    form.get_by_role("button", name="Review and save").click()
    confirm(page, "The draw's beacon: no beacon → https://api.drand.sh")
    expect(form.locator("#settings-outcome")).to_have_text("Saved.", timeout=10_000)
    beacon = {"url": "https://api.drand.sh", "genesisTime": 1595431050, "period": 30}
    assert console.room(room)["drawBeacon"] == beacon
    for label in ("Beacon's address", "Beacon's first round", "Seconds between two rounds"):
        form.get_by_label(label).fill("")
    form.get_by_role("button", name="Review and save").click()
    confirm(page, "→ no beacon")
    expect(form.locator("#settings-outcome")).to_have_text("Saved.", timeout=10_000)
    assert console.room(room)["drawBeacon"] is None
    # A refusal, shown by its field; nothing else of the same save is changed.
    form.locator("#setting-admissionTtlSec").fill("10")
    form.locator("#setting-maxWaiting").fill("7000")
    form.get_by_role("button", name="Review and save").click()
    confirm(page, "How long an admission lasts: 900 seconds → 10 seconds")
    refused_by(page, "setting-admissionTtlSec", "must be from 30 to 3,600")
    # The page's status names the setting in words too, never by the API's name.
    expect(page.locator("#room-status")).to_contain_text("Admission life (seconds): must be from")
    assert console.room(room)["maxWaiting"] == 5000
    # The rate, among the actions: the API's refusal of 0 under it too.
    rate = page.locator('form[data-field="ratePerMinute"]')
    rate.get_by_label("Rate (admissions per minute)").fill("0")
    rate.get_by_role("button", name="Change").click()
    confirm(page, "Change the rate from 60 to 0 per minute")
    refused_by(page, "field-ratePerMinute", "must be from 1 to 100,000")
    assert console.room(room)["ratePerMinute"] == 60


def test_mode_and_redirect_as_visitors_meet_them(console: Console) -> None:
    """The mode in words; a new address is where the next admitted visitor is sent (everyone is
    admitted at once in this room, so the first is); a full capacity keeps the next one waiting;
    "No new entries" refuses a newcomer."""
    live = console.live
    slug = "drop-" + secrets.token_hex(4)
    room = make_room(console.engine, env="web", slug=slug, mode="passthrough")
    console.engine.open(room)
    page = room_page(console, room)
    expect(page.locator('[data-figure="Mode"]')).to_have_text("Everyone at once (no line)")
    form = page.locator("#settings-form")
    form.get_by_label("Where admitted visitors are sent").fill(f"{live.url}/healthz?to=checkout")
    form.get_by_role("button", name="Review and save").click()
    confirm(
        page, f'Where admitted visitors are sent: "https://shop.example/checkout" → "{live.url}'
    )
    expect(form.locator("#settings-outcome")).to_have_text("Saved.", timeout=10_000)

    # Each worker of the live server reads the change within moments (its room directory), so
    # a visitor who enters at once may still be sent to the old address: the next ones are not.
    def sent_to_the_new_address() -> bool:
        with console.visitor() as visitor:
            answer = visitor.enter(slug)
            assert answer.json["status"] == "admitted", answer.text
            return bool(answer.json["redirectUrl"] == f"{live.url}/healthz?to=checkout")

    assert eventually(sent_to_the_new_address)
    # A capacity of one, which those visitors fill: the next one waits, everyone at once or not.
    capacity = page.locator('form[data-field="capacity"]')
    capacity.get_by_label("Capacity (most active visitors, 0 for no limit)").fill("1")
    capacity.get_by_role("button", name="Change").click()
    confirm(page, "Change the capacity from no limit to 1")
    expect(page.locator('[data-figure="Active"]')).to_have_text(
        re.compile(r"^\d+ of 1$"), timeout=10_000
    )
    assert eventually(lambda: meets(console, slug) == "waiting")
    modes = page.locator('form[data-field="mode"]')
    modes.get_by_label("Queueing mode").select_option(label="No new entries")
    modes.get_by_role("button", name="Change").click()
    confirm(page, "from Everyone at once (no line) to No new entries")
    expect(page.locator('[data-figure="Mode"]')).to_have_text("No new entries", timeout=10_000)
    assert console.room(room)["mode"] == "reject"

    assert eventually(lambda: meets(console, slug) == "RoomClosed")


def test_delete_a_room_says_what_is_lost_and_needs_its_slug(console: Console) -> None:
    room, slug = waiting_room(console.engine, console.live.url, ahead=2)
    with console.visitor() as waiting:
        assert waiting.enter(slug).json["status"] == "waiting"
        page = room_page(console, room)
        lost = page.locator("#delete-lost")
        expect(lost).to_contain_text("3 waiting and 0 held visitors lose their places")
        page.get_by_label(f"Type the room's address, {slug}, to confirm").fill("not-" + slug)
        page.get_by_role("button", name="Delete this room").click()
        expect(page.locator("#delete-slug")).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#delete-outcome")).to_contain_text(f"type {slug} to delete it")
        assert console.api("GET", f"/queues/{room}").status_code == 200
        page.get_by_label(f"Type the room's address, {slug}, to confirm").fill(slug)
        page.get_by_role("button", name="Delete this room").click()
        page.wait_for_url(f"{console.live.url}/console", timeout=10_000)
        expect(page.locator("#rooms-status")).to_have_text("No rooms yet.")
        assert console.api("GET", f"/queues/{room}").status_code == 404
        # The visitor in line hears the room is gone; a newcomer that there is no such room.
        gone = waiting.poll()
        assert (gone.status_code, gone.json["error"]) == (410, "TicketGone"), gone.text
    assert eventually(lambda: meets(console, slug) == "RoomNotFound")


def test_bypass_rules_added_and_removed_never_showing_a_secret(console: Console) -> None:
    room, slug = waiting_room(console.engine, console.live.url, ahead=2)
    page = room_page(console, room)
    section = page.locator("#bypass-section")
    expect(section).to_contain_text("No bypass rules")
    section.get_by_label("Kind of rule").select_option("header")
    section.get_by_label("Header or cookie name").fill("X-Monitor")
    section.get_by_label("Its secret").fill("short")
    section.get_by_role("button", name="Add rule").click()
    confirm(page, "Add a bypass rule: Requests whose header X-Monitor carries the secret")
    refused_by(page, "bypass-secret", "must be printable ASCII of 16 to 256 characters")
    section.get_by_label("Its secret").fill(SECRET)
    section.get_by_role("button", name="Add rule").click()
    confirm(page, "The room then has 1 rule.")
    expect(section.locator("#bypass-outcome")).to_have_text("Rule added.", timeout=10_000)
    rules = console.room(room)["bypass"]
    assert [(r["kind"], r["name"], r["secret"]) for r in rules] == [("header", "x-monitor", None)]
    expect(section.locator("#bypass-rules")).to_contain_text(rules[0]["secretId"])
    assert SECRET not in page.content()
    # Through the line with the secret; without it, behind those waiting.
    assert eventually(lambda: meets(console, slug, **{"X-Monitor": SECRET}) == "admitted")
    # A second rule: the header rule keeps its stored secret, nobody types it again.
    section.get_by_label("Kind of rule").select_option("address-range")
    section.get_by_label("Address range or path").fill("198.51.100.0/24")
    section.get_by_role("button", name="Add rule").click()
    confirm(page, "Visitors from addresses in 198.51.100.0/24 skip the line")
    expect(section.locator("#bypass-rules li")).to_have_count(2, timeout=10_000)
    after = console.room(room)["bypass"]
    assert after[0]["secretId"] == rules[0]["secretId"]  # the same secret, kept
    # The header rule removed: the address rule stays, no secret needed.
    section.get_by_role("button", name=re.compile("^Remove: Requests whose header")).click()
    confirm(page, "Remove the bypass rule")
    expect(section.locator("#bypass-rules li")).to_have_count(1, timeout=10_000)
    assert console.room(room)["bypass"] == [{"kind": "address-range", "value": "198.51.100.0/24"}]
    assert eventually(lambda: meets(console, slug, **{"X-Monitor": SECRET}) == "waiting")


def test_the_safety_net_is_set_changed_and_cleared(console: Console) -> None:
    room, slug = waiting_room(console.engine, console.live.url, ahead=2)
    page = room_page(console, room)
    net = page.locator("#safety-net-form")
    expect(net.locator("#net-state")).to_contain_text("Off: the room queues in its own mode")
    net.get_by_label("Start queueing when this many visitors are active at once").fill("500")
    net.get_by_label("Or when this many arrive in a minute").fill("1000")
    net.get_by_label("Calm again after this long with an empty line and both below").fill("-5")
    net.get_by_role("button", name="Save safety net").click()
    confirm(page, "Turn the safety net on")
    refused_by(page, "net-coolDownSec", "must be from 0 to 86,400")
    net.get_by_label("Calm again after this long with an empty line and both below").fill("600")
    net.get_by_role("button", name="Save safety net").click()
    confirm(
        page,
        "queueing from 500 active visitors or 1,000 arrivals a minute, "
        "calm again after 600 seconds quiet",
    )
    expect(net.locator("#net-outcome")).to_have_text("Saved.", timeout=10_000)
    shown = console.room(room)["safetyNet"]
    assert (shown["activeSessions"], shown["arrivalsPerMinute"], shown["coolDownSec"]) == (
        500,
        1000,
        600,
    )
    expect(net.locator("#net-state")).to_contain_text("On: the room is calm")
    # Calm: a newcomer is let in at once, ahead of a rate of one a minute.
    assert eventually(lambda: meets(console, slug) == "admitted")
    net.get_by_label("Start queueing when this many visitors are active at once").fill("800")
    net.get_by_role("button", name="Save safety net").click()
    confirm(page, "Change the safety net from queueing from 500 active visitors")
    expect(net.locator("#net-outcome")).to_have_text("Saved.", timeout=10_000)
    assert console.room(room)["safetyNet"]["activeSessions"] == 800
    net.get_by_role("button", name="Turn the safety net off").click()
    confirm(page, "Turn the safety net off: the room queues in its own mode (First come")
    expect(net.locator("#net-state")).to_contain_text("Off", timeout=10_000)
    assert console.room(room)["safetyNet"] is None


def test_revoke_a_visitor_or_a_session_and_the_next_poll_says_so(console: Console) -> None:
    room, slug = waiting_room(console.engine, console.live.url, ahead=1)
    page = console.page
    with console.visitor() as visitor:
        assert visitor.enter(slug).json["status"] == "waiting"
        vid = [e.visitor for e in console.engine.line(room) if not e.visitor.startswith("ahead")]
        assert len(vid) == 1
        form = page.locator("#revoke-form")
        form.get_by_label("Revoke").select_option(label="A visitor (every session of theirs)")
        form.get_by_label("Its id").fill("not an id!")
        form.get_by_role("button", name="Revoke").click()
        confirm(page, "Revoke the visitor not an id!", method="POST")
        refused_by(page, "revoke-value", "must be 1 to 64 letters")
        form.get_by_label("Its id").fill(vid[0])
        form.get_by_label("Reason (kept in the audit log)").fill("Scripted checkout")
        form.get_by_role("button", name="Revoke").click()
        confirm(page, f"Revoke the visitor {vid[0]} in every room", method="POST")
        expect(form.locator("#revoke-outcome")).to_contain_text(
            f"Visitor {vid[0]} is revoked in 1 room: 1 waiting place dropped now", timeout=10_000
        )
        answer = visitor.poll()
        assert (answer.status_code, answer.json["error"]) == (403, "SessionRevoked"), answer.text
    # One session, by its id: its place goes at its next poll.
    with console.visitor() as visitor:
        assert visitor.enter(slug).json["status"] == "waiting"
        jti = tokens.decode(tokens.Keyring.parse(TEST_KEYS), visitor.session or "", "st1")["jti"]
        form.get_by_label("Revoke").select_option(label="One session")
        form.get_by_label("Its id").fill(jti)
        form.get_by_role("button", name="Revoke").click()
        confirm(page, f"Revoke the session {jti} in every room", method="POST")
        expect(form.locator("#revoke-outcome")).to_contain_text(
            f"Session {jti} is revoked in 1 room: its waiting places go at their next check-in",
            timeout=10_000,
        )
        answer = visitor.poll()
        assert (answer.status_code, answer.json["error"]) == (403, "SessionRevoked"), answer.text


@pytest.mark.parametrize("width", [390, 1280])
def test_the_new_forms_pass_axe(console: Console, width: int) -> None:
    """The rooms list with its create and revoke forms, a room's page with its settings, safety
    net, bypass rules and deletion, each with a refusal shown, at a phone's and a desktop's
    width; neither page scrolls sideways on the phone."""
    page = console.page
    page.set_viewport_size({"width": width, "height": 844})
    room, _ = waiting_room(console.engine, console.live.url, ahead=1, bypass=[
        {"kind": "header", "name": "X-Monitor", "secret": SECRET},
    ])  # fmt: skip
    page.reload()
    page.locator("#create-room").get_by_role("button", name="Create room").click()
    refused_by(page, "new-slug", "must match")
    assert_no_violations(page, f"console rooms list with its forms, {width} px")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    room_page(console, room)
    page.locator("#setting-admissionTtlSec").fill("1")
    page.get_by_role("button", name="Review and save").click()
    confirm(page, "How long an admission lasts")
    refused_by(page, "setting-admissionTtlSec", "must be from 30")
    assert_no_violations(page, f"console room page with its settings, {width} px")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
