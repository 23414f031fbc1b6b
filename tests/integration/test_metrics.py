"""``/metrics`` read back with prometheus_client's own parser: after real traffic through the app,
and through a real gunicorn with several workers, whose counts must add up."""

from __future__ import annotations

import http.client
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from anteroom.config import Settings
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.service_container import Services
from anteroom.web.app_factory import close_app, create_app
from helpers import TEST_KEYS, free_port, make_room, open_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis


def samples(text: str) -> list[Any]:
    """Every sample of the exposition text, as the parser reads it."""
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(found: Iterable[Any], name: str, **labels: str) -> float:
    """The sum of the samples named ``name`` whose labels include ``labels``."""
    return sum(
        s.value for s in found if s.name == name and labels.items() <= s.labels.items()
    )  # fmt: skip


TOKEN = "scrape-token-1"  # the metrics token of this module's apps: /metrics is not public


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.with_overrides(metrics_token=TOKEN)


def scrape(client: FlaskClient, **headers: str) -> list[Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"} | headers
    answer = client.get("/metrics", headers=headers)
    assert answer.status_code == 200, answer.data
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples(answer.get_data(as_text=True))


def test_counts_routes_answers_refusals_and_room_gauges(
    client: FlaskClient, services: Services
) -> None:
    record, _ = services.keystore.create("shop")
    room = open_room(services.engine, env="shop", slug="drop", ratePerMinute=60, capacity=7)
    services.directory.refresh_once()
    before = scrape(client)  # counters are per process: this test reads what it added
    for _ in range(3):
        assert client.get("/healthz").status_code == 200
    people = [Visitor(client, record.public_key) for _ in range(3)]
    for person in people:
        person.identify()
        assert person.enter("drop").status_code == 200
    robot = Visitor(client, record.public_key)
    robot.identify(signals={"webdriver": True, "languages": 2})
    assert robot.enter("drop").status_code == 403
    client.application.extensions["anteroom_room_gauges"].ttl = 0.0  # the interval has passed
    found = scrape(client)

    def added(name: str, **labels: str) -> float:
        return value(found, name, **labels) - value(before, name, **labels)

    assert added("anteroom_http_requests_total", route="/healthz", status="200") == 3
    assert added("anteroom_http_requests_total", route="/api/v1/queue/enter") == 4
    assert added("anteroom_queue_answers_total") == 3
    assert added("anteroom_queue_answers_total", status="waiting") == 3
    assert added("anteroom_refusals_total", code="QueueDenied") == 1
    duration = "anteroom_http_request_duration_seconds_count"
    assert added(duration, route="/api/v1/queue/enter", method="POST") == 4
    assert value(found, "anteroom_breaker_open") == 0
    gauges = {"room": room, "slug": "drop", "environment": "shop"}
    assert value(found, "anteroom_room_waiting", **gauges) == 3
    assert value(found, "anteroom_room_active", **gauges) == 0
    assert value(found, "anteroom_room_rate_per_minute", **gauges) == 60
    assert value(found, "anteroom_room_capacity", **gauges) == 7
    assert value(found, "anteroom_room_open", **gauges) == 1


def test_room_gauges_read_redis_once_per_interval(client: FlaskClient, app: Flask) -> None:
    services: Services = app.extensions["anteroom"]
    open_room(services.engine, env="shop", slug="drop")
    services.directory.refresh_once()
    gauges = app.extensions["anteroom_room_gauges"]
    for _ in range(5):
        found = scrape(client)
    assert gauges.reads == 1
    # A room without a capacity has no limit: +Inf, never a capacity of 0 (which would read as
    # "nobody may be active" and make active/capacity alerts divide by zero).
    assert value(found, "anteroom_room_capacity", slug="drop") == float("inf")
    gauges.ttl = 0.0  # the interval has passed
    scrape(client)
    assert gauges.reads == 2


def test_a_metrics_token_is_required_when_set(settings: Settings, redis_client: object) -> None:
    app = create_app(settings.with_overrides(metrics_token="s3cret-metrics"), {"TESTING": True})
    client = app.test_client()
    try:
        assert client.get("/metrics").status_code == 401
        wrong = client.get("/metrics", headers={"Authorization": "Bearer s3cret-metricz"})
        assert wrong.status_code == 401 and wrong.json["error"] == "Unauthorized"
        scrape(client, Authorization="Bearer s3cret-metrics")
    finally:
        close_app(app)


def test_metrics_are_not_public_by_default(settings: Settings, redis_client: object) -> None:
    app = create_app(settings.with_overrides(metrics_token=""), {"TESTING": True})
    try:
        answer = app.test_client().get("/metrics")
        assert answer.status_code == 404 and answer.json["error"] == "NotFound"
        assert "ANTEROOM_METRICS_TOKEN" in answer.json["message"]
        assert "ANTEROOM_METRICS_LISTEN" in answer.json["message"]
    finally:
        close_app(app)


def test_the_scrapers_own_address_answers_metrics_alone(live_server: Any) -> None:
    port = free_port()
    server = live_server(ANTEROOM_METRICS_LISTEN=f"127.0.0.1:{port}")
    scraper = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    status, text = get(scraper, "/metrics")  # no token on the scraper's address
    assert status == 200 and value(samples(text), "anteroom_http_requests_total") >= 0
    for path in ("/healthz", "/console", "/api/v1/challenge", "/metrics/", "/METRICS"):
        status, text = get(scraper, path)
        assert status == 404 and "GET /metrics only" in text, (path, text)
    scraper.close()
    # The service's own address does not publish them: no token was set.
    public = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    status, text = get(public, "/metrics")
    assert status == 404 and "not public" in text
    assert get(public, "/healthz")[0] == 200
    public.close()


def test_a_metrics_address_on_the_services_own_port_is_refused() -> None:
    with pytest.raises(ValueError, match="METRICS_LISTEN must be host:port"):
        Settings.from_env({"ANTEROOM_BIND": "127.0.0.1:8000", "ANTEROOM_METRICS_LISTEN": ":8000"})
    with pytest.raises(ValueError, match="METRICS_LISTEN"):
        Settings.from_env({"ANTEROOM_METRICS_LISTEN": "127.0.0.1:8000"})  # the default bind's
    assert Settings.from_env({"ANTEROOM_METRICS_LISTEN": "10.0.0.5:9464"}).metrics_listen


def get(conn: http.client.HTTPConnection, path: str) -> tuple[int, str]:
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read().decode()


def test_workers_add_up_under_gunicorn(live_server: Any) -> None:
    server = live_server(ANTEROOM_WORKERS="2", ANTEROOM_METRICS_TOKEN="tok-1")
    pinned = server.connection_per_worker()
    assert len(pinned) >= 2, "could not reach two workers"
    sent = 0
    for i, conn in enumerate(pinned.values()):
        for _ in range(5 + 3 * i):  # unequal shares: a sum from one worker would show
            assert get(conn, "/healthz")[0] == 200
            sent += 1
        assert get(conn, "/api/management/v1/queues")[0] == 401
    # Whichever worker answers the scrape, it counts every worker's requests.
    for conn in pinned.values():
        conn.request("GET", "/metrics", headers={"Authorization": "Bearer tok-1"})
        response = conn.getresponse()
        assert response.status == 200
        found = samples(response.read().decode())
        healthz = value(found, "anteroom_http_requests_total", route="/healthz", status="200")
        assert healthz == sent
        assert value(found, "anteroom_refusals_total", code="Unauthorized") == len(pinned)
    assert get(next(iter(pinned.values())), "/metrics")[0] == 401
    for conn in pinned.values():
        conn.close()


def test_breaker_and_redis_errors_during_an_outage(tmp_path: Path) -> None:
    own = EmbeddedRedis(tmp_path / "redis", port=free_port()).start()
    try:
        settings = Settings(redis_url=own.url, keys=TEST_KEYS, pow_difficulty=4,
                            data_dir=str(tmp_path), metrics_token=TOKEN)  # fmt: skip
        app = create_app(settings, {"TESTING": True})
        services: Services = app.extensions["anteroom"]
        client = app.test_client()
        record, _ = services.keystore.create("shop")
        room = make_room(services.engine, env="shop", slug="drop", failMode="closed")
        services.engine.open(room)
        waiting = Visitor(client, record.public_key)
        assert waiting.enter("drop").status_code == 200
        before = scrape(client)
        own.stop()
        for _ in range(3):  # three failures in a row: an outage, the breaker opens
            assert waiting.poll().json["error"] == "Unavailable"
        assert waiting.poll().json["error"] == "Unavailable"  # skipped: the breaker is open
        app.extensions["anteroom_room_gauges"].ttl = 0.0  # the scrape interval has passed
        found = scrape(client)  # answered all the same, from what the workers counted
        services.directory.stop()
    finally:
        own.stop()

    def added(name: str, **labels: str) -> float:
        return value(found, name, **labels) - value(before, name, **labels)

    assert value(found, "anteroom_breaker_open") == 1
    assert added("anteroom_breaker_trips_total") == 1
    assert added("anteroom_redis_errors_total", kind="unavailable") == 4
    assert added("anteroom_refusals_total", code="Unavailable") == 4
    assert value(found, "anteroom_room_waiting") == 0  # no figure rather than a stale one


def test_spots_that_left_before_their_turn_are_a_histogram_by_their_wait(
    client: FlaskClient, services: Services
) -> None:
    room = open_room(services.engine, env="shop", slug="drop", capacity=1, admissionTtlSec=3600)
    services.directory.refresh_once()
    services.engine.enter(room, "in", "s0", 10)  # the one slot: the others wait
    waiting = [services.engine.enter(room, f"v{i}", f"s{i}", 10) for i in (1, 2)]
    services.engine.shift_clock(room, 45_000)
    for i, answer in enumerate(waiting, start=1):
        assert services.engine.leave(room, f"v{i}", answer.ticket or 0, answer.generation)
    client.application.extensions["anteroom_room_gauges"].ttl = 0.0
    found = scrape(client)
    name, labels = "anteroom_room_abandoned_wait_seconds_bucket", {"slug": "drop"}
    assert value(found, name, le="30.0", **labels) == 0
    assert value(found, name, le="60.0", **labels) == 2  # cumulative, as Prometheus reads it
    assert value(found, name, le="+Inf", **labels) == 2
    assert value(found, "anteroom_room_unused_admissions_total", **labels) == 0
    services.engine.shift_clock(room, 3_600_000 + 61_000)  # "in" ran out, never renewed
    while not services.engine.sweep(room)[1]:
        pass
    found = scrape(client)
    assert value(found, "anteroom_room_unused_admissions_total", **labels) == 1
