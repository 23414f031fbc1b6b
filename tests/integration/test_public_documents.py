"""A draw's public documents cost their size once (issue 32 item 4): ``fairness.json`` and its
entrant list are built once per draw (or change) per process, served with a strong ETag (304 on
a match), Cache-Control (immutable only where nothing can change), gzip when asked, HEAD without
a body, and a per-address limit. Through the real app and a real Redis; several processes'
agreement through two apps (each its own documents) and a live gunicorn server."""

from __future__ import annotations

import gzip
import http.client
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient

import anteroom
from anteroom.config import Settings
from anteroom.engine import Engine
from anteroom.service_container import Services
from anteroom.store.keystore import KeyStore
from anteroom.web import app_factory
from helpers import make_room
from live_server import LiveServers

pytestmark = pytest.mark.redis

MINUTE = 60_000
START = 1_800_000_000_000
ENTRANTS = 300


def drawn(engine: Engine, entrants: int = ENTRANTS, slug: str = "drop") -> str:
    """A room whose opening was scheduled, entered by ``entrants`` and drawn; its id."""
    room = make_room(engine, slug=slug, maxWaiting=100_000)
    engine.set_clock(room, START)
    engine.open(room, START + MINUTE)
    for i in range(entrants):
        engine.enter(room, f"v{i}", "s", 10)
    engine.shift_clock(room, MINUTE)
    assert engine.tick(room).draw_due  # the tick made the draw
    return room


@pytest.fixture
def public_key(services: Services) -> str:
    return services.keystore.create("test")[0].public_key


@pytest.fixture
def second_app(settings: Settings, redis_client: redis.Redis) -> Iterator[Flask]:
    """Another process's app on the same Redis: its own documents, built on its own."""
    app = app_factory.create_app(settings, {"TESTING": True})
    yield app
    app_factory.close_app(app)


def urls(client: FlaskClient, key: str, slug: str = "drop") -> tuple[str, str, str]:
    """fairness.json, the list it links (naming its draw) and the list's plain URL."""
    document = f"/queue/{slug}/fairness.json?key={key}"
    linked = f"/queue/{slug}/" + client.get(document).json["entrantsUrl"]
    return document, linked, f"/queue/{slug}/fairness/entrants.json?key={key}"


def test_both_documents_carry_a_strong_etag_every_process_agrees_on_and_answer_304(
    client: FlaskClient, second_app: Flask, services: Services, public_key: str
) -> None:
    drawn(services.engine)
    other = second_app.test_client()
    for url in urls(client, public_key):
        first, again, elsewhere = client.get(url), client.get(url), other.get(url)
        assert first.status_code == 200 and first.json
        tag = first.headers["ETag"]
        assert tag.startswith('"') and not tag.startswith("W/")  # strong
        assert again.headers["ETag"] == elsewhere.headers["ETag"] == tag
        assert elsewhere.data == first.data
        for asker in (client, other):
            unchanged = asker.get(url, headers={"If-None-Match": tag})
            assert unchanged.status_code == 304 and unchanged.data == b""
            assert unchanged.headers["ETag"] == tag
            assert unchanged.headers["Cache-Control"] == first.headers["Cache-Control"]
        stale = client.get(url, headers={"If-None-Match": '"something-else"'})
        assert stale.status_code == 200 and stale.data == first.data


def test_the_etag_changes_when_the_document_does(
    client: FlaskClient, services: Services, public_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anteroom.web.pages import fairness

    now = [1_000.0]
    monkeypatch.setattr(fairness, "clock", lambda: now[0], raising=False)
    engine = services.engine
    room = make_room(engine, maxWaiting=100_000, ratePerMinute=600)
    engine.set_clock(room, START)
    engine.open(room, START + MINUTE)
    tickets = {f"v{i}": engine.enter(room, f"v{i}", "s", 10).ticket for i in range(20)}
    document = f"/queue/drop/fairness.json?key={public_key}"
    committed = client.get(document).headers["ETag"]
    engine.shift_clock(room, MINUTE)
    engine.tick(room)
    revealed = client.get(document)
    assert revealed.json["seed"] is not None  # at once, in this process and any other
    assert revealed.headers["ETag"] != committed
    # Its figures move as the room admits: a new document, at most a second later.
    engine.shift_clock(room, 2_000)
    for vid, ticket in tickets.items():
        engine.poll(room, vid, ticket or 0, 1)
    now[0] += 1.5
    admitted = client.get(document)
    assert admitted.json["admittedFromPreQueue"] > revealed.json["admittedFromPreQueue"]
    assert admitted.headers["ETag"] != revealed.headers["ETag"]
    # A new opening's draw: a new list, a new tag; the old draw's URL is gone.
    _, old_list, plain = urls(client, public_key)
    before = client.get(plain).headers["ETag"]
    engine.close(room)
    engine.open(room, engine.stats(room).now_ms + MINUTE)
    for i in range(5):
        engine.enter(room, f"w{i}", "s", 10)
    engine.shift_clock(room, MINUTE)
    engine.tick(room)
    after = client.get(plain)
    assert after.status_code == 200 and len(after.json) == 5
    assert after.headers["ETag"] != before
    assert client.get(old_list).status_code == 404


def test_gzip_when_asked_is_the_same_document(
    client: FlaskClient, services: Services, public_key: str
) -> None:
    drawn(services.engine)
    for url in urls(client, public_key):
        plain = client.get(url)
        packed = client.get(url, headers={"Accept-Encoding": "gzip, deflate, br"})
        assert "Content-Encoding" not in plain.headers
        assert packed.headers["Content-Encoding"] == "gzip"
        assert "Accept-Encoding" in packed.headers["Vary"]
        assert "Accept-Encoding" in plain.headers["Vary"]
        assert gzip.decompress(packed.data) == plain.data
        assert int(packed.headers["Content-Length"]) == len(packed.data)
        # Another representation, another strong tag; each answers 304 to its own.
        assert packed.headers["ETag"] != plain.headers["ETag"]
        again = client.get(
            url, headers={"Accept-Encoding": "gzip", "If-None-Match": packed.headers["ETag"]}
        )
        assert again.status_code == 304
        refused = client.get(url, headers={"Accept-Encoding": "gzip;q=0"})
        assert "Content-Encoding" not in refused.headers and refused.data == plain.data


def test_head_has_the_headers_and_no_body_and_the_list_is_read_once(
    client: FlaskClient, services: Services, public_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = drawn(services.engine)
    reads: list[str] = []
    original = services.engine.drawn_entrants

    def counted(room_id: str) -> list[str]:
        reads.append(room_id)
        return original(room_id)

    monkeypatch.setattr(services.engine, "drawn_entrants", counted)
    for url in urls(client, public_key):
        got = client.get(url)
        for encoding in ("", "gzip"):
            head = client.head(url, headers={"Accept-Encoding": encoding})
            full = client.get(url, headers={"Accept-Encoding": encoding})
            assert head.status_code == 200 and head.data == b""
            for name in ("ETag", "Cache-Control", "Content-Length", "Content-Type", "Vary"):
                assert head.headers.get(name) == full.headers.get(name), name
        assert got.status_code == 200
    # Nine answers of the list: it was read from Redis once (this process, this draw).
    assert reads == [room]


def test_only_a_drawn_lists_own_url_is_immutable(
    client: FlaskClient, services: Services, public_key: str
) -> None:
    engine = services.engine
    room = make_room(engine)
    engine.set_clock(room, START)
    engine.open(room, START + MINUTE)
    engine.enter(room, "v0", "s", 10)
    document_url = f"/queue/drop/fairness.json?key={public_key}"
    before = client.get(document_url)
    assert "immutable" not in before.headers["Cache-Control"]
    assert "no-cache" in before.headers["Cache-Control"]  # the seed may appear at any moment
    engine.shift_clock(room, MINUTE)
    engine.tick(room)
    document, linked, plain = urls(client, public_key)
    # The document's figures keep moving while the room admits: revalidated each time.
    assert "immutable" not in client.get(document).headers["Cache-Control"]
    # The list of this draw, named by its root, never changes: immutable, cacheable a year.
    root = client.get(document).json["root"]
    assert f"root={root}" in linked
    cached = client.get(linked).headers["Cache-Control"]
    assert "immutable" in cached and "public" in cached and "max-age=31536000" in cached
    # The room's plain list URL names whatever its latest draw is: revalidated.
    assert "immutable" not in client.get(plain).headers["Cache-Control"]


@pytest.fixture
def limited(settings: Settings, redis_client: redis.Redis) -> Iterator[Flask]:
    app = app_factory.create_app(
        settings.with_overrides(limit_fairness="3/minute"), {"TESTING": True}
    )
    yield app
    app_factory.close_app(app)


def test_an_address_over_its_limit_is_told_to_wait(limited: Flask) -> None:
    services: Services = limited.extensions["anteroom"]
    key = services.keystore.create("test")[0].public_key
    drawn(services.engine)
    client = limited.test_client()
    url = f"/queue/drop/fairness/entrants.json?key={key}"

    def get(address: str, path: str = url, method: str = "GET") -> Any:
        return client.open(path, method=method, environ_base={"REMOTE_ADDR": address})

    assert [get("192.0.2.1").status_code for _ in range(3)] == [200, 200, 200]
    for answer in (get("192.0.2.1"), get("192.0.2.1", f"/queue/drop/fairness.json?key={key}")):
        assert answer.status_code == 429
        assert answer.json["error"] == "RateLimited"
        assert int(answer.headers["Retry-After"]) >= 1
    assert get("192.0.2.1", method="HEAD").status_code == 429
    assert get("192.0.2.2").status_code == 200  # another address keeps its own


@pytest.mark.slow
def test_a_live_server_answers_the_same_tags_from_every_worker(
    live_server: LiveServers, redis_client: redis.Redis
) -> None:
    engine = Engine(redis_client)
    key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    drawn(engine, 2_000)
    server = live_server(PYTHONPATH=str(Path(anteroom.__file__).parents[1]))
    host = server.url.removeprefix("http://")

    def fetch(method: str, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(host, timeout=10)  # a new one: any worker
        try:
            connection.request(method, path, headers=headers)
            answer = connection.getresponse()
            return answer.status, dict(answer.getheaders()), answer.read()
        finally:
            connection.close()

    path = f"/queue/drop/fairness/entrants.json?key={key}"
    tags = {fetch("GET", path)[1]["ETag"] for _ in range(8)}
    packed = {fetch("GET", path, **{"Accept-Encoding": "gzip"})[1]["ETag"] for _ in range(8)}
    assert len(tags) == len(packed) == 1 and tags != packed
    (tag,) = tags
    status, headers, body = fetch("GET", path)
    assert status == 200 and len(body) == int(headers["Content-Length"])
    status, head_headers, head_body = fetch("HEAD", path)
    assert status == 200 and head_body == b""
    assert head_headers["Content-Length"] == headers["Content-Length"]
    assert all(fetch("GET", path, **{"If-None-Match": tag})[0] == 304 for _ in range(6))


def test_full_answers_are_held_to_the_process_egress_budget(
    client: FlaskClient, services: Services, public_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many addresses, each under its limit, cannot have a worker copy the list without end:
    past the process's bytes a second a full answer is 429 Busy; 304s and HEADs go on."""
    from anteroom.web.pages import fairness, public_documents

    now = [1_000.0]
    monkeypatch.setattr(fairness, "clock", lambda: now[0])
    drawn(services.engine)
    _, _, url = urls(client, public_key)
    size = len(client.get(url).data)  # the list's bytes (before the budget below is set)
    # A fresh process's documents, their budget a second's worth of one list (a burst of two).
    client.application.extensions[fairness.EXTENSION] = public_documents.DocumentCache(size)
    sources = [f"192.0.2.{n}" for n in range(1, 5)]  # every one under its own limit
    answers = [client.get(url, environ_base={"REMOTE_ADDR": a}) for a in sources]
    assert [a.status_code for a in answers] == [200, 200, 429, 429]
    busy = answers[2]
    assert busy.json["error"] == "Busy" and int(busy.headers["Retry-After"]) >= 1
    tag = answers[0].headers["ETag"]
    assert client.get(url, headers={"If-None-Match": tag}).status_code == 304
    assert client.head(url).status_code == 200
    now[0] += 1.0  # a second's bytes again
    assert client.get(url).status_code == 200
    assert client.get(url).status_code == 429


def test_the_common_answers_skip_the_request_cycle_and_are_the_views_own(
    app: Flask, client: FlaskClient, services: Services, public_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A built document's GET, gzip, HEAD and 304 are answered before Flask
    (web/pages/public_front.py)
    with the views' very status, headers and body; anything unusual is still the views'."""
    from flask import request

    from anteroom.web.pages import fairness, public_front

    cycles: list[str] = []
    app.before_request(lambda: cycles.append(request.full_path))
    monkeypatch.setattr(fairness, "clock", lambda: 1_000.0)  # the report's figures stay fresh
    drawn(services.engine)
    paths = urls(client, public_key)
    for path in paths:
        assert client.get(path).status_code == 200  # each built in this process
    cycles.clear()

    def asked() -> list[tuple[int, list[tuple[str, str]], bytes]]:
        out = []
        for path in paths:
            for encoding in ("", "gzip"):
                full = client.get(path, headers={"Accept-Encoding": encoding})
                tag = full.headers["ETag"]
                for answer in (
                    full,
                    client.head(path, headers={"Accept-Encoding": encoding}),
                    client.get(path, headers={"Accept-Encoding": encoding, "If-None-Match": tag}),
                    client.get(path, headers={"Accept-Encoding": encoding, "If-None-Match": '"x"'}),
                ):
                    out.append((answer.status_code, sorted(answer.headers.items()), answer.data))
        return out

    fronted = asked()
    assert cycles == []
    assert {code for code, _, _ in fronted} == {200, 304}
    monkeypatch.setattr(public_front, "route_of", lambda path: None)  # every request to Flask
    assert asked() == fronted
    assert len(cycles) == len(fronted)
    monkeypatch.undo()
    monkeypatch.setattr(fairness, "clock", lambda: 1_000.0)
    cycles.clear()
    plain = paths[2]
    unusual = [
        f"{plain}&limit=5",  # a query the views would read otherwise
        f"/queue/drop/fairness.json?key={public_key}x",  # a key refused: the views word it
        f"/queue/nowhere/fairness.json?key={public_key}",
        f"{plain}&root=00",  # another draw's list: 404 from the views
    ]
    assert [client.get(u).status_code for u in unusual] == [200, 401, 404, 404]
    assert len(cycles) == len(unusual)


def test_a_refusal_over_the_limit_skips_the_request_cycle_and_is_the_views_own(
    limited: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flask import request

    from anteroom.web.pages import public_front

    services: Services = limited.extensions["anteroom"]
    key = services.keystore.create("test")[0].public_key
    drawn(services.engine)
    cycles: list[str] = []
    limited.before_request(lambda: cycles.append(request.full_path))
    client = limited.test_client()
    url = f"/queue/drop/fairness.json?key={key}"

    def get(address: str) -> Any:
        return client.get(url, environ_base={"REMOTE_ADDR": address})

    assert [get("192.0.2.1").status_code for _ in range(3)] == [200, 200, 200]
    assert len(cycles) == 1  # built by the view, then answered before Flask
    fronted = get("192.0.2.1")
    assert fronted.status_code == 429 and len(cycles) == 1
    monkeypatch.setattr(public_front, "route_of", lambda path: None)
    viewed = get("192.0.2.1")
    assert len(cycles) == 2
    assert viewed.status_code == 429 and viewed.data == fronted.data
    assert sorted(viewed.headers.keys()) == sorted(fronted.headers.keys())
    # Counted once each, whichever answered: a new address has its own three.
    monkeypatch.undo()
    assert [get("192.0.2.2").status_code for _ in range(4)] == [200, 200, 200, 429]
