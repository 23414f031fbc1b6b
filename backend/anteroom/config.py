"""Settings: every ``ANTEROOM_…`` environment variable, read in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from anteroom.queue.redis_urls import parse_target

PREFIX = "ANTEROOM_"


def _bool(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    """Service settings; :meth:`from_env` reads them from ``ANTEROOM_<NAME>``."""

    bind: str = "127.0.0.1:8000"
    redis_url: str = ""  # redis://, rediss://, unix:// or redis+cluster://host:port,host:port
    redis_replicas: str = ""  # comma-separated URLs of read replicas of a single primary
    data_dir: str = "./var"
    keys: str = ""
    workers: int = 2
    demo: bool | None = None  # None: on with the embedded Redis, off with an external one
    key_prefix: str = "anteroom:"
    trusted_proxies: int = 0  # how many proxy hops in front of us may set X-Forwarded-For
    limit_challenge: str = "60/minute"
    limit_identify: str = "60/minute"
    limit_enter: str = "60/minute"
    limit_fairness: str = "60/minute"  # fairness.json and its entrant list, per address
    fairness_egress_mb: int = 16  # their full answers' MiB a second per worker process (0: no cap)
    pow_difficulty: int = 0  # > 0 pins every challenge to 2^N expected hashes; 0: the work rule
    pow_policy: str = ""  # JSON, per environment: {"pin": bits} or {"min", "max", "attack"}
    templates_dir: str = ""  # an operator's page templates, looked up before the built-in ones
    metrics_token: str = ""  # when set, /metrics answers only `Authorization: Bearer <it>`
    log_format: str = "text"  # "json": one JSON line per request (web/request_log.py)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``environ`` (default ``os.environ``); unknown types raise ValueError."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = environ.get(PREFIX + f.name.upper())
            if raw is None or f.name == "extra":
                continue
            if f.name == "demo":
                values[f.name] = _bool(raw)
            elif f.type in ("int", int):
                try:
                    values[f.name] = int(raw)
                except ValueError:
                    raise ValueError(f"{PREFIX}{f.name.upper()} must be an integer") from None
            else:
                values[f.name] = raw
        settings = cls(**values)
        if settings.redis_url or settings.redis_replicas:
            # A malformed URL fails at start-up, naming its variable, not at the first request.
            parse_target(settings.redis_url or "redis://", settings.redis_replicas)
        return settings

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    @property
    def demo_enabled(self) -> bool:
        """Demo mode: explicit setting, else on exactly when Redis is the embedded one."""
        return (not self.redis_url) if self.demo is None else self.demo
