"""The worker class ``anteroom serve`` runs: gunicorn's gevent worker.

Each connection is a greenlet parked on the event loop until its bytes arrive, so silent
connections (a browser's preconnects, a laptop left open) and clients sending their request a
byte a second cost a file descriptor and a little memory each, and delay nobody. gunicorn's
gthread worker gave each new connection to one of a few threads, which then waited for it.

gevent patches the standard library as a worker boots; redis-py, the rooms refresher, the room
ticker and the series sampler then yield on their socket waits and sleeps. The master process
imported ``ssl`` first (redis-py imports it), which gevent warns about: redis-py looks ``ssl``'s
classes up when it connects, after the patch, so the warning is silenced here, not the cause.

Thousands of connections from one client are another matter: each request has a deadline for its
headers and body, and one address a cap on the connections it holds open in a worker
(ops/connection_limits.py).
"""

from __future__ import annotations

import os
import socket
import time
import warnings
from typing import Any

import gevent
from gevent.local import local
from gevent.monkey import MonkeyPatchWarning
from gunicorn.workers.ggevent import GeventWorker

from anteroom.config import Settings
from anteroom.ops.connection_limits import Limits, OpenCounts, RequestGuard
from anteroom.web.serving import metrics

# How long a closing connection hears out the rest of a body the server did not read.
LINGER_SECONDS = 5.0


def resolve_in_place() -> None:
    """Have gevent resolve names in the calling greenlet (the OS resolver, /etc/hosts first),
    unless ``GEVENT_RESOLVER`` says otherwise; set before the workers fork.

    The default thread-pool resolver stalled a worker's first lookups for seconds after a fork
    (seen when a worker replaced during an outage first reached for Redis). redis-py resolves
    only as it opens a connection, which its pool then keeps.
    """
    os.environ.setdefault("GEVENT_RESOLVER", "block")


class Worker(GeventWorker):  # type: ignore[misc]
    """gunicorn's gevent worker with the connection limits, without the warning about ``ssl``
    imported before the patch.

    ``anteroom serve`` hands the limits over as its application's ``connection_limits``; under
    plain gunicorn they are read from the environment.
    """

    def init_process(self) -> None:
        """Set up this worker's limits, then boot as gunicorn's gevent worker does."""
        given = getattr(self.app, "connection_limits", None)
        self.limits = (
            given if isinstance(given, Limits) else Limits.from_settings(Settings.from_env())
        )
        self.open_connections = OpenCounts(self.limits.per_address)
        # Per connection (each has its own greenlet): when the wait for its current request
        # began, and that request, which the guard may have closed after its answer.
        self.connection = local()
        super().init_process()

    def patch(self) -> None:
        """Patch the standard library for gevent (gunicorn calls this as the worker boots)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Monkey-patching ssl", MonkeyPatchWarning)
            super().patch()

    def load_wsgi(self) -> None:
        """Load the app and put the request guard around it (outermost, so it sees the peer's
        own address and the body before anything reads it)."""
        super().load_wsgi()
        app = self.wsgi
        app.wsgi_app = RequestGuard(
            app, app.wsgi_app, self.limits, self._deadline, self._close, self._listener
        )

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        """Serve one accepted connection, unless its address holds its cap already: then it is
        closed at once, before anything is read."""
        key = self.limits.peer_key(addr)
        if key is not None and not self.open_connections.take(key):
            self._refuse(key, client)
            return
        self.connection.since = time.monotonic()
        try:
            super().handle(listener, client, addr)
        finally:
            if key is not None:
                self.open_connections.give(key)

    def timeout_ctx(self) -> Any:
        """The wait for a request's headers (gunicorn calls this before each): its deadline
        starts now; the headers alone get the keep-alive wait, or the deadline if shorter."""
        self.connection.since = time.monotonic()
        return gevent.Timeout(min(self.cfg.keepalive, self.limits.request_timeout), False)

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> Any:
        """Serve one request (gunicorn's), the guard able to close its connection after it."""
        self.connection.request = req
        self.connection.listener = listener_name
        self.connection.closing = False
        try:
            return super().handle_request(listener_name, req, sock, addr)
        except StopIteration:  # gunicorn's word for "close this connection now"
            if self.connection.closing:
                linger(sock, LINGER_SECONDS)
            raise
        finally:
            self.connection.request = None

    def _listener(self) -> Any:
        """The socket name of the listener that accepted the current request's connection."""
        return getattr(self.connection, "listener", None)

    def _deadline(self) -> float:
        """When the current request must be in whole (``time.monotonic()`` seconds)."""
        since: float = self.connection.since
        return since + self.limits.request_timeout

    def _close(self) -> None:
        """Close the current request's connection once it is answered."""
        req = getattr(self.connection, "request", None)
        if req is not None:
            req.force_close()
            self.connection.closing = True

    def _refuse(self, key: str, client: Any) -> None:
        metrics.CONNECTION_LIMITS.labels("per_address").inc()
        if self.open_connections.first_refusal(key):
            self.log.warning(
                "%s holds %d open connections to this worker (ANTEROOM_CONNECTIONS_PER_ADDRESS):"
                " closing its next ones as they come (logged once a minute)",
                key,
                self.limits.per_address,
            )
        client.close()


def linger(sock: socket.socket, seconds: float) -> None:
    """Read and drop what the client still sends, for up to ``seconds``, after the answer.

    The guard answers an over-long or late body without reading the rest of it. Closing a socket
    with bytes unread makes the kernel send a reset, and a client that sends its whole body before
    it reads (http.client, many mobile stacks) then sees "connection reset" instead of the 413
    that was already on its way. Shutting the write side tells the client the answer is complete;
    draining lets it finish sending and read it. nginx's lingering close does the same.
    """
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        return  # the client is gone already
    with gevent.Timeout(seconds, False):
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass
