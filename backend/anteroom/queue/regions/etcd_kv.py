"""A small etcd v3 client over its JSON gateway (HTTP, standard library only).

Why not a PyPI client: ``etcd3`` is unmaintained and pins old protobuf and grpcio builds (a
heavy, brittle pair for the handful of calls a coordinator makes); etcd itself serves every v3
call as JSON over HTTP (``/v3/kv/range``, ``/v3/kv/txn``, ``/v3/lease/grant`` …), keys and
values in base64, 64-bit numbers as strings. This client speaks that, to a list of members:
a member that does not answer is passed over for the next, so a region's lost member costs a
call one connect timeout, never the cluster.
"""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


class EtcdUnavailable(Exception):
    """No member answered (all down, or this region is cut off from them)."""


class EtcdError(Exception):
    """A member answered with an error (a lease not found, a malformed request)."""


def _b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)


def prefix_end(prefix: str) -> str:
    """The range end that covers every key starting with ``prefix`` (etcd's convention)."""
    raw = bytearray(prefix.encode())
    raw[-1] += 1
    return raw.decode()


@dataclass(frozen=True)
class KeyValue:
    """One stored key: its value, the revision that created it and its lease (0: none)."""

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    lease: int


def _kv(item: dict[str, Any]) -> KeyValue:
    return KeyValue(
        key=_unb64(item["key"]).decode(),
        value=_unb64(item.get("value", "")),
        create_revision=int(item.get("create_revision", 0)),
        mod_revision=int(item.get("mod_revision", 0)),
        lease=int(item.get("lease", 0)),
    )


class Etcd:
    """Calls to an etcd cluster through any of ``endpoints`` (``http://host:port``)."""

    def __init__(self, endpoints: Sequence[str], timeout: float = 1.0) -> None:
        """``timeout``: seconds per member and call (connect and answer)."""
        if not endpoints:
            raise ValueError("etcd needs at least one endpoint")
        self.endpoints = [urlsplit(url) for url in endpoints]
        self.timeout = timeout
        self._first = 0  # the member that answered last: asked first next time

    def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``/v3/<path>`` on the first member that answers; its JSON."""
        data = json.dumps(body).encode()
        count = len(self.endpoints)
        last: Exception | None = None
        for step in range(count):
            index = (self._first + step) % count
            url = self.endpoints[index]
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=self.timeout)
            try:
                conn.request("POST", "/v3/" + path, data, {"Content-Type": "application/json"})
                reply = conn.getresponse()
                payload = reply.read()
            except (OSError, http.client.HTTPException) as exc:
                last = exc
                continue
            finally:
                conn.close()
            answer = json.loads(payload or b"{}")
            if reply.status != 200:
                message = answer.get("error") or answer.get("message") or payload[:200]
                if reply.status >= 500 and "lease not found" not in str(message):
                    last = EtcdError(f"{reply.status}: {message}")  # no leader there: next
                    continue
                raise EtcdError(f"{reply.status}: {message}")
            self._first = index
            return answer
        raise EtcdUnavailable(f"no etcd member answered: {last}")

    # -- keys ------------------------------------------------------------------------------

    def put(self, key: str, value: str | bytes, lease: int = 0) -> int:
        """Store ``value`` at ``key``; the cluster's revision after it."""
        body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        return int(self.call("kv/put", body)["header"]["revision"])

    def get(self, key: str) -> KeyValue | None:
        """The key's value, or None."""
        kvs = self.call("kv/range", {"key": _b64(key)}).get("kvs", [])
        return _kv(kvs[0]) if kvs else None

    def get_prefix(self, prefix: str) -> list[KeyValue]:
        """Every key under ``prefix``, in key order."""
        body = {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix))}
        return [_kv(item) for item in self.call("kv/range", body).get("kvs", [])]

    def delete(self, key: str) -> None:
        """Delete ``key`` (nothing if absent)."""
        self.call("kv/deleterange", {"key": _b64(key)})

    def txn(
        self,
        compare: list[dict[str, Any]],
        success: list[dict[str, Any]],
        failure: list[dict[str, Any]] = (),  # type: ignore[assignment]
    ) -> tuple[bool, dict[str, Any]]:
        """One transaction: (its comparisons held, the whole answer)."""
        answer = self.call(
            "kv/txn", {"compare": compare, "success": success, "failure": list(failure)}
        )
        return bool(answer.get("succeeded", False)), answer

    # -- leases ----------------------------------------------------------------------------

    def grant(self, ttl: int) -> int:
        """A new lease of ``ttl`` seconds; its id."""
        return int(self.call("lease/grant", {"TTL": str(ttl)})["ID"])

    def keep_alive(self, lease: int) -> int:
        """Renew ``lease``; its seconds left (0 or less: it has lapsed)."""
        answer = self.call("lease/keepalive", {"ID": str(lease)})
        return int(answer.get("result", {}).get("TTL", 0))

    def revoke(self, lease: int) -> None:
        """End ``lease`` now (its keys go with it); a lapsed one is no error."""
        try:
            self.call("lease/revoke", {"ID": str(lease)})
        except EtcdError as exc:
            if "not found" not in str(exc):
                raise


# Helpers that build a transaction's parts.


def if_absent(key: str) -> dict[str, Any]:
    """Compare: ``key`` does not exist (its create revision is 0)."""
    return {"key": _b64(key), "result": "EQUAL", "target": "CREATE", "create_revision": "0"}


def if_created_at(key: str, revision: int) -> dict[str, Any]:
    """Compare: ``key`` exists and was created at ``revision`` (a leader still in office)."""
    return {
        "key": _b64(key),
        "result": "EQUAL",
        "target": "CREATE",
        "create_revision": str(revision),
    }


def put_op(key: str, value: str | bytes, lease: int = 0) -> dict[str, Any]:
    """Operation: store ``value`` at ``key`` (with ``lease``, when given)."""
    body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
    if lease:
        body["lease"] = str(lease)
    return {"request_put": body}


def range_op(key: str) -> dict[str, Any]:
    """Operation: read ``key``."""
    return {"request_range": {"key": _b64(key)}}


def range_kvs(answer: dict[str, Any], index: int = 0) -> list[KeyValue]:
    """The keys a transaction's ``index``-th operation (a range) read."""
    responses = answer.get("responses", [])
    if index >= len(responses):
        return []
    found = responses[index].get("response_range", {}).get("kvs", [])
    return [_kv(item) for item in found]
