"""Where a draw's beacon may be fetched from: the URL is checked as a server-side fetch's should
be when it is written (``400`` naming ``drawBeacon.url``), and every address its host resolves
to is checked again as it is connected to, so DNS cannot move it onto an internal address."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.engine import Engine
from anteroom.queue.draw import outbound_fetch
from anteroom.queue.draw.draw_beacon import fetch_randomness
from anteroom.queue.draw.outbound_fetch import FetchFailed, FetchRefused, Outbound
from anteroom.service_container import Services
from outbound_stand_ins import DnsStandIn, HttpStandIn, http_answer

pytestmark = pytest.mark.redis

API = "/api/management/v1"
GENESIS, PERIOD = 1_700_000_000, 30
VALUE = "ab" * 32
ROUND = {"round": 7, "randomness": VALUE, "signature": "00"}


def create(client: FlaskClient, services: Services, url: str) -> Any:
    _, secret = services.keystore.create("shop")
    body = {"slug": "drop", "name": "Drop", "redirectUrl": "https://shop.example/checkout",
            "drawBeacon": {"url": url, "genesisTime": GENESIS, "period": PERIOD}}  # fmt: skip
    return client.post(f"{API}/queues", json=body, headers={"Authorization": f"Bearer {secret}"})


REFUSED = [
    ("http://beacon.example", "must use https"),
    ("http://127.0.0.1:8080", "must use https"),  # loopback http: only with the dev setting
    ("ftp://beacon.example", "must use https"),
    ("https://user:pw@beacon.example", "credentials"),
    ("https://token@beacon.example", "credentials"),
    ("https://beacon.example:99999", "port"),
    ("https://beacon.example:0", "port"),
    ("https://beacon.example:http", "port"),
    ("https://169.254.169.254", "link-local"),
    ("https://10.0.0.1", "private"),
    ("https://192.168.1.1", "private"),
    ("https://172.16.0.1", "private"),
    ("https://[fd00::1]", "private"),
    ("https://[fe80::1]", "link-local"),
    ("https://127.0.0.1", "loopback"),
    ("https://[::1]", "loopback"),
    ("https://localhost", "loopback"),
    ("https://0x7f000001", "loopback"),
    ("https://2130706433", "loopback"),
    ("https://127.1", "loopback"),
    ("https://0177.0.0.1", "loopback"),
    ("https://[::ffff:127.0.0.1]", "loopback"),
    ("https://[::ffff:10.0.0.1]", "private"),
    ("https://0.0.0.0", "unspecified"),
    ("https://224.0.0.1", "multicast"),
    ("https://240.0.0.1", "reserved"),
    ("https://100.64.0.1", "not a public address"),
    ("https://1.2.3.4.5", "neither a name nor an IP address"),
    ("https://beacon.example/?x=1", "without query"),
    ("https://" + "a" * 64 + ".example", "invalid host name"),
]


@pytest.mark.parametrize(("url", "why"), REFUSED)
def test_a_beacon_url_the_service_may_not_fetch_is_a_400_naming_draw_beacon_url(
    client: FlaskClient, services: Services, url: str, why: str
) -> None:
    answer = create(client, services, url)
    assert answer.status_code == 400, answer.json
    assert set(answer.json["fields"]) == {"drawBeacon.url"}
    assert why in answer.json["fields"]["drawBeacon.url"]


@pytest.mark.parametrize(
    "url", ["https://api.drand.sh", "https://8.8.8.8:8443/x", "https://[2606:4700::1]"]
)
def test_a_public_https_beacon_url_is_taken(
    client: FlaskClient, services: Services, url: str
) -> None:
    answer = create(client, services, url)
    assert answer.status_code == 201 and answer.json["drawBeacon"]["url"] == url


@pytest.fixture
def dev_settings(settings: Settings) -> Settings:
    return settings.with_overrides(outbound_allow_loopback=True)


def test_the_development_setting_lets_http_reach_this_machine_only(
    dev_settings: Settings, redis_client: Any
) -> None:
    from anteroom.web.app_factory import close_app, create_app

    app = create_app(dev_settings, {"TESTING": True})
    try:
        services = app.extensions["anteroom"]
        client = app.test_client()
        assert create(client, services, "http://127.0.0.1:8080").status_code == 201
        services.engine.delete_room(services.engine.room_id("shop", "drop"))
        for url, why in [("https://10.0.0.1", "private"), ("https://169.254.169.254", "link")]:
            answer = create(client, services, url)
            assert answer.status_code == 400 and why in answer.json["fields"]["drawBeacon.url"]
    finally:
        close_app(app)


# -- at connect time -------------------------------------------------------------------------


@pytest.fixture
def beacon() -> Iterator[HttpStandIn]:
    with HttpStandIn(http_answer("200 OK", json.dumps(ROUND).encode())) as server:
        yield server


def test_a_name_resolving_to_this_machine_is_refused_as_it_is_connected(
    beacon: HttpStandIn,
) -> None:
    with DnsStandIn({"beacon.test": "127.0.0.1", "inside.test": "10.0.0.1"}) as dns:
        strict = Outbound(resolver=dns.address)
        url = f"https://beacon.test:{beacon.port}"
        assert strict.url_problem(url) is None  # nothing in the URL tells: its address does
        with pytest.raises(FetchRefused, match="loopback"):
            strict.get_json(url + "/public/7")
        assert fetch_randomness(url, 7, strict) is None
        assert dns.asked and beacon.connections == 0  # refused before any connection
        # The same name, reached over plain http with the development setting: fetched.
        dev = Outbound(allow_loopback=True, resolver=dns.address)
        assert fetch_randomness(f"http://beacon.test:{beacon.port}", 7, dev) == VALUE
        assert beacon.connections == 1 and b"Host: beacon.test:" in beacon.requests[0]
        # Even so, a name answered with an internal address is not reached.
        with pytest.raises(FetchRefused, match="private"):
            dev.get_json(f"http://inside.test:{beacon.port}/public/7")


def test_plain_http_reaches_nothing_but_this_machine_even_with_the_setting() -> None:
    with DnsStandIn({"public.test": "8.8.8.8"}) as dns:
        dev = Outbound(allow_loopback=True, resolver=dns.address, deadline=1.0)
        with pytest.raises(FetchRefused, match="http"):
            dev.get_json("http://public.test/public/7")


def test_a_redirect_is_not_followed() -> None:
    with HttpStandIn(http_answer("200 OK", json.dumps(ROUND).encode())) as target:
        moved = http_answer("302 Found", b"", f"Location: {target.url}/public/7\r\n")
        with HttpStandIn(moved) as mover:
            dev = Outbound(allow_loopback=True)
            with pytest.raises(FetchFailed, match="302"):
                dev.get_json(f"{mover.url}/public/7")
            assert target.connections == 0


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({**ROUND, "pad": "x" * 70_000}).encode(),  # over the size bound
        json.dumps({**ROUND, "randomness": "ab" * 100}).encode(),  # a value too long to publish
        json.dumps({**ROUND, "randomness": "zz" * 32}).encode(),  # not hex
        json.dumps({**ROUND, "round": 8}).encode(),  # another round
        json.dumps([ROUND]).encode(),  # another shape
        b"<html>not json</html>",
    ],
)
def test_an_answer_out_of_bounds_gives_no_value(body: bytes) -> None:
    with HttpStandIn(http_answer("200 OK", body)) as server:
        assert fetch_randomness(server.url, 7, Outbound(allow_loopback=True)) is None
        assert server.connections == 1


def test_the_deadline_is_for_the_whole_fetch_not_each_read() -> None:
    trickled = http_answer("200 OK", json.dumps(ROUND).encode())
    with HttpStandIn(trickled, trickle=True) as server:
        began = time.monotonic()
        with pytest.raises(FetchFailed, match="deadline"):
            Outbound(allow_loopback=True, deadline=1.5).get_json(server.url + "/public/7")
        assert time.monotonic() - began < 2.5  # bytes kept coming, one a second


def test_a_slow_name_server_is_waited_for_until_the_deadline_only() -> None:
    with DnsStandIn({"beacon.test": "127.0.0.1"}, delay=10.0) as dns:
        began = time.monotonic()
        with pytest.raises(FetchFailed, match="deadline"):
            Outbound(allow_loopback=True, resolver=dns.address, deadline=1.0).get_json(
                "http://beacon.test/public/7"
            )
        assert time.monotonic() - began < 2.0 and dns.asked == ["beacon.test"]


def test_the_system_resolver_answers_from_an_os_thread() -> None:
    # localhost from /etc/hosts: the path a service without a resolver setting takes.
    addresses = Outbound(allow_loopback=True).resolve("localhost", time.monotonic() + 2)
    assert any(a.is_loopback for a in addresses)


def test_a_room_whose_beacon_resolves_inside_waits_and_its_beacon_is_never_reached(
    engine: Engine, beacon: HttpStandIn
) -> None:
    from helpers import make_room

    with DnsStandIn({"beacon.test": "127.0.0.1"}) as dns:
        outbound_fetch.set_policy(Outbound(resolver=dns.address))  # strict, as in production
        url = f"https://beacon.test:{beacon.port}"
        room = make_room(engine, drawBeacon={"url": url, "genesisTime": GENESIS, "period": PERIOD})
        engine.set_clock(room, 1_800_000_000_000)
        engine.open(room, 1_800_000_060_000)
        engine.enter(room, "v", "s", 10)
        engine.shift_clock(room, 60_000)
        assert engine.tick(room).draw_due
        assert engine.get_room(room)["draw"]["waiting"].startswith("waiting for beacon")
        assert beacon.connections == 0


def test_the_outbound_settings_are_read_and_a_resolver_must_be_an_address() -> None:
    read = Settings.from_env(
        {"ANTEROOM_OUTBOUND_ALLOW_LOOPBACK": "1", "ANTEROOM_OUTBOUND_RESOLVER": "127.0.0.1:5353"}
    )
    assert read.outbound_allow_loopback is True and read.outbound_resolver == "127.0.0.1:5353"
    assert Settings.from_env({}).outbound_allow_loopback is False
    for bad in ("dns.example:53", "127.0.0.1", "127.0.0.1:99999"):
        with pytest.raises(ValueError, match="ANTEROOM_OUTBOUND_RESOLVER"):
            Settings.from_env({"ANTEROOM_OUTBOUND_RESOLVER": bad})


GEVENT_FETCH = """
import os, sys, json
os.environ["GEVENT_RESOLVER"] = "block"  # what anteroom serve sets: lookups block the loop
from gevent import monkey; monkey.patch_all()
from anteroom.queue.draw.outbound_fetch import FetchFailed, Outbound
dev = Outbound(allow_loopback=True, deadline=3)
value = dev.get_json(sys.argv[1] + "/public/7")["randomness"]
try:
    dev.get_json("http://name.invalid/public/7")
    missing = "found"
except FetchFailed as exc:
    missing = str(exc)
print(json.dumps([value, missing]))
"""


def test_a_gevent_worker_resolves_through_the_system_in_an_os_thread(
    beacon: HttpStandIn,
) -> None:
    # As in a worker of anteroom serve: gevent's patch, GEVENT_RESOLVER=block, no resolver
    # setting. The name is looked up in an OS thread; a name not found is a clean failure.
    url = f"http://localhost:{beacon.port}"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "backend")
    done = subprocess.run(
        [sys.executable, "-c", GEVENT_FETCH, url], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    value, missing = json.loads(done.stdout)
    assert value == VALUE and beacon.connections == 1
    assert missing != "found" and "Traceback" not in done.stderr
