"""``anteroom.edge``: the edge's public names (see docs/edge.md, "Protect whole paths").

:mod:`anteroom.sdk.wsgi_edge` (WSGI, Flask), :mod:`anteroom.sdk.asgi_edge` (ASGI: FastAPI,
Starlette) and :mod:`anteroom.sdk.django_edge` (a Django middleware class), all on one decision.
"""

from anteroom.sdk.asgi_edge import AnteroomASGIMiddleware
from anteroom.sdk.django_edge import AnteroomDjangoMiddleware
from anteroom.sdk.wsgi_edge import *  # noqa: F403
from anteroom.sdk.wsgi_edge import __all__ as _wsgi_all

__all__ = [*_wsgi_all, "AnteroomASGIMiddleware", "AnteroomDjangoMiddleware"]
