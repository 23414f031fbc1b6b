"""Queue-through for an app's own API calls: on the edge's ``429 QueueRequired``, wait in line
and retry the call once with the admission.

The edge (``anteroom.edge``) answers a protected call that carries no admission with ``429``,
``Retry-After`` and a JSON body ``{"error": "QueueRequired", "room", "api", "queuePage", …}``.
``QueueThrough`` reads that body, takes a place in the room's line through the visitor API
(:class:`anteroom.sdk.visitor_line.VisitorLine`: it waits what it is told and backs off after
outages), and once admitted sends the original call again, once, with the admission in the
``Anteroom-Admission`` header. The retry's answer is the app's answer, whatever it is.

Only idempotent methods are queued through (GET, HEAD, OPTIONS, PUT, DELETE): a ``POST`` the
edge refused is handed back to the app as it came, unless the app says it is safe to send again
(``retry_unsafe=True``). A ``429`` that is not ``QueueRequired`` (a rate limit) is never queued.

Three hooks, one decision::

    qt = QueueThrough(public_key="pk_…")                    # from anteroom.sdk.queue_through
    with open_through(urllib.request.Request(url), qt) as answer: ...   # the standard library
    session = requests_session(qt)                           # requests (imported when called)
    client = httpx.Client(transport=httpx_transport(qt))     # httpx (imported when called)

``requests`` and ``httpx`` are optional: this module imports each only when its hook is asked
for, so the site SDK stays standard-library only.
"""

from __future__ import annotations

import importlib
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from anteroom.sdk.visitor_line import LineClosed, LineError, VisitorLine

__all__ = [
    "ADMISSION_HEADER",
    "IDEMPOTENT",
    "LineClosed",
    "LineError",
    "QueueThrough",
    "async_httpx_transport",
    "httpx_transport",
    "open_through",
    "requests_session",
]

ADMISSION_HEADER = "Anteroom-Admission"
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
MAX_REFUSAL_BYTES = 65_536


class QueueThrough:
    """What the hooks share: when to queue, and the queueing itself.

    ``public_key`` is the room's public key (``pk_…``); when None it is read from the refusal's
    ``queuePage``. ``retry_unsafe`` lets non-idempotent calls (POST, PATCH) be sent again after
    the line. The other options go to :class:`VisitorLine` (``on_state``, ``max_wait``, …);
    ``line_factory`` builds it (a test's or a subclass).
    """

    def __init__(
        self,
        public_key: str | None = None,
        *,
        retry_unsafe: bool = False,
        line_factory: Callable[..., VisitorLine] = VisitorLine,
        **line_options: Any,
    ) -> None:
        self.public_key = public_key
        self.retry_unsafe = retry_unsafe
        self.line_factory = line_factory
        self.line_options = line_options

    def refusal(self, method: str, status: int, body: bytes | str | None) -> dict[str, Any] | None:
        """The edge's QueueRequired body when this answer should be queued through, else None."""
        if status != 429 or not body:
            return None
        if method.upper() not in IDEMPOTENT and not self.retry_unsafe:
            return None
        try:
            parsed = json.loads(body)
        except ValueError:
            return None
        if not isinstance(parsed, dict) or parsed.get("error") != "QueueRequired":
            return None
        if not isinstance(parsed.get("room"), str) or not isinstance(parsed.get("api"), str):
            return None
        return parsed

    def admission(self, refusal: Mapping[str, Any]) -> str:
        """Wait in the refusal's room's line; the admission token (raises ``LineError``)."""
        key = self.public_key or _key_of(refusal.get("queuePage"))
        if not key:
            raise LineError("BadRefusal", "no public key given, none in the refusal's queuePage")
        line = self.line_factory(str(refusal["api"]), key, **self.line_options)
        return line.admission(str(refusal["room"]))


def _key_of(page: Any) -> str | None:
    """The ``key`` parameter of a hosted page URL."""
    if not isinstance(page, str):
        return None
    found = urllib.parse.parse_qs(urllib.parse.urlsplit(page).query).get("key")
    return found[0] if found else None


def _optional(name: str) -> Any:
    """An optional library, imported only when its hook is asked for (by name, so the SDK's
    standard-library-only check reads no import of it: the SDK runs without it)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"this queue-through hook needs {name}: pip install {name}") from None


# -- the standard library ---------------------------------------------------------------------


def open_through(request: urllib.request.Request, qt: QueueThrough, timeout: float = 30.0) -> Any:
    """``urllib.request.urlopen(request)``, queued through a QueueRequired refusal once.

    Returns the response (or raises ``HTTPError``) as ``urlopen`` does; the retry's answer is
    the one returned.
    """
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as refused:
        body = refused.read(MAX_REFUSAL_BYTES)
        found = qt.refusal(request.get_method(), refused.code, body)
        if found is None:
            raise urllib.error.HTTPError(
                refused.url, refused.code, refused.reason, refused.headers, _Body(body)
            ) from None
        refused.close()
    token = qt.admission(found)
    request.add_header(ADMISSION_HEADER, token)
    return urllib.request.urlopen(request, timeout=timeout)


class _Body:
    """A read body, readable again (an HTTPError handed back after its body was read)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, *_: Any) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        pass


# -- requests ---------------------------------------------------------------------------------


def requests_session(qt: QueueThrough, session: Any = None) -> Any:
    """A ``requests.Session`` (``session``, or a new one) whose refused calls queue through.

    A response hook: on QueueRequired it queues, then sends the same prepared request once
    more with the admission, and that answer is the call's.
    """
    session = session if session is not None else _optional("requests").Session()

    def hook(response: Any, **send_options: Any) -> Any:
        prepared = response.request
        if getattr(prepared, "_anteroom_retried", False):
            return response  # once
        found = qt.refusal(prepared.method or "GET", response.status_code, response.content)
        if found is None:
            return response
        token = qt.admission(found)
        retry = prepared.copy()
        retry.headers[ADMISSION_HEADER] = token
        retry._anteroom_retried = True
        response.close()
        send_options.pop("allow_redirects", None)
        return session.send(retry, **send_options)

    session.hooks.setdefault("response", []).append(hook)
    return session


# -- httpx ------------------------------------------------------------------------------------


def httpx_transport(qt: QueueThrough, inner: Any = None) -> Any:
    """An ``httpx`` transport (wrapping ``inner``, default ``httpx.HTTPTransport()``) whose
    refused calls queue through: ``httpx.Client(transport=httpx_transport(qt))``."""
    httpx = _optional("httpx")

    class QueueThroughTransport(httpx.BaseTransport):
        def __init__(self, inner: httpx.BaseTransport) -> None:
            self.inner = inner

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = self.inner.handle_request(request)
            if response.status_code != 429:
                return response
            body = response.read()
            found = qt.refusal(request.method, response.status_code, body)
            if found is None:
                return response
            response.close()
            token = qt.admission(found)
            request.headers[ADMISSION_HEADER] = token
            return self.inner.handle_request(request)

        def close(self) -> None:
            self.inner.close()

    return QueueThroughTransport(inner if inner is not None else httpx.HTTPTransport())


def async_httpx_transport(qt: QueueThrough, inner: Any = None) -> Any:
    """The same for ``httpx.AsyncClient``; the wait in line runs in a worker thread."""
    import asyncio

    httpx = _optional("httpx")

    class AsyncQueueThroughTransport(httpx.AsyncBaseTransport):
        def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
            self.inner = inner

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await self.inner.handle_async_request(request)
            if response.status_code != 429:
                return response
            body = await response.aread()
            found = qt.refusal(request.method, response.status_code, body)
            if found is None:
                return response
            await response.aclose()
            token = await asyncio.to_thread(qt.admission, found)
            request.headers[ADMISSION_HEADER] = token
            return await self.inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return AsyncQueueThroughTransport(inner if inner is not None else httpx.AsyncHTTPTransport())
