"""``anteroom.edge``: the public name of :mod:`anteroom.sdk.wsgi_edge` (see the README)."""

from anteroom.sdk.wsgi_edge import *  # noqa: F403
from anteroom.sdk.wsgi_edge import __all__ as __all__
