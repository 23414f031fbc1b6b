"""Settings: every ``ANTEROOM_…`` environment variable, read in one place."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from anteroom.queue.redis_urls import parse_target

PREFIX = "ANTEROOM_"


def _bool(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


def _host_port(text: str) -> bool:
    host, _, port = text.rpartition(":")
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return port.isdigit() and 0 < int(port) < 65_536


@dataclass(frozen=True)
class Settings:
    """Service settings; :meth:`from_env` reads them from ``ANTEROOM_<NAME>``."""

    bind: str = "127.0.0.1:8000"
    redis_url: str = ""  # redis://, rediss://, unix:// or redis+cluster://host:port,host:port
    redis_replicas: str = ""  # comma-separated URLs of read replicas of a single primary
    data_dir: str = "./var"
    keys: str = ""
    workers: int = 2
    demo: bool = False  # the public demo room and its crowd: `make serve` turns it on
    # One instance alone on an external Redis may keep a keyring it generates in data_dir/keys;
    # off, such an instance refuses to start without ANTEROOM_KEYS (hosts would sign apart).
    generate_keys: bool = False
    setup_token: str = ""  # the first start's one-time setup token, else a random one is printed
    key_prefix: str = "anteroom:"
    trusted_proxies: int = 0  # how many proxy hops in front of us may set X-Forwarded-For
    # Seconds a request's headers and body together may take to arrive (ops/connection_limits).
    request_timeout: float = 10.0
    # Open connections one address may hold in one worker (0: no cap); behind trusted proxies,
    # requests in progress per forwarded visitor instead (ops/connection_limits).
    connections_per_address: int = 256
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
    # Development only: the service's outbound fetches (a draw's beacon) may use plain http to
    # this machine and reach its loopback addresses (queue/outbound_fetch.py).
    outbound_allow_loopback: bool = False
    outbound_resolver: str = ""  # host:port of the DNS server outbound fetches ask; "": system's
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
            if f.type in ("bool", bool):
                values[f.name] = _bool(raw)
            elif f.type in ("int", int):
                try:
                    values[f.name] = int(raw)
                except ValueError:
                    raise ValueError(f"{PREFIX}{f.name.upper()} must be an integer") from None
            elif f.type in ("float", float):
                try:
                    values[f.name] = float(raw)
                except ValueError:
                    raise ValueError(f"{PREFIX}{f.name.upper()} must be a number") from None
            else:
                values[f.name] = raw
        settings = cls(**values)
        if not 0 < settings.request_timeout < float("inf"):
            raise ValueError(f"{PREFIX}REQUEST_TIMEOUT must be a number of seconds above 0")
        if settings.connections_per_address < 0:
            raise ValueError(f"{PREFIX}CONNECTIONS_PER_ADDRESS must be 0 (no cap) or more")
        if settings.setup_token and len(settings.setup_token.strip()) < 12:
            raise ValueError(f"{PREFIX}SETUP_TOKEN must be at least 12 characters")
        if settings.redis_url or settings.redis_replicas:
            # A malformed URL fails at start-up, naming its variable, not at the first request.
            parse_target(settings.redis_url or "redis://", settings.redis_replicas)
        if settings.outbound_resolver and not _host_port(settings.outbound_resolver):
            raise ValueError(f"{PREFIX}OUTBOUND_RESOLVER must be host:port (an IP address)")
        return settings

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    @property
    def demo_enabled(self) -> bool:
        """Demo mode: on only when asked for (``ANTEROOM_DEMO=1``; ``make serve`` asks)."""
        return self.demo
