"""Settings: every ``ANTEROOM_…`` environment variable, read in one place."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from anteroom.queue.connection.redis_urls import parse_target
from anteroom.queue.rooms.smtp_target import SmtpTarget

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


def _setting(default: Any, doc: str) -> Any:
    """A setting's field with its meaning beside it, for docs/configuration.md (built from it)."""
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class Settings:
    """Service settings; :meth:`from_env` reads them from ``ANTEROOM_<NAME>``."""

    bind: str = _setting("127.0.0.1:8000", "Address gunicorn listens on.")
    redis_url: str = _setting(
        "",
        "An external Redis/Valkey (`redis://`, `rediss://`, `unix://`), or a Redis/Valkey Cluster "
        "by its seeds (`redis+cluster://[user:password@]host:port,host:port…`); empty starts the "
        "embedded one. A malformed URL stops start-up, naming it.",
    )
    redis_replicas: str = _setting(
        "",
        "Comma-separated URLs of read replicas of a single primary: each process runs the "
        "read-only far poll on one of them (a cluster's replicas are found through the cluster).",
    )
    data_dir: str = _setting(
        "./var",
        "The embedded Redis's data (append-only file), the generated keyring and "
        "`known-rooms.json` (rooms known for an outage).",
    )
    keys: str = _setting(
        "",
        "Signing keyring `kid:base64secret,…` from `anteroom keys generate`: the first key signs, "
        "all verify. Required with `ANTEROOM_REDIS_URL`; with the embedded Redis a keyring is "
        "generated into `ANTEROOM_DATA_DIR/keys`.",
    )
    workers: int = _setting(2, "Gunicorn worker processes.")
    demo: bool = _setting(
        False,
        "`1` creates environment `demo`, public key `pk_demo`, open room `demo` and its simulated "
        "crowd (`make serve` turns it on).",
    )
    # One instance alone on an external Redis may keep a keyring it generates in data_dir/keys;
    # off, such an instance refuses to start without ANTEROOM_KEYS (hosts would sign apart).
    generate_keys: bool = _setting(
        False,
        "`1`: a single instance on an external Redis may keep a generated keyring in "
        "`ANTEROOM_DATA_DIR/keys` (never with a second instance).",
    )
    setup_token: str = _setting(
        "",
        "The first start's one-time setup token (12+ characters) instead of a printed random one.",
    )
    key_prefix: str = _setting("anteroom:", "Prefix of every Redis key.")
    region: str = _setting(
        "",
        "This instance's region, for rooms across regions (docs/regions.md): its tickets name"
        " it, and it reports to and takes leases from the coordinator in etcd. Empty: one"
        " region, no coordinator.",
    )
    etcd_endpoints: str = _setting(
        "",
        "The etcd members' client URLs, comma-separated (`http://host:2379,...`), with"
        " `ANTEROOM_REGION`: its own region's member first.",
    )
    trusted_proxies: int = _setting(
        0, "How many proxy hops in front of us may set `X-Forwarded-For` (whose value is believed)."
    )
    request_timeout: float = _setting(
        10.0,
        "Seconds a request's headers and body together may take to arrive; then `408` "
        "(ops/connection_limits.py; see Deploying, Connection limits).",
    )
    connections_per_address: int = _setting(
        256,
        "Open connections one address may hold in one worker (`0`: no cap); behind trusted "
        "proxies, requests in progress per forwarded visitor instead.",
    )
    limit_challenge: str = _setting(
        "60/minute", "Challenges (`arrive`, `challenge`) per address, per worker process."
    )
    limit_identify: str = _setting(
        "60/minute", "Identifies per address, counted in Redis across instances."
    )
    limit_enter: str = _setting(
        "60/minute", "Enters per address, counted in Redis across instances."
    )
    limit_fairness: str = _setting(
        "60/minute",
        "Fetches of `fairness.json` and its entrant list per address, per worker process.",
    )
    fairness_egress_mb: int = _setting(
        16,
        "MiB a second of `fairness.json`'s and its list's full answers per worker process "
        "(`0`: no cap).",
    )
    pow_difficulty: int = _setting(
        0,
        "`0`: the work rule decides (see the visitor API, Proof of work, fitted); `N` > 0 pins "
        "every challenge to 2^N expected hashes.",
    )
    pow_policy: str = _setting(
        "",
        'JSON per environment: `{"<env>": {"pin": N}}` or `{"min": N, "max": N, "attack": '
        "identifies a minute}` (bits of expected work).",
    )
    templates_dir: str = _setting(
        "",
        "A folder of your own page templates, looked up before the built-in ones (see Operators, "
        "Branding the hosted page).",
    )
    metrics_token: str = _setting(
        "",
        "`GET /metrics` on the service's address answers only `Authorization: Bearer <it>`. "
        "With neither this nor `ANTEROOM_METRICS_LISTEN`, `/metrics` is not served (`404`).",
    )
    metrics_listen: str = _setting(
        "",
        "A second address (`host:port`, e.g. on a private network) on which only `GET /metrics` "
        "is answered, without a token, for a Prometheus scraper.",
    )
    log_format: str = _setting(
        "text",
        "`json`: one JSON line per request (route, status, latency, room, instance; "
        "web/serving/request_log.py).",
    )
    # Development only: the service's outbound fetches (a draw's beacon) may use plain http to
    # this machine and reach its loopback addresses (queue/draw/outbound_fetch.py).
    outbound_allow_loopback: bool = _setting(
        False,
        "Development only: `1` lets a draw's beacon be plain `http` to this machine and reach its "
        "loopback addresses.",
    )
    outbound_resolver: str = _setting(
        "",
        "`ip:port` of the DNS server the service's outbound fetches (a draw's beacon) ask, over "
        "UDP; empty: the system's resolver, in an OS thread.",
    )
    outbound_ca_file: str = _setting(
        "",
        "A CA bundle (PEM file) the service's outbound https fetches (a draw's beacon, signed "
        "agents' key directories) trust besides the system's; empty: the system's only.",
    )
    dns_resolver: str = _setting(
        "",
        "`ip:port` of the DNS server asked to verify search crawlers (a room's `crawlers`), over "
        "UDP: one reverse and one forward question per new crawler address, kept for the "
        "records' TTL; empty: the system's first `nameserver` (`/etc/resolv.conf`).",
    )
    smtp_url: str = _setting(
        "",
        "The SMTP server that sends the turn e-mails of rooms with `notify` on: "
        "`smtp://host:port` (STARTTLS when offered and credentials are given) or "
        "`smtps://user:password@host:port` (TLS from the start); empty: none is sent, each "
        "counted as failed. A malformed URL stops start-up.",
    )
    smtp_from: str = _setting("", "The turn e-mails' From address (e.g. `queue@shop.example`).")
    public_url: str = _setting(
        "",
        "The service's public address (`https://queue.shop.example`): the origin of the return "
        "links in turn e-mails and, with `ANTEROOM_REGION`, of the drawn list a shared draw's "
        "part names (the region's own origin); empty: `http://` + `ANTEROOM_BIND`.",
    )
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
        if settings.region and not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,31}", settings.region):
            raise ValueError(f"{PREFIX}REGION must be 1 to 32 of a-z, 0-9 and -")
        if settings.region and not settings.etcd_endpoints.strip():
            raise ValueError(f"{PREFIX}ETCD_ENDPOINTS must name etcd's members with a region")
        if settings.metrics_listen and metrics_port(settings) is None:
            raise ValueError(
                f"{PREFIX}METRICS_LISTEN must be host:port, on a port other than ANTEROOM_BIND's"
            )
        if settings.outbound_resolver and not _host_port(settings.outbound_resolver):
            raise ValueError(f"{PREFIX}OUTBOUND_RESOLVER must be host:port (an IP address)")
        if settings.dns_resolver and not _host_port(settings.dns_resolver):
            raise ValueError(f"{PREFIX}DNS_RESOLVER must be host:port (an IP address)")
        if settings.outbound_ca_file and not os.path.isfile(settings.outbound_ca_file):
            raise ValueError(f"{PREFIX}OUTBOUND_CA_FILE must name a readable PEM file")
        if settings.smtp_url:
            try:
                SmtpTarget.parse(settings.smtp_url)
            except ValueError as exc:
                raise ValueError(f"{PREFIX}SMTP_URL {exc}") from None
        return settings

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    @property
    def demo_enabled(self) -> bool:
        """Demo mode: on only when asked for (``ANTEROOM_DEMO=1``; ``make serve`` asks)."""
        return self.demo


def metrics_port(settings: Settings) -> int | None:
    """The port of ``metrics_listen`` (None: not set, or not a port apart from ``bind``'s)."""
    host, _, port = settings.metrics_listen.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    bound = settings.bind.rpartition(":")[2]
    return None if bound == port else int(port)
