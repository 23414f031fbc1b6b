"""The worker class ``anteroom serve`` runs: gunicorn's gevent worker.

Each connection is a greenlet parked on the event loop until its bytes arrive, so silent
connections (a browser's preconnects, a laptop left open) and clients sending their request a
byte a second cost a file descriptor and a little memory each, and delay nobody. gunicorn's
gthread worker gave each new connection to one of a few threads, which then waited for it.

gevent patches the standard library as a worker boots; redis-py, the rooms refresher, the room
ticker and the series sampler then yield on their socket waits and sleeps. The master process
imported ``ssl`` first (redis-py imports it), which gevent warns about: redis-py looks ``ssl``'s
classes up when it connects, after the patch, so the warning is silenced here, not the cause.
"""

from __future__ import annotations

import os
import warnings

from gevent.monkey import MonkeyPatchWarning
from gunicorn.workers.ggevent import GeventWorker


def resolve_in_place() -> None:
    """Have gevent resolve names in the calling greenlet (the OS resolver, /etc/hosts first),
    unless ``GEVENT_RESOLVER`` says otherwise; set before the workers fork.

    The default thread-pool resolver stalled a worker's first lookups for seconds after a fork
    (seen when a worker replaced during an outage first reached for Redis). redis-py resolves
    only as it opens a connection, which its pool then keeps.
    """
    os.environ.setdefault("GEVENT_RESOLVER", "block")


class Worker(GeventWorker):  # type: ignore[misc]
    """gunicorn's gevent worker, without the warning about ``ssl`` imported before the patch."""

    def patch(self) -> None:
        """Patch the standard library for gevent (gunicorn calls this as the worker boots)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Monkey-patching ssl", MonkeyPatchWarning)
            super().patch()
