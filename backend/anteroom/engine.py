"""``anteroom.engine``: the public name of :mod:`anteroom.queue.line.room_engine`."""

from anteroom.queue.line.room_engine import *  # noqa: F403
from anteroom.queue.line.room_engine import __all__ as __all__
