"""``anteroom.engine``: the public name of :mod:`anteroom.queue.room_engine`."""

from anteroom.queue.room_engine import *  # noqa: F403
from anteroom.queue.room_engine import __all__ as __all__
