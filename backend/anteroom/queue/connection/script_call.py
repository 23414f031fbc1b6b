"""One script call on a single Redis, without redis-py's per-command layers.

A near poll, an entry and a refresh are each one EVALSHA, and redis-py's client wraps every
command in layers the scripts do not use (a retry closure, observability records, response
callbacks, the ``Script`` object's own checks): measured on this machine, ~55 µs of CPU a call
on top of the ~27 µs the connection's own send and read cost, which made the wrapping the
largest part of a near poll in the web worker. Here the connection is taken from the client's
own pool and used as redis-py uses it: its health check, parser and encoder, and the client's
own retry policy (``redis_link.connect``'s: a connection error is tried once more on a fresh
connection). A script the server does not know yet (a restarted or new server), a client of a
Cluster or one bound to a single connection go the usual way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis.commands.core import Script


def evalsha(client: Any, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """``script(keys=keys, args=args)`` on ``client``, in one send and one read."""
    if type(client) is not redis.Redis or client.connection is not None:
        return script(keys=keys, args=args, client=client)
    pool = client.connection_pool
    conn = pool.get_connection()

    def call() -> Any:
        conn.send_command("EVALSHA", script.sha, len(keys), *keys, *args)
        return conn.read_response()

    try:
        # As redis-py's client: a failed attempt drops the connection (the next reconnects).
        return conn.retry.call_with_retry(call, lambda _error: conn.disconnect())
    except redis.exceptions.NoScriptError:
        pass  # loaded below, as redis-py's Script does
    finally:
        pool.release(conn)
    return script(keys=keys, args=args, client=client)
