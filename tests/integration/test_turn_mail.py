"""Tell me when it's my turn, end to end: a crowd on a live gunicorn server (4 workers, each
with its own e-mail sender) where some visitors leave an address and stop polling while the
others poll; a real SMTP server (aiosmtpd) the test starts receives the e-mails. The line moves
only when the test moves the room's clock (pinned in Redis); nothing sleeps to win a race,
waits are for a condition with a deadline.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
import requests
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.line.parking import Parking
from anteroom.queue.rooms.room_directory import RoomDirectory
from anteroom.queue.rooms.turn_mailer import TurnMailer, retry_delay_ms
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.store.keystore import KeyStore
from anteroom.verify import verify_admission
from helpers import MANAGEMENT_API, TEST_KEYS, free_port, make_room
from live_server import LiveServer, LiveServers
from smtp_server import Inbox, smtp_server
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

LINK = re.compile(r"(http://\S+/return\?t=\S+)")
WINDOW = 300
METRICS_TOKEN = "metrics-token-0123"


def vid_of(queue_token: str) -> str:
    payload = queue_token.split(".")[2]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["vid"])


def eventually(check: Callable[[], bool], within: float = 20.0) -> bool:
    """Whether ``check()`` comes true within ``within`` s (each server's sender wakes every
    second): polling a condition, not waiting out a race."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def smtp() -> Iterator[tuple[str, Inbox]]:
    with smtp_server() as server:
        yield server


@pytest.fixture
def settings(redis_server: EmbeddedRedis, tmp_path: Path, smtp: tuple[str, Inbox]) -> Settings:
    """The Flask app's settings (tests/conftest.py's) with the test's SMTP server: its own
    sender thread, started by its first request, sends as every process's does."""
    return Settings(
        redis_url=redis_server.url, keys=TEST_KEYS, pow_difficulty=4, data_dir=str(tmp_path),
        smtp_url=smtp[0], smtp_from="q@shop.example", public_url="http://localhost",
    )  # fmt: skip


@pytest.fixture
def stack(
    live_server: LiveServers, redis_client: redis.Redis, smtp: tuple[str, Inbox]
) -> tuple[LiveServer, Engine, str]:
    live = live_server(
        ANTEROOM_SMTP_URL=smtp[0],
        ANTEROOM_SMTP_FROM="queue@shop.example",
        ANTEROOM_METRICS_TOKEN=METRICS_TOKEN,
    )
    engine = Engine(redis_client)
    api_key = KeyStore(redis_client, engine.keys).create("web")[0].public_key
    return live, engine, api_key


def pinned_room(engine: Engine, live: LiveServer, **config: Any) -> tuple[str, str]:
    slug = "drop-" + secrets.token_hex(4)
    cfg = {"ratePerMinute": 60, "redirectUrl": f"{live.url}/healthz?from=queue"} | config
    room = make_room(engine, env="web", slug=slug, **cfg)
    engine.set_clock(room, engine.stats(room).now_ms)  # the line moves when the test says
    engine.open(room)
    return room, slug


def token_of(link: str) -> str:
    """The return link's token (its ``t``)."""
    return parse_qs(urlsplit(link).query)["t"][0]


def go(link: str) -> requests.Response:
    """The return page's button: a POST of the link's token to the link."""
    return requests.post(link, data={"t": token_of(link)}, allow_redirects=False, timeout=10)


def notify(visitor: Visitor, email: Any) -> Any:
    return visitor.post(
        "queue/notify", {"apiKey": visitor.api_key, "queueToken": visitor.ticket, "email": email}
    )


def test_a_crowd_parks_and_polls_each_parked_visitor_is_mailed_once_at_its_turn(
    stack: tuple[LiveServer, Engine, str], smtp: tuple[str, Inbox]
) -> None:
    live, engine, api_key = stack
    inbox = smtp[1]
    room, slug = pinned_room(engine, live, notify=True, returnWindowSec=WINDOW)
    crowd = [Visitor(live.url, api_key) for _ in range(12)]
    for visitor in crowd:  # entered in this order: their tickets say so
        assert visitor.enter(slug).json["status"] == "waiting"
    parked = crowd[::2]
    pollers = [v for v in crowd if v not in parked]
    vids = {vid_of(v.ticket or ""): i for i, v in enumerate(crowd)}
    with ThreadPoolExecutor(len(crowd)) as pool:
        answers = list(pool.map(lambda v: notify(v, f"v{crowd.index(v)}@example.com"), parked))
        assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
        assert all("@" not in a.text for a in answers)  # the address is in no answer
        for step in range(len(crowd)):
            engine.shift_clock(room, 1_000)  # one admission earned a second
            engine.tick(room)
            # pollers poll concurrently while the parked ones are silent
            list(pool.map(lambda v: v.poll(), pollers))
            admitted = step + 1
            want = sum(1 for v in parked if crowd.index(v) < admitted)
            assert eventually(lambda want=want: inbox.count() >= want), (step, inbox.count())
    # Order kept: each admitted in its arrival order, parked or not.
    dealt = {}
    for vid, i in vids.items():
        answer = engine.poll(room, vid, i + 1, 1)
        assert answer.status == "admitted" and answer.admission is not None, (vid, answer)
        dealt[i] = answer.admission.deal_number
    assert [dealt[i] for i in range(len(crowd))] == sorted(dealt.values())
    # Each parked visitor had one e-mail, none of the pollers; every address is deleted.
    for i, visitor in enumerate(crowd):
        expected = 1 if visitor in parked else 0
        assert len(inbox.to(f"v{i}@example.com")) == expected, i
    mail = engine.redis.hgetall(engine.keys.room_keys(room)["mail"])
    assert not [f for f in mail if f.startswith("a:")] and "@" not in "".join(mail.values())
    # The link admits once, from another device (a fresh client, no cookie, no token).
    first = inbox.to("v0@example.com")[0]
    link = LINK.search(first.get_content())
    assert link, first.get_content()
    # Opening it spends nothing (a mail scanner fetches the links of an e-mail first): its
    # page has one button, which does.
    for _ in range(2):
        page = requests.get(link.group(1), allow_redirects=False, timeout=10)
        assert page.status_code == 200 and 'data-return="ready"' in page.text, page.text
        assert '<form method="post">' in page.text and page.headers["X-Robots-Tag"] == "noindex"
    opened = go(link.group(1))
    assert opened.status_code == 303, opened.text
    target = opened.headers["Location"]
    assert target.startswith(f"{live.url}/healthz?from=queue&abq=ab1.")
    token = target.split("abq=", 1)[1]
    assert verify_admission(requests.utils.unquote(token), TEST_KEYS, room=slug).valid
    again = go(link.group(1))
    assert again.status_code == 410 and 'data-return="used"' in again.text
    assert f"/queue/{slug}?key={api_key}" in again.text  # offers the line again
    # Another's link, opened after its window: late, and the line offered again.
    engine.shift_clock(room, (WINDOW + 1) * 1000)
    late_link = LINK.search(inbox.to("v2@example.com")[0].get_content())
    assert late_link
    late = go(late_link.group(1))
    assert late.status_code == 410 and 'data-return="late"' in late.text
    forged = requests.get(late_link.group(1)[:-3] + "xyz", allow_redirects=False, timeout=10)
    assert forged.status_code == 400 and 'data-return="invalid"' in forged.text
    assert "<form" not in forged.text
    assert go(late_link.group(1)[:-3] + "xyz").status_code == 400
    # No address, nor a return link's token, in the server's log.
    log = live.output(10_000)
    assert "@example.com" not in log and "rl1." not in log
    for visitor in crowd:
        visitor.close()


def test_a_refused_send_is_retried_after_its_backoff_and_counted(
    stack: tuple[LiveServer, Engine, str], smtp: tuple[str, Inbox]
) -> None:
    live, engine, api_key = stack
    inbox = smtp[1]
    inbox.refuse_next = 1
    room, slug = pinned_room(engine, live, notify=True)
    with Visitor(live.url, api_key) as visitor:
        assert visitor.enter(slug).json["status"] == "waiting"
        assert notify(visitor, "late.riser@example.com").status_code == 200
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    assert eventually(lambda: inbox.refused == 1)
    counts = lambda: engine.redis.hmget(engine.keys.room(room), ["nmfail", "nmsent"])  # noqa: E731
    assert eventually(lambda: counts() == ["1", None])
    assert inbox.count() == 0
    engine.shift_clock(room, retry_delay_ms(1))  # its backoff, on the room's clock
    assert eventually(lambda: inbox.count() == 1)
    assert eventually(lambda: counts() == ["1", "1"])
    auth = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    metrics = requests.get(f"{live.url}/metrics", headers=auth, timeout=10).text
    assert re.search(rf'anteroom_notify_failed_total{{[^}}]*room="{room}"[^}}]*}} 1\.0', metrics)
    assert re.search(rf'anteroom_notify_sent_total{{[^}}]*room="{room}"[^}}]*}} 1\.0', metrics)
    assert "late.riser" not in live.output(10_000)
    # The room's page in the console reads them from the management API.
    _, secret = KeyStore(engine.redis, engine.keys).create("web")
    detail = requests.get(
        f"{live.url}{MANAGEMENT_API}/queues/{room}",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=10,
    ).json()
    mail = detail["turnMail"]
    assert (mail["sent"], mail["failed"], mail["givenUp"], mail["parked"]) == (1, 1, 0, 0)
    assert mail["lastFailure"]["what"] == "SMTPDataError 451"


def test_an_unreachable_server_is_retried_with_backoff_then_given_up(
    engine: Engine, redis_client: redis.Redis
) -> None:
    """The sender alone (as each process runs it), against a port nobody listens on."""
    room = make_room(engine, env="web", slug="unreachable", notify=True, ratePerMinute=60)
    engine.set_clock(room, 1_800_000_000_000)
    engine.open(room)
    parking = Parking(engine)
    ticket = engine.enter(room, "v", "s", 10).ticket or 0
    assert parking.park(room, "v", ticket, 1, "v@example.com", "pk") == "ok"
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", free_port()))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        directory = RoomDirectory(redis_client, engine.keys, Breaker(), None)
        directory.refresh_once()
        mailer = TurnMailer(
            parking, directory, tokens.Keyring.parse(TEST_KEYS),
            smtp_url=f"smtp://127.0.0.1:{port}", sender="q@shop.example",
            base_url="https://queue.example",
        )  # fmt: skip
        delays = []
        for attempt in range(1, 6):
            assert mailer.step() == 0
            failed = int(engine.redis.hget(engine.keys.room(room), "nmfail") or 0)
            assert failed == attempt
            delays.append(retry_delay_ms(attempt))
            assert mailer.step() == 0  # not due again before its backoff
            assert int(engine.redis.hget(engine.keys.room(room), "nmfail") or 0) == attempt
            engine.shift_clock(room, retry_delay_ms(attempt))
        assert engine.redis.hget(engine.keys.room(room), "nmlost") == "1"
        assert delays == [5_000, 10_000, 20_000, 40_000, 80_000]
        last = engine.redis.hget(engine.keys.room(room), "nmerr") or ""
        assert "ConnectionRefusedError" in last and "@" not in last
        assert "a:v" not in engine.redis.hgetall(engine.keys.room_keys(room)["mail"])


def test_a_bad_address_or_a_room_without_the_offer_is_refused_and_changes_nothing(
    client: FlaskClient, engine: Engine, redis_client: redis.Redis
) -> None:
    api_key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    offered = make_room(engine, slug="offered", notify=True, ratePerMinute=1)
    plain = make_room(engine, slug="plain", ratePerMinute=1)
    for room in (offered, plain):
        engine.open(room)
        engine.enter(room, "ahead", "s", 10)  # a line, so the visitors wait
    visitor, other = Visitor(client, api_key), Visitor(client, api_key)
    assert visitor.enter("offered").json["status"] == "waiting"
    assert other.enter("plain").json["status"] == "waiting"
    before = visitor.poll().json["position"]
    for bad in ("not an address", "a@b", "x@example.com\r\nBcc: y@evil.example", 7, None):
        answer = notify(visitor, bad)
        assert answer.status_code == 400, answer.text
        assert answer.json["error"] == "BadRequest" and "email" in answer.json["fields"]
    missing = visitor.post("queue/notify", {"apiKey": api_key, "queueToken": visitor.ticket})
    assert missing.status_code == 400 and "email" in missing.json["fields"]
    assert engine.redis.zcard(engine.keys.room_keys(offered)["park"]) == 0
    assert visitor.poll().json["position"] == before
    off = notify(other, "ok@example.com")
    assert off.status_code == 403 and off.json["error"] == "NotifyOff"
    assert not engine.redis.exists(engine.keys.room_keys(plain)["mail"])
    ok = notify(visitor, "ok@example.com")
    assert ok.status_code == 200 and ok.json == {
        "status": "parked", "room": "offered", "returnWindowSec": 900
    }  # fmt: skip


def test_a_bind_ip_room_s_return_admission_stays_bound_to_the_entering_network(
    client: FlaskClient,
    services: Services,
    engine: Engine,
    redis_client: redis.Redis,
    smtp: tuple[str, Inbox],
) -> None:
    """The link works on any device, but the admission it gives is signed as every admission
    of a bindIp room is: bound to the network the spot entered from."""
    inbox = smtp[1]
    api_key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    room = make_room(engine, slug="bound", notify=True, bindIp=True, ratePerMinute=60)
    engine.set_clock(room, 1_800_000_000_000)
    engine.open(room)
    visitor = Visitor(client, api_key, address="198.51.100.7")
    assert visitor.enter("bound").json["status"] == "waiting"
    assert notify(visitor, "roamer@example.com").status_code == 200
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    services.directory.refresh_once()
    services.mailer.step()  # (or the app's own sender thread: one of the two sends it)
    assert eventually(lambda: len(inbox.to("roamer@example.com")) == 1)
    link = LINK.search(inbox.to("roamer@example.com")[0].get_content())
    assert link
    path = link.group(1).removeprefix("http://localhost")
    opened = client.post(
        path, data={"t": token_of(path)}, environ_base={"REMOTE_ADDR": "192.0.2.99"}
    )  # another network
    assert opened.status_code == 303
    token = requests.utils.unquote(opened.headers["Location"].split("abq=", 1)[1])
    elsewhere = verify_admission(token, TEST_KEYS, room="bound", client_ip="192.0.2.99")
    assert not elsewhere.valid and elsewhere.reason == "ip-mismatch"
    assert verify_admission(token, TEST_KEYS, room="bound", client_ip="198.51.100.7").valid


def test_turning_the_offer_off_strands_nobody_already_parked(
    services: Services, engine: Engine, smtp: tuple[str, Inbox]
) -> None:
    inbox = smtp[1]
    room = make_room(engine, slug="was-offered", notify=True, ratePerMinute=60)
    engine.set_clock(room, 1_800_000_000_000)
    engine.open(room)
    ticket = engine.enter(room, "v", "s", 10).ticket or 0
    assert services.parking.park(room, "v", ticket, 1, "v@example.com", "pk") == "ok"
    engine.update_room(room, {"notify": False})
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    services.directory.refresh_once()
    mailer = services.mailer  # (no request was made: its thread never started)
    assert [r["id"] for r in mailer.notify_rooms()] == [room]
    assert mailer.step() == 1
    assert len(inbox.to("v@example.com")) == 1
    # its turn is kept for its return link until the window ends, then deleted; the room,
    # with nothing parked nor due, is no longer read
    assert mailer.notify_rooms() != []
    engine.shift_clock(room, 900_000)
    assert mailer.step() == 0
    assert mailer.notify_rooms() == []


def test_the_e_mail_and_the_return_page_speak_the_visitor_s_language(
    client: FlaskClient,
    services: Services,
    engine: Engine,
    redis_client: redis.Redis,
    smtp: tuple[str, Inbox],
) -> None:
    inbox = smtp[1]
    api_key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    room = make_room(engine, slug="sprachen", notify=True, ratePerMinute=60, returnWindowSec=600)
    engine.set_clock(room, 1_800_000_000_000)
    engine.open(room)
    visitor = Visitor(client, api_key)
    assert visitor.enter("sprachen").json["status"] == "waiting"
    body = {"apiKey": api_key, "queueToken": visitor.ticket, "email": "ute@example.com"}
    wrong = visitor.post("queue/notify", body | {"lang": "xx"})
    assert wrong.status_code == 400 and "lang" in wrong.json["fields"]
    assert visitor.post("queue/notify", body | {"lang": "de"}).status_code == 200
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    services.directory.refresh_once()
    services.mailer.step()  # (or the app's own sender thread)
    assert eventually(lambda: len(inbox.to("ute@example.com")) == 1)
    mail = inbox.to("ute@example.com")[0]
    assert mail["Subject"] == "Sie sind an der Reihe: Spring drop"
    assert "innerhalb von 10 Minuten" in mail.get_content()
    link = LINK.search(mail.get_content())
    assert link and link.group(1).endswith("&lang=de")
    path = link.group(1).removeprefix("http://localhost")
    page = client.get(path)
    assert page.status_code == 200 and "Jetzt eintreten" in page.get_data(as_text=True)
    assert client.post(path, data={"t": token_of(path)}).status_code == 303
    again = client.post(path, data={"t": token_of(path)})
    assert again.status_code == 410
    assert "Dieser Link wurde bereits benutzt" in again.get_data(as_text=True)
    assert "l:" not in "".join(engine.redis.hkeys(engine.keys.room_keys(room)["mail"]))


def test_without_an_smtp_server_each_try_fails_and_says_why(
    services: Services, engine: Engine
) -> None:
    room = make_room(engine, slug="no-smtp", notify=True, ratePerMinute=60)
    engine.set_clock(room, 1_800_000_000_000)
    engine.open(room)
    ticket = engine.enter(room, "v", "s", 10).ticket or 0
    services.parking.park(room, "v", ticket, 1, "v@example.com", "pk")
    engine.shift_clock(room, 1_000)
    engine.tick(room)
    services.directory.refresh_once()
    mailer = TurnMailer(
        services.parking,
        services.directory,
        services.keyring,
        smtp_url="",
        sender="q@shop.example",
        base_url="http://localhost",
    )  # fmt: skip (no request was made: the app's own sender never started)
    assert mailer.step() == 0
    raw = engine.redis.hmget(engine.keys.room(room), ["nmfail", "nmerr"])
    assert raw[0] == "1" and raw[1].endswith("no SMTP server (ANTEROOM_SMTP_URL)")
