"""CPU-heavy or blocking work kept off a gevent worker's event loop.

In a gevent worker every "thread" of the process (the room ticker, the draw worker, the
requests) is a greenlet on one event loop: a draw's ordering of 100,000 entrants (seconds of
CPU), a receipt tree's build or a blocking name lookup would hold all of them. Such work runs
in one of gevent's real OS threads instead while the calling greenlet waits; elsewhere (plain
threads, tests) it runs in the calling thread, which is already off everyone else's way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["gevent_patched", "off_the_loop"]


def gevent_patched() -> bool:
    """True in a process whose standard library gevent patched (a gevent worker)."""
    try:
        from gevent import monkey
    except ImportError:  # pragma: no cover - gevent is a dependency of the server
        return False
    return bool(monkey.is_module_patched("socket"))


def off_the_loop(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``, in a real OS thread when this is a gevent worker (the other greenlets
    run meanwhile; the GIL is shared as between any threads)."""
    if not gevent_patched():
        return call(*args)
    import gevent

    return gevent.get_hub().threadpool.apply(call, args)  # type: ignore[no-any-return]
