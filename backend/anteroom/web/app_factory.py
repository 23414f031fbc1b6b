"""The Flask application factory."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from flask import Flask
from jinja2 import BaseLoader, ChoiceLoader, FileSystemLoader, PrefixLoader
from werkzeug.exceptions import NotFound
from werkzeug.middleware.proxy_fix import ProxyFix

from anteroom.config import Settings
from anteroom.queue.connection.breaker import Breaker
from anteroom.queue.connection.redis_link import connect, connect_links
from anteroom.queue.draw import outbound_fetch
from anteroom.queue.line.fail_open_checkin import FailOpenCheckIn
from anteroom.queue.line.fail_open_ledger import FailOpenLedger
from anteroom.queue.line.room_engine import Engine
from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.queue.regions.region_cell import RegionCell
from anteroom.queue.rooms.room_directory import SNAPSHOT_NAME, RoomDirectory, StaleCache
from anteroom.queue.rooms.room_ticker import RoomTicker
from anteroom.queue.series.room_series import RoomSeries
from anteroom.queue.series.series_sampler import Sampler, SamplerThread
from anteroom.resources import resource_dir
from anteroom.sdk.crawlers import CrawlerCheck
from anteroom.sdk.signed_agents import AgentVerifier, Directories
from anteroom.sdk.tokens import Keyring
from anteroom.service_container import Services
from anteroom.store import layout_version
from anteroom.store.agent_nonces import RedisNonces
from anteroom.store.audit_log import AuditLog
from anteroom.store.keystore import KeyStore
from anteroom.visit import agents
from anteroom.web.serving import http_errors as errors
from anteroom.web.visitor import address_limits as limits

MAX_BODY_BYTES = 16 * 1024
SAMPLER_LOCK = "series-sampler.lock"  # held by the one worker of an instance that samples


def _region_cell(settings: Settings, engine: Engine, keystore: KeyStore) -> RegionCell | None:
    """This instance's part in its region's cell (rooms across regions), or None in one region.
    It campaigns under a name of each process's own, given as its thread starts; the engine's
    invites of rooms across regions are counted, and withdrawn, in etcd."""
    if not settings.region:
        return None
    endpoints = [url.strip() for url in settings.etcd_endpoints.split(",") if url.strip()]
    cell = RegionCell(
        engine, Etcd(endpoints), settings.region, candidate=settings.region,
        list_url=partial(_drawn_list_url, settings.public_url or f"http://{settings.bind}",
                         keystore),
    )  # fmt: skip
    engine.invite_gate = cell.invite_gate()
    engine.invite_withdrawn = cell.invite_withdrawn()
    return cell


def _drawn_list_url(base: str, keystore: KeyStore, room: dict[str, Any], root: str) -> str | None:
    """The public URL of ``room``'s drawn list of ``root`` in this region, as the other regions'
    fairness documents name it (with the first live public key of its environment here; None
    while it has none)."""
    live = [k for k in keystore.list(room["environment"]) if not k.revoked]
    if not live:
        return None
    query = urlencode({"key": live[0].public_key, "root": root})
    return f"{base.rstrip('/')}/queue/{quote(room['slug'])}/fairness/entrants.json?{query}"


def _sampled_rooms(directory: RoomDirectory) -> Iterator[str]:
    """Rooms worth a sample: every one the directory knows but the idle (closed) ones."""
    for room_id, room in directory.known.rooms.items():
        if room.get("status") != "idle":
            yield room_id


def _audit_switches(
    audit: AuditLog, directory: RoomDirectory, room_id: str, switches: Sequence[tuple[str, int]]
) -> None:
    """The room ticker's report of a room's safety net switches, into the audit log."""
    room = directory.room_by_id(room_id)
    if room is not None:
        audit.record_switches(room, switches)


def create_app(
    settings: Settings | None = None, test_config: dict[str, Any] | None = None
) -> Flask:
    """Build the app from ``settings`` (default: the environment)."""
    settings = settings or Settings.from_env()
    app = Flask(
        "anteroom",
        template_folder=str(resource_dir("templates")),
        static_folder=str(resource_dir("static")),
    )
    if settings.templates_dir:
        app.jinja_loader = operator_templates(settings.templates_dir, app.jinja_loader)
    app.config.from_mapping(MAX_CONTENT_LENGTH=MAX_BODY_BYTES)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    if test_config:
        app.config.update(test_config)
    if not settings.redis_url:
        raise ValueError("ANTEROOM_REDIS_URL is required here (anteroom serve sets it)")
    if not settings.keys:
        # Every worker must sign with the same secret; `anteroom serve` supplies a persisted one.
        raise ValueError("ANTEROOM_KEYS is required here (anteroom serve sets it)")
    # Innermost, so ProxyFix and the demo's edge (added next) wrap the hot path as they wrap Flask.
    from anteroom.web.visitor import hot_path

    hot_path.install(app)
    if settings.demo_enabled:
        from anteroom.web.pages.demo_shop import protect

        # Before ProxyFix wraps the app, so the edge sees the client's address, not the proxy's.
        protect(app, settings)
    if settings.trusted_proxies > 0:
        # Only then is X-Forwarded-For believed, and only as many hops as were configured.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.trusted_proxies)  # type: ignore[method-assign]
    # The process's outbound fetches (a draw's beacon): what they may reach and who resolves.
    outbound_fetch.set_policy(
        outbound_fetch.Outbound(
            settings.outbound_allow_loopback,
            settings.outbound_resolver,
            cafile=settings.outbound_ca_file,
        )
    )
    links = connect_links(settings.redis_url, settings.redis_replicas)
    client = links.writer
    engine = Engine(client, settings.key_prefix, reader=links.reader)
    # Before serving: refuse a layout newer than this code, upgrade an older one (once).
    layout_version.check_at_start(client, engine.keys)
    # On a cluster the breaker pauses only the shard that failed; one server pauses as a whole.
    breaker = Breaker(shard_of=links.shard_of if links.target.is_cluster else None)
    snapshot = Path(settings.data_dir) / SNAPSHOT_NAME
    # The background threads count their own failures (twins): a failure only they saw never
    # pauses a visitor's request, and an open request breaker never starves them.
    directory = RoomDirectory(client, engine.keys, breaker.twin(), snapshot)
    series = RoomSeries(client, engine.keys)
    ledger = FailOpenLedger()
    keystore = KeyStore(client, engine.keys)
    services = Services(
        settings=settings,
        redis=client,
        links=links,
        engine=engine,
        keyring=Keyring.parse(settings.keys),
        keystore=keystore,
        breaker=breaker,
        rooms=StaleCache(ttl=2.0),
        public_keys=StaleCache(ttl=10.0),
        directory=directory,
        series=series,
        sampler=SamplerThread(
            Sampler(series),
            lambda: _sampled_rooms(directory),
            time.time,
            lock_path=Path(settings.data_dir) / SAMPLER_LOCK,
        ),
        crawler_check=CrawlerCheck(settings.dns_resolver),
        agent_verifier=AgentVerifier(
            Directories(agents.directory_fetch, time.time),
            RedisNonces(client, engine.keys),
            time.time,
        ),
        ticker=RoomTicker(
            engine,
            directory,
            breaker=breaker.twin(pause=1.0),
            fail_open=ledger,
            on_switch=partial(_audit_switches, AuditLog(client, engine.keys), directory),
            # no check-in while this process's requests may still admit offline
            check_ins=FailOpenCheckIn(engine, ready=lambda: not breaker.is_open),
        ),
        fail_open=ledger,
        region_cell=_region_cell(settings, engine, keystore),
    )
    app.extensions["anteroom"] = services
    # Lazily, per process: gunicorn forks workers after the app may have been built. The room
    # ticker starts with the refresher; `anteroom serve` starts every thread as a worker boots
    # (Services.start_background), the series sampler included (no hook on the poll path).
    app.before_request(services.on_request)

    from anteroom.web.api import api_docs as docs
    from anteroom.web.manage import console
    from anteroom.web.manage import management_api as management
    from anteroom.web.pages import demo_shop as demo
    from anteroom.web.pages import fairness
    from anteroom.web.pages import hosted_pages as pages
    from anteroom.web.pages import plain_page as plain
    from anteroom.web.serving import health_probes as health
    from anteroom.web.serving import metrics, request_log
    from anteroom.web.visitor import front_door
    from anteroom.web.visitor import visitor_api as visitor

    request_log.init_app(app, settings.log_format)
    errors.init_app(app)
    # A browser that follows a wrong link gets a page; an API client keeps its JSON.
    app.register_error_handler(NotFound, pages.not_found)
    metrics.init_app(app, services)
    health.init_app(app, connect(settings.redis_url, timeout=health.BUDGET_SEC), breaker)
    app.register_blueprint(visitor.bp)
    app.register_blueprint(management.bp)
    app.register_blueprint(docs.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(fairness.bp)
    app.register_blueprint(plain.bp)
    app.register_blueprint(console.bp)
    app.register_blueprint(front_door.bp)
    if settings.demo_enabled:
        app.register_blueprint(demo.bp)
    limits.init_app(app, settings, engine.keys.limiter_prefix(), services.breaker)
    return app


def close_app(app: Flask) -> None:
    """Stop what ``app`` started and close its Redis clients (its rooms refresher, the limits'
    storage, the services' client), for tests and tools that build apps and move on: left to
    the garbage collector, a socket may be finalized before its client, which warns."""
    services: Services = app.extensions["anteroom"]
    services.stop_background()
    limits.close(app)
    services.redis.close()


def operator_templates(folder: str, builtin: BaseLoader | None) -> ChoiceLoader:
    """Templates from ``folder`` first, then the built-in ones, which stay reachable as
    ``anteroom/<name>`` so an operator's ``queue.html`` can extend ``anteroom/queue.html``."""
    if not Path(folder).is_dir():
        raise ValueError(f"ANTEROOM_TEMPLATES_DIR {folder!r} is not a folder")
    if builtin is None:  # Flask always has one for its template_folder
        raise ValueError("the built-in templates are missing")
    return ChoiceLoader([FileSystemLoader(folder), builtin, PrefixLoader({"anteroom": builtin})])
