"""A room's bypass rules applied by the service (docs/operators.md, "Bypass rules"; issue 26
item 3): an ``enter`` whose request matches an address-range, header or cookie rule takes the
skip lane. Through the real app and a real Redis."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.sdk import bypass_rules
from anteroom.service_container import Services
from anteroom.visit import bypass as service_bypass
from anteroom.web import app_factory
from helpers import make_room
from visitor_client import HUMAN, Visitor

pytestmark = pytest.mark.redis

SECRET = "monitor-secret-0123456789"
RULES: list[dict[str, Any]] = [
    {"kind": "path-prefix", "value": "/static/"},  # the site's paths: never the service's
    {"kind": "address-range", "value": "198.51.100.0/24"},
    {"kind": "header", "name": "X-Monitor", "secret": SECRET},
    {"kind": "cookie", "name": "monitor", "secret": SECRET},
]
OUTSIDE = "203.0.113.7"
OTHER_SECRET = "other-monitor-secret-98765"


@pytest.fixture
def api_key(services: Services) -> str:
    record, _ = services.keystore.create("shop")
    return record.public_key


@pytest.fixture
def room(services: Services) -> str:
    """An open room at one admission a minute, its budget spent, two visitors waiting."""
    room_id = make_room(services.engine, env="shop", slug="drop", ratePerMinute=1, bypass=RULES)
    services.engine.open(room_id)
    return room_id


def fill(client: FlaskClient, api_key: str, count: int = 2) -> list[Visitor]:
    waiting = [Visitor(client, api_key, address=OUTSIDE) for _ in range(count)]
    for visitor in waiting:
        assert visitor.enter("drop").json["status"] == "waiting"
    return waiting


def visitor(client: FlaskClient, api_key: str, address: str, headers: dict[str, str]) -> Visitor:
    """A visitor from ``address`` sending ``headers``; a ``Cookie`` goes in the client's jar
    (the test client writes the header from it)."""
    headers = dict(headers)
    for pair in headers.pop("Cookie", "").split(";"):
        name, _, value = pair.strip().partition("=")
        if name:
            client.set_cookie(name, value)
    return Visitor(client, api_key, address=address, headers=HUMAN | headers)


def line(services: Services, room: str) -> list[str]:
    return [entry.visitor for entry in services.engine.line(room)]


@pytest.mark.parametrize(
    ("address", "headers"),
    [
        ("198.51.100.23", {}),
        ("::ffff:198.51.100.23", {}),  # a v4 client on a dual-stack socket
        (OUTSIDE, {"x-monitor": SECRET}),  # header names in any case
        (OUTSIDE, {"Cookie": f"theme=dark; monitor={SECRET}"}),  # the test client's jar
    ],
    ids=["address-range", "mapped-address", "header", "cookie"],
)
def test_a_matching_request_skips_the_line_and_the_rate(
    client: FlaskClient,
    services: Services,
    api_key: str,
    room: str,
    address: str,
    headers: dict[str, str],
) -> None:
    waiting = fill(client, api_key)
    before = line(services, room)
    answer = visitor(client, api_key, address, headers).enter("drop")
    assert answer.status_code == 200 and answer.json["status"] == "admitted", answer.text
    assert answer.json["token"].startswith("ab1.")
    # counted like any admission; nobody waiting moved, and the rate still owes them theirs
    assert services.engine.stats(room).dealt_total == 1
    assert line(services, room) == before
    assert waiting[0].poll().json["position"] == 1
    services.engine.shift_clock(room, 60_000)
    assert waiting[0].poll().json["status"] == "admitted"


@pytest.mark.parametrize(
    ("address", "headers"),
    [
        (OUTSIDE, {}),
        (OUTSIDE, {"X-Monitor": SECRET[:-1] + "x"}),
        (OUTSIDE, {"X-Monitor": SECRET + "x"}),
        (OUTSIDE, {"Cookie": "monitor=wrong-secret-0123456789"}),
        (OUTSIDE, {"X-Monitor-2": SECRET, "Cookie": f"other={SECRET}"}),  # other names
        (OUTSIDE, {"X-Forwarded-For": "198.51.100.23"}),  # no trusted proxy: written by anyone
        (OUTSIDE, {"X-Static": "/static/app.js"}),  # path prefixes never apply here
    ],
    ids=["nothing", "wrong", "longer", "wrong-cookie", "other-names", "forged-xff", "path"],
)
def test_anything_else_waits_in_line(
    client: FlaskClient,
    services: Services,
    api_key: str,
    room: str,
    address: str,
    headers: dict[str, str],
) -> None:
    fill(client, api_key)
    answer = visitor(client, api_key, address, headers).enter("drop")
    assert answer.status_code == 200 and answer.json["status"] == "waiting"
    assert answer.json["position"] == 3
    assert services.engine.stats(room).dealt_total == 0


@pytest.fixture
def proxied(settings: Settings, redis_client: Any) -> Iterator[Flask]:
    """The service behind one trusted proxy: the client's address is the X-Forwarded-For's."""
    app = app_factory.create_app(settings.with_overrides(trusted_proxies=1), {"TESTING": True})
    yield app
    app_factory.close_app(app)


def test_behind_a_trusted_proxy_the_forwarded_address_is_the_clients(
    proxied: Flask, room: str
) -> None:
    services: Services = proxied.extensions["anteroom"]
    api_key = services.keystore.create("shop")[0].public_key
    client = proxied.test_client()
    proxy = "10.0.0.2"  # the proxy's own address: outside the range either way

    def enter(forwarded: str) -> Any:
        headers = HUMAN | {"X-Forwarded-For": forwarded}
        return Visitor(client, api_key, address=proxy, headers=headers).enter("drop")

    fill(client, api_key)
    assert enter("198.51.100.9").json["status"] == "admitted"
    # the client may write an X-Forwarded-For of its own: the proxy appends the real address
    forged = enter("198.51.100.9, " + OUTSIDE)
    assert forged.json["status"] == "waiting"


def test_capacity_still_bounds_a_bypass(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    services.engine.update_room(room, {"ratePerMinute": 60, "capacity": 1})
    services.engine.shift_clock(room, 1_000)
    first = Visitor(client, api_key, address=OUTSIDE)
    assert first.enter("drop").json["status"] == "admitted"
    fill(client, api_key, 1)
    monitor = Visitor(client, api_key, headers=HUMAN | {"X-Monitor": SECRET})
    answer = monitor.enter("drop")
    # the room is full: the skip lane waits at the head of the line, not beyond capacity
    assert answer.json["status"] == "waiting" and answer.json["position"] == 1
    assert services.engine.stats(room).active == 1


def test_a_bypass_passes_a_reject_room_as_it_passes_the_edge(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    """The operator's monitoring gets in whatever the mode; anyone else is refused."""
    services.engine.update_room(room, {"mode": "reject"})
    refused = Visitor(client, api_key, address=OUTSIDE).enter("drop")
    assert refused.status_code == 403 and refused.json["error"] == "RoomClosed"
    monitor = Visitor(client, api_key, headers=HUMAN | {"X-Monitor": SECRET})
    assert monitor.enter("drop").json["status"] == "admitted"
    assert services.engine.stats(room).waiting == 0


def test_a_room_without_rules_is_unchanged(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    services.engine.update_room(room, {"bypass": []})
    fill(client, api_key)
    headers = {"X-Monitor": SECRET, "Cookie": f"monitor={SECRET}"}
    answer = visitor(client, api_key, "198.51.100.23", headers).enter("drop")
    assert answer.json["status"] == "waiting" and answer.json["position"] == 3


def test_the_plain_page_applies_the_rules_too(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    fill(client, api_key)
    page = client.get(
        f"/queue/drop/plain?key={api_key}",
        headers=HUMAN | {"X-Monitor": SECRET},
        environ_base={"REMOTE_ADDR": OUTSIDE},
    )
    assert page.status_code == 303 and "abq=ab1." in page.headers["Location"]
    assert services.engine.stats(room).dealt_total == 1


def test_a_secret_is_checked_with_scrypt_once_per_process(
    monkeypatch: pytest.MonkeyPatch, services: Services, room: str
) -> None:
    checks: list[str] = []

    def counted(value: str, hashed: str) -> bool:
        checks.append(value)
        return real(value, hashed)

    real = bypass_rules.verify_secret
    monkeypatch.setattr(bypass_rules, "verify_secret", counted)
    stored = services.engine.get_room(room)
    for _ in range(3):
        assert service_bypass.matches(stored, OUTSIDE, {"x-monitor": SECRET}, "")
        assert not service_bypass.matches(stored, OUTSIDE, {"x-monitor": "x" * 20}, "")
    assert checks == [SECRET, "x" * 20]


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The module's budgets and verdicts as in a new process, on a clock the test moves."""
    importlib.reload(service_bypass)
    now = [1_000.0]
    monkeypatch.setattr(service_bypass, "clock", lambda: now[0], raising=False)
    yield now
    importlib.reload(service_bypass)  # the next test starts afresh too


def test_a_flood_of_made_up_secrets_is_bounded(
    services: Services, room: str, fresh_process: list[float]
) -> None:
    stored = services.engine.get_room(room)
    for i in range(int(service_bypass.SCRYPT_BURST)):  # the environment's burst, all garbage
        assert not service_bypass.matches(stored, OUTSIDE, {"x-monitor": f"made-up-{i}"}, "")
    # beyond the budget even the right secret is no match (its visitor queues as anyone) ...
    assert not service_bypass.matches(stored, OUTSIDE, {"x-monitor": SECRET}, "")
    # ... and is not remembered so: it is checked once the budget allows
    fresh_process[0] += 1 / service_bypass.SCRYPT_PER_SEC
    assert service_bypass.matches(stored, OUTSIDE, {"x-monitor": SECRET}, "")
    # remembered now: no budget needed
    assert service_bypass.matches(stored, OUTSIDE, {"x-monitor": SECRET}, "")


# -- one tenant's garbage spends only its own budget (issue 32 item 5) ------------------------


def tenant_room(services: Services, env: str, slug: str, secret: str) -> tuple[str, str]:
    """An open room of ``env`` whose rule asks for ``secret``, two visitors waiting; (key, id)."""
    rules = [{"kind": "header", "name": "X-Monitor", "secret": secret}]
    room_id = make_room(services.engine, env=env, slug=slug, ratePerMinute=1, bypass=rules)
    services.engine.open(room_id)
    for i in range(2):
        services.engine.enter(room_id, f"{slug}-waiting-{i}", "s", 10)
    return services.keystore.create(env)[0].public_key, room_id


def attack(services: Services, rooms: list[str], now: list[float], seconds: float) -> int:
    """Made-up secrets sent to ``rooms`` at 20 a second each (5x the budget's rate), as many
    addresses would; how many got a scrypt check."""
    checks = []
    real = bypass_rules.verify_secret

    def counted(value: str, hashed: str) -> bool:
        checks.append(value)
        return real(value, hashed)

    stored = [services.engine.get_room(r) for r in rooms]
    bypass_rules.verify_secret = counted  # type: ignore[assignment]
    try:
        for step in range(int(seconds * 20)):
            now[0] += 0.05
            for i, room in enumerate(stored):
                garbage = {"x-monitor": f"made-up-{i}-{step}-0123456789"}
                assert not service_bypass.matches(room, f"192.0.2.{step % 250}", garbage, "")
    finally:
        bypass_rules.verify_secret = real  # type: ignore[assignment]
    return len(checks)


def test_one_tenants_flood_leaves_another_tenants_holder_its_first_check(
    client: FlaskClient, services: Services, fresh_process: list[float]
) -> None:
    """Tenant A's room (and C's) flooded with made-up secrets: B's monitor, arriving in the
    middle of it, is admitted through the skip lane on its first request."""
    a_key, a_room = tenant_room(services, "tenant-a", "drop", SECRET)
    b_key, b_room = tenant_room(services, "tenant-b", "desk", OTHER_SECRET)
    checked = attack(services, [a_room], fresh_process, seconds=1.0)
    # A's garbage got its own budget's worth of checks (a burst of 8, then 4 a second) ...
    assert 8 <= checked <= 8 + 4
    monitor = Visitor(client, b_key, address=OUTSIDE, headers=HUMAN | {"X-Monitor": OTHER_SECRET})
    answer = monitor.enter("desk")
    assert answer.json["status"] == "admitted", answer.text  # ... and B's monitor its first try
    assert services.engine.stats(b_room).dealt_total == 1
    # A's own holder waits for A's budget: the garbage spent A's, nobody else's.
    a_monitor = Visitor(client, a_key, address=OUTSIDE, headers=HUMAN | {"X-Monitor": SECRET})
    assert a_monitor.enter("drop").json["status"] == "waiting"


def test_two_tenants_flooded_at_once_still_leave_a_third_its_first_check(
    client: FlaskClient, services: Services, fresh_process: list[float]
) -> None:
    _, a_room = tenant_room(services, "tenant-a", "drop", SECRET)
    _, c_room = tenant_room(services, "tenant-c", "shop", SECRET)
    b_key, _ = tenant_room(services, "tenant-b", "desk", OTHER_SECRET)
    checked = attack(services, [a_room, c_room], fresh_process, seconds=1.0)
    # Together they are held to the process's budget (a burst of 16, then 8 a second), less
    # the reserve a quiet tenant may take: the worker's CPU stays bounded.
    assert 12 <= checked <= 16 + 8
    monitor = Visitor(client, b_key, address=OUTSIDE, headers=HUMAN | {"X-Monitor": OTHER_SECRET})
    assert monitor.enter("desk").json["status"] == "admitted"


def test_a_verified_holders_verdict_outlives_another_tenants_flood(
    monkeypatch: pytest.MonkeyPatch,
    client: FlaskClient,
    services: Services,
    fresh_process: list[float],
) -> None:
    # Few verdicts kept, so the flood below outnumbers them many times over.
    monkeypatch.setattr(service_bypass, "MAX_VERDICTS", 4)
    _, a_room = tenant_room(services, "tenant-a", "drop", SECRET)
    b_key, b_room = tenant_room(services, "tenant-b", "desk", OTHER_SECRET)
    b_stored = services.engine.get_room(b_room)
    assert service_bypass.matches(b_stored, OUTSIDE, {"x-monitor": OTHER_SECRET}, "")
    assert attack(services, [a_room], fresh_process, seconds=1.0) > 2 * 4
    # Remembered: no scrypt and no budget needed, whatever A's flood did to both.
    monkeypatch.setattr(bypass_rules, "verify_secret", lambda *_: pytest.fail("checked again"))
    monitor = Visitor(client, b_key, address=OUTSIDE, headers=HUMAN | {"X-Monitor": OTHER_SECRET})
    assert monitor.enter("desk").json["status"] == "admitted"
