"""The Flask application factory."""

from __future__ import annotations

from typing import Any

from flask import Flask

from .config import Settings
from .engine import Engine
from .resources import resource_dir
from .services import Services
from .storage import connect
from .tokens import Keyring


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
    app.config.from_mapping(MAX_CONTENT_LENGTH=16 * 1024, JSON_SORT_KEYS=False)
    if test_config:
        app.config.update(test_config)
    if not settings.redis_url:
        raise ValueError("ANTEROOM_REDIS_URL is required here (anteroom serve sets it)")
    client = connect(settings.redis_url)
    if not settings.keys:
        # Every worker must sign with the same secret; `anteroom serve` supplies a persisted one.
        raise ValueError("ANTEROOM_KEYS is required here (anteroom serve sets it)")
    keyring = Keyring.parse(settings.keys)
    app.extensions["anteroom"] = Services(
        settings=settings,
        redis=client,
        engine=Engine(client, settings.key_prefix),
        keyring=keyring,
    )

    from .views import health

    app.register_blueprint(health.bp)
    return app
