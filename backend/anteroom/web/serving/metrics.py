"""Prometheus ``/metrics`` (issue 14, item 3): what every worker counted, and each room's gauges.

Counters and histograms are kept by ``prometheus_client``; under ``anteroom serve`` in its
multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, which the CLI sets up), so a scrape answered by
any gunicorn worker adds up every worker's. Per-room gauges are not per process: the worker that
answers a scrape reads them from Redis (one pipelined round), at most once per
:data:`ROOM_GAUGES_TTL_SEC`, and serves its cached copy in between.
"""

from __future__ import annotations

import functools
import hmac
import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.line.parking import mail_counts_of
from anteroom.queue.line.room_engine import WAIT_BUCKETS, RoomStats
from anteroom.service_container import Services
from anteroom.web.api import api_routes as routes
from anteroom.web.serving import http_errors as errors

ROOM_GAUGES_TTL_SEC = 10.0
PATH = "/metrics"
# Set in a request's environ by the worker when it came in on ANTEROOM_METRICS_LISTEN.
LISTENER_KEY = "anteroom.metrics_listener"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# The routes answering a queue answer, counted by its status too.
QUEUE_ROUTES = frozenset(r.path for r in routes.ROUTES if r.answers.get(200) is routes.QUEUE_ANSWER)
STORAGE_CODES = {"Unavailable": "unavailable", "Busy": "out_of_memory"}

# Kept in this registry (not the global one), so building several apps in one process is fine;
# in multiprocess mode the values go to the shared folder whatever the registry.
REGISTRY = CollectorRegistry(auto_describe=True)
REQUESTS = Counter(
    "anteroom_http_requests",
    "HTTP requests answered, by route, method and status.",
    ["route", "method", "status"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "anteroom_http_request_duration_seconds",
    "Time to answer, by route and method.",
    ["route", "method"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    registry=REGISTRY,
)
ANSWERS = Counter(
    "anteroom_queue_answers",
    "Queue answers (enter, poll, refresh) by status.",
    ["status"],
    registry=REGISTRY,
)
ADMISSIONS = Counter(
    "anteroom_admissions",
    "Admissions: answers carrying an admission token, and the demo crowd's admitted visitors.",
    registry=REGISTRY,
)
AGENTS = Counter(
    "anteroom_room_agents",
    "Signed agents (Web Bot Auth) at rooms whose agents setting checks them, by outcome: queued "
    "(no proof of work), refused (by the room's policy), visitor (a host the policy does not "
    "name), invalid (a signature that does not hold: forged, expired, replayed, unknown key).",
    ["outcome"],
    registry=REGISTRY,
)
REFUSALS = Counter("anteroom_refusals", "Error answers by error code.", ["code"], registry=REGISTRY)
CONNECTION_LIMITS = Counter(
    "anteroom_connection_limits",
    "Connections and requests the server's limits turned away: per_address (over the cap: closed "
    "as accepted, or answered 429 behind a proxy), request_timeout (not in by the deadline: 408).",
    ["reason"],
    registry=REGISTRY,
)
REDIS_ERRORS = Counter(
    "anteroom_redis_errors",
    "Requests answered with a storage error (unreachable, out of memory).",
    ["kind"],
    registry=REGISTRY,
)
BREAKER = Gauge(
    "anteroom_breaker_open",
    "1 while a worker skips Redis after a failure (the most of any live worker).",
    multiprocess_mode="livemax",
    registry=REGISTRY,
)

TRIPS = Counter(
    "anteroom_breaker_trips",
    "Times a worker's circuit breaker opened after a Redis transport failure.",
    registry=REGISTRY,
)

bp = Blueprint("metrics", __name__)


def multiprocess() -> bool:
    """True when counters are shared through ``PROMETHEUS_MULTIPROC_DIR``."""
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


class RoomGauges(Collector):  # type: ignore[misc]
    """Each room's waiting, held, active, rate, capacity and status, cached per scrape interval."""

    def __init__(self, services: Services, ttl: float = ROOM_GAUGES_TTL_SEC) -> None:
        self.services = services
        self.ttl = ttl
        self._cached: tuple[float, list[Metric]] = (-1e18, [])
        self._lock = threading.Lock()
        self.reads = 0  # Redis rounds made (tests hold the cache to account)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            at, families = self._cached
            if time.monotonic() - at >= self.ttl:
                families = self._read()
                self._cached = (time.monotonic(), families)
        yield from families

    def _read(self) -> list[Metric]:
        s = self.services
        rooms = dict(s.directory.known.rooms)
        labels = ["room", "slug", "environment"]
        names = {
            "waiting": "Spots waiting in line (not held).",
            "held": "Spots held (score at or above holdScore).",
            "active": "Admitted visitors whose slot is live.",
            "rate_per_minute": "Configured admissions per minute.",
            "capacity": "Configured most active visitors (+Inf: no limit).",
            "open": "1 while the room is open.",
            "paused": "1 while the room is paused.",
        }
        families = {
            n: GaugeMetricFamily(f"anteroom_room_{n}", text, labels=labels)
            for n, text in names.items()
        }
        left = HistogramMetricFamily(
            "anteroom_room_abandoned_wait_seconds",
            "Spots that left the line before their turn (their visitor left, or went quiet and"
            " was dropped), by how long they had waited; counted since the room was created.",
            labels=labels,
        )
        unused = CounterMetricFamily(
            "anteroom_room_unused_admissions",
            "Admissions that ran out with no renewal seen (let in, never seen using the site);"
            " counted since the room was created.",
            labels=labels,
        )
        sent = CounterMetricFamily(
            "anteroom_notify_sent",
            "Turn e-mails sent (a room's notify setting); counted since the room was created.",
            labels=labels,
        )
        failed = CounterMetricFamily(
            "anteroom_notify_failed",
            "Tries of a turn e-mail that failed (each retried with backoff, up to 5 tries);"
            " counted since the room was created.",
            labels=labels,
        )
        mails: list[dict[str, Any] | None] = [None] * len(rooms)
        stats: list[RoomStats | None] = []
        departures: list[tuple[tuple[int, ...], int] | None] = [None] * len(rooms)
        if rooms:
            self.reads += 1
            try:
                stats = s.breaker.call(lambda: s.engine.stats_of(list(rooms)))
                departures = list(s.breaker.call(lambda: s.engine.departures_of(list(rooms))))
                mails = list(s.breaker.call(lambda: mail_counts_of(s.engine, list(rooms))))
            except StorageError:
                stats = [None] * len(rooms)
        for (room_id, room), figures in zip(rooms.items(), stats, strict=True):
            if figures is None:
                continue  # deleted since, or Redis failed: no figure rather than a stale one
            values = [room_id, room["slug"], room["environment"]]
            families["waiting"].add_metric(values, figures.waiting)
            families["held"].add_metric(values, figures.held)
            families["active"].add_metric(values, figures.active)
            families["rate_per_minute"].add_metric(values, room["ratePerMinute"] or 0)
            capacity = room["capacity"]
            families["capacity"].add_metric(values, math.inf if capacity is None else capacity)
            families["open"].add_metric(values, 1 if figures.status == "open" else 0)
            families["paused"].add_metric(values, 1 if figures.status == "paused" else 0)
        for (room_id, room), found in zip(rooms.items(), departures, strict=True):
            if found is not None:
                values = [room_id, room["slug"], room["environment"]]
                left.add_metric(values, _cumulative(found[0]), None)
                unused.add_metric(values, found[1])
        for (room_id, room), counts in zip(rooms.items(), mails, strict=True):
            if counts is not None:
                values = [room_id, room["slug"], room["environment"]]
                sent.add_metric(values, counts["sent"])
                failed.add_metric(values, counts["failed"])
        return [*families.values(), left, unused, sent, failed]


def _cumulative(counts: tuple[int, ...]) -> list[tuple[str, float]]:
    """Counts per ``WAIT_BUCKETS`` bucket as a Prometheus histogram's cumulative buckets."""
    out, total = [], 0
    for bound, n in zip(WAIT_BUCKETS, counts, strict=True):
        total += n
        out.append(("+Inf" if bound == "inf" else str(float(bound)), float(total)))
    return out


def _route() -> str:
    rule = request.url_rule
    return rule.rule if rule is not None else "(unmatched)"


def _started() -> None:
    g.anteroom_started = time.perf_counter()


def _observed(response: Response) -> Response:
    """Count the answer: route, status, latency, queue status, refusal code."""
    started = g.pop("anteroom_started", None)
    route, status = _route(), response.status_code
    body = None
    if (status >= 400 and response.is_json) or (status == 200 and route in QUEUE_ROUTES):
        body = response.get_json(silent=True)
    elapsed = None if started is None else time.perf_counter() - started
    services: Services = current_app.extensions["anteroom"]
    seen = current_app.extensions["anteroom_breaker_seen"]
    observe(route, request.method, status, elapsed, body, services.breaker, seen)
    return response


@functools.lru_cache(maxsize=4096)
def _requests(route: str, method: str, status: int) -> Any:
    """The counter's child for these labels (prometheus' own lookup costs more per request)."""
    return REQUESTS.labels(route, method, str(status))


@functools.lru_cache(maxsize=1024)
def _latency(route: str, method: str) -> Any:
    return LATENCY.labels(route, method)


@functools.lru_cache(maxsize=64)
def _answers(status: str) -> Any:
    """The queue answers' counter child for ``status`` (every poll counts one)."""
    return ANSWERS.labels(status)


def observe(
    route: str,
    method: str,
    status: int,
    seconds: float | None,
    body: Any,
    breaker: Breaker,
    seen: dict[str, float],
) -> None:
    """Count one answer (the Flask hook's and the hot path's one rule): route, status, latency,
    the queue status of a queue answer or the code of a refusal; and the breaker's state.

    ``body`` is the answer's JSON (None when it has none that matters); ``seen`` holds the
    breaker's last opening already counted as a trip.
    """
    _requests(route, method, status).inc()
    if seconds is not None:
        _latency(route, method).observe(seconds)
    if not isinstance(body, dict):
        pass
    elif status >= 400:
        code = body.get("error")
        if isinstance(code, str):
            REFUSALS.labels(code).inc()
            if code in STORAGE_CODES:
                REDIS_ERRORS.labels(STORAGE_CODES[code]).inc()
    elif status == 200 and route in QUEUE_ROUTES:
        if isinstance(body.get("status"), str):
            _answers(body["status"]).inc()
        if body.get("token"):
            ADMISSIONS.inc()
    BREAKER.set(1 if breaker.is_open else 0)
    if breaker.open_until > seen["until"]:  # it opened (again) since the last request
        seen["until"] = breaker.open_until
        TRIPS.inc()


def _check_bearer(expected: str) -> None:
    """Refuse a scrape of the service's own address without ``expected`` as its bearer token
    (compared in constant time), and every scrape there when no token is set."""
    if not expected:
        raise errors.NotFound(
            "Metrics are not public: set ANTEROOM_METRICS_TOKEN (scraped with that bearer "
            "token) or ANTEROOM_METRICS_LISTEN (an address of their own)."
        )
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    ok = scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), expected.encode()
    )
    if not ok:
        challenge = {"WWW-Authenticate": 'Bearer realm="metrics"'}
        raise errors.Unauthorized("Send Authorization: Bearer <metrics token>.",
                                  headers=challenge)  # fmt: skip


@bp.get(PATH)
def metrics() -> Response:
    """The exposition text: on the scraper's own address (``ANTEROOM_METRICS_LISTEN``) to
    anyone who reaches it; on the service's, only for ``ANTEROOM_METRICS_TOKEN``'s bearer;
    else to nobody, since room names, rates and refusals are nothing to publish."""
    s: Services = current_app.extensions["anteroom"]
    if not request.environ.get(LISTENER_KEY):
        _check_bearer(s.settings.metrics_token)
    if multiprocess():
        shared = CollectorRegistry()
        MultiProcessCollector(shared)
        text = generate_latest(shared)
    else:
        text = generate_latest(REGISTRY)
    rooms = CollectorRegistry()
    rooms.register(current_app.extensions["anteroom_room_gauges"])
    response = Response(text + generate_latest(rooms), content_type=CONTENT_TYPE)
    response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask, services: Services) -> None:
    """Count every request and serve ``/metrics``."""
    app.extensions["anteroom_room_gauges"] = RoomGauges(services)
    app.extensions["anteroom_breaker_seen"] = {"until": services.breaker.open_until}
    app.before_request(_started)
    app.after_request(_observed)
    app.register_blueprint(bp)
