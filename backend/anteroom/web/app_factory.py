"""The Flask application factory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from anteroom.config import Settings
from anteroom.ops.keystore import KeyStore
from anteroom.queue.redis_link import Breaker, connect_links
from anteroom.queue.room_directory import SNAPSHOT_NAME, RoomDirectory, StaleCache
from anteroom.queue.room_engine import Engine
from anteroom.resources import resource_dir
from anteroom.sdk.tokens import Keyring
from anteroom.service_container import Services
from anteroom.web import address_limits as limits
from anteroom.web import http_errors as errors

MAX_BODY_BYTES = 16 * 1024


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
    app.config.from_mapping(MAX_CONTENT_LENGTH=MAX_BODY_BYTES)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    if test_config:
        app.config.update(test_config)
    if not settings.redis_url:
        raise ValueError("ANTEROOM_REDIS_URL is required here (anteroom serve sets it)")
    if not settings.keys:
        # Every worker must sign with the same secret; `anteroom serve` supplies a persisted one.
        raise ValueError("ANTEROOM_KEYS is required here (anteroom serve sets it)")
    if settings.demo_enabled:
        from anteroom.web.demo_shop import protect

        # Before ProxyFix wraps the app, so the edge sees the client's address, not the proxy's.
        protect(app, settings)
    if settings.trusted_proxies > 0:
        # Only then is X-Forwarded-For believed, and only as many hops as were configured.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.trusted_proxies)  # type: ignore[method-assign]
    links = connect_links(settings.redis_url, settings.redis_replicas)
    client = links.writer
    engine = Engine(client, settings.key_prefix, reader=links.reader)
    # On a cluster the breaker pauses only the shard that failed; one server pauses as a whole.
    breaker = Breaker(shard_of=links.shard_of if links.target.is_cluster else None)
    snapshot = Path(settings.data_dir) / SNAPSHOT_NAME
    services = Services(
        settings=settings,
        redis=client,
        links=links,
        engine=engine,
        keyring=Keyring.parse(settings.keys),
        keystore=KeyStore(client, engine.keys),
        breaker=breaker,
        rooms=StaleCache(ttl=2.0),
        public_keys=StaleCache(ttl=10.0),
        directory=RoomDirectory(client, engine.keys, breaker, snapshot),
    )
    app.extensions["anteroom"] = services
    # Lazily, per process: gunicorn forks workers after the app may have been built.
    app.before_request(services.directory.ensure_running)

    from anteroom.web import api_docs as docs
    from anteroom.web import demo_shop as demo
    from anteroom.web import health_probes as health
    from anteroom.web import hosted_pages as pages
    from anteroom.web import management_api as management
    from anteroom.web import visitor_api as visitor

    errors.init_app(app)
    health.init_app(app, client)
    app.register_blueprint(visitor.bp)
    app.register_blueprint(management.bp)
    app.register_blueprint(docs.bp)
    app.register_blueprint(pages.bp)
    if settings.demo_enabled:
        app.register_blueprint(demo.bp)
    limits.init_app(app, settings, engine.keys.limiter_prefix(), services.breaker)
    return app
