"""``anteroom.verify``: the public name of :mod:`anteroom.sdk.verification` (see docs/edge.md)."""

from anteroom.sdk.verification import *  # noqa: F403
from anteroom.sdk.verification import __all__ as __all__
