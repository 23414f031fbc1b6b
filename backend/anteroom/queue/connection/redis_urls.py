"""What ``ANTEROOM_REDIS_URL`` and ``ANTEROOM_REDIS_REPLICAS`` name, read once at start-up.

A single server (``redis://``, ``rediss://``, ``unix://``), or a Redis Cluster
(``redis+cluster://host:port[,host:port…]``, seeds); a malformed setting is a ValueError naming
it. Also the spelling of the same URL the `limits` library wants.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

SINGLE_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEME = "redis+cluster"
URL_FORMS = (
    "redis://host:port/db, rediss://host:port/db, unix:///path/redis.sock, "
    "or redis+cluster://host:port,host:port (cluster seeds)"
)


@dataclass(frozen=True)
class RedisTarget:
    """What the settings name: one server (``url``) or a cluster (``seeds``); read replicas."""

    url: str
    seeds: tuple[tuple[str, int], ...] = ()  # non-empty: a Redis Cluster
    username: str | None = None
    password: str | None = None
    replicas: tuple[str, ...] = ()

    @property
    def is_cluster(self) -> bool:
        """True for a ``redis+cluster://`` URL."""
        return bool(self.seeds)


def _host_port(text: str, url_name: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1]:7000
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{url_name}: {text!r} is not host:port (in {URL_FORMS})")
    return host, int(port)


def _single(url: str, url_name: str) -> str:
    """``url`` when redis-py can use it as one server; else ValueError naming the setting."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is no number or out of range
    except ValueError:
        raise ValueError(f"{url_name}: malformed URL (expected {URL_FORMS})") from None
    if parts.scheme not in SINGLE_SCHEMES:
        raise ValueError(f"{url_name}: unknown scheme {parts.scheme!r} (expected {URL_FORMS})")
    if parts.scheme == "unix" and not parts.path:
        raise ValueError(f"{url_name}: unix:// needs a socket path, like unix:///run/redis.sock")
    if parts.scheme != "unix" and port is None and not parts.hostname and parts.netloc:
        raise ValueError(f"{url_name}: no host in the URL (expected {URL_FORMS})")
    db = parts.path.strip("/")
    if parts.scheme != "unix" and db and not db.isdigit():
        raise ValueError(f"{url_name}: the database must be a number, like redis://host:6379/0")
    return url


def parse_target(url: str, replicas: str = "") -> RedisTarget:
    """Read ``ANTEROOM_REDIS_URL`` and ``ANTEROOM_REDIS_REPLICAS``; ValueError naming the one
    that is malformed (checked at start-up, so a typo never surfaces as a request's error)."""
    url = url.strip()
    replica_urls = tuple(u.strip() for u in replicas.split(",") if u.strip())
    if url.startswith(CLUSTER_SCHEME + "://"):
        if replica_urls:
            raise ValueError(
                "ANTEROOM_REDIS_REPLICAS is for a single primary: a cluster's replicas are "
                "found through the cluster itself"
            )
        rest = url[len(CLUSTER_SCHEME) + 3 :].split("?", 1)[0].rstrip("/")
        auth, _, hosts = rest.rpartition("@")
        user, _, password = auth.partition(":")
        seeds = tuple(
            _host_port(h.strip(), "ANTEROOM_REDIS_URL") for h in hosts.split(",") if h.strip()
        )
        if not seeds:
            raise ValueError(f"ANTEROOM_REDIS_URL: a cluster URL needs seeds ({URL_FORMS})")
        return RedisTarget(
            url, seeds, unquote(user) or None, unquote(password) if auth else None
        )  # fmt: skip
    _single(url, "ANTEROOM_REDIS_URL")
    for replica in replica_urls:
        _single(replica, "ANTEROOM_REDIS_REPLICAS")
    return RedisTarget(url, replicas=replica_urls)


def limits_storage_uri(url: str) -> str:
    """The `limits` library's spelling of an ``ANTEROOM_REDIS_URL`` (it has its own cluster
    storage under the same ``redis+cluster://`` scheme)."""
    target = parse_target(url)
    if target.is_cluster:
        return target.url.split("?", 1)[0]
    if url.startswith("unix://"):
        return "redis+unix://" + url[len("unix://") :].split("?", 1)[0]
    return url
