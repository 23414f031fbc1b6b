"""One small shop per framework, behind the edge, for the framework matrix (test_edge_matrix.py).

Each shop has the same views: ``/products`` is public; ``/checkout``, ``/checkout/`` and
``/api/cart/<item>`` are protected and say so in their body (``PROTECTED …``), and answer any
method a framework lets a view answer (a Django function view answers all of them). Where the
framework routes case-insensitively or by language, the shop does so as its users would write
it: Django's ``re_path(r"(?i)^checkout/$")`` and ``i18n_patterns``, Bottle's ``(?i:…)`` filter.

Served as a child process: ``python matrix_apps.py SERVER FRAMEWORK PORT`` (servers: ``sync``
and ``gthread`` for gunicorn, ``wsgiref``, ``uvicorn``). No Anteroom is needed: without an
admission every protected request is refused offline.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from helpers import TEST_KEYS

ROUTES = {"/checkout": "drop", "/api/cart": "drop"}
EDGE: dict[str, Any] = {
    "keys": TEST_KEYS,
    "base_url": "http://127.0.0.1:9",  # nothing listens: admitted visitors must not need it
    "public_key": "pk_test",
    "routes": ROUTES,
    "secure_cookie": False,
    "languages": ["fr"],  # Django's i18n_patterns: /fr/checkout/ is the checkout too
}
WSGI_FRAMEWORKS = ("flask", "django", "bottle", "falcon")
ASGI_FRAMEWORKS = ("fastapi",)


def flask_app() -> Any:
    from flask import Flask

    from anteroom.edge import AnteroomEdge

    app = Flask("matrix")
    every = ["GET", "POST", "PUT", "DELETE", "OPTIONS"]

    @app.get("/products")
    def products() -> str:
        return "products"

    @app.route("/checkout", methods=every)
    @app.route("/checkout/", methods=every)
    def checkout() -> str:
        return "PROTECTED checkout"

    @app.route("/api/cart/<item>", methods=every)
    def cart(item: str) -> str:
        return f"PROTECTED cart {item}"

    AnteroomEdge(app, **EDGE)
    return app


def django_app() -> Any:
    import django
    from django.conf import settings
    from django.conf.urls.i18n import i18n_patterns
    from django.core.wsgi import get_wsgi_application
    from django.http import HttpRequest, HttpResponse
    from django.urls import path, re_path

    def products(request: HttpRequest) -> HttpResponse:
        return HttpResponse("products")

    def checkout(request: HttpRequest) -> HttpResponse:
        return HttpResponse("PROTECTED checkout")

    def cart(request: HttpRequest, item: str) -> HttpResponse:
        return HttpResponse(f"PROTECTED cart {item}")

    urls = ModuleType("matrix_urls")  # the URLconf, a module Django imports by name
    sys.modules[urls.__name__] = urls
    settings.configure(
        DEBUG=False,
        SECRET_KEY="matrix",
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=urls.__name__,
        USE_I18N=True,
        LANGUAGE_CODE="en",
        LANGUAGES=[("en", "English"), ("fr", "French")],
        MIDDLEWARE=[
            "anteroom.edge.AnteroomDjangoMiddleware",
            "django.middleware.locale.LocaleMiddleware",
        ],
        ANTEROOM_EDGE=EDGE,
        INSTALLED_APPS=[],
        DATABASES={},
    )
    urls.urlpatterns = [
        path("products", products),
        path("checkout", checkout),
        re_path(r"(?i)^checkout/$", checkout),
        path("api/cart/<str:item>", cart),
        *i18n_patterns(path("checkout/", checkout), prefix_default_language=False),
    ]
    django.setup()
    return get_wsgi_application()


def bottle_app() -> Any:
    import bottle

    from anteroom.edge import AnteroomMiddleware

    app = bottle.Bottle()
    app.route("/products", "GET", lambda: "products")
    app.route("/<name:re:(?i:checkout)>", "ANY", lambda name: "PROTECTED checkout")
    app.route("/<name:re:(?i:checkout)>/", "ANY", lambda name: "PROTECTED checkout")
    app.route("/api/cart/<item>", "ANY", lambda item: f"PROTECTED cart {item}")
    return AnteroomMiddleware(app, **EDGE)


def falcon_app() -> Any:
    import falcon

    from anteroom.edge import AnteroomMiddleware

    class Page:
        def __init__(self, body: str) -> None:
            self.body = body

        def on_get(self, req: Any, resp: Any, **params: str) -> None:
            resp.content_type = "text/plain"
            resp.text = self.body.format(**params)

        on_post = on_put = on_delete = on_options = on_get

    app = falcon.App()
    app.add_route("/products", Page("products"))
    app.add_route("/checkout", Page("PROTECTED checkout"))
    app.add_route("/checkout/", Page("PROTECTED checkout"))
    app.add_route("/api/cart/{item}", Page("PROTECTED cart {item}"))
    return AnteroomMiddleware(app, **EDGE)


def fastapi_app() -> Any:
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    from anteroom.edge import AnteroomASGIMiddleware

    app = FastAPI()
    every = ["GET", "POST", "PUT", "DELETE", "OPTIONS"]

    @app.get("/products", response_class=PlainTextResponse)
    def products() -> str:
        return "products"

    @app.api_route("/checkout", methods=every, response_class=PlainTextResponse)
    @app.api_route("/checkout/", methods=every, response_class=PlainTextResponse)
    def checkout() -> str:
        return "PROTECTED checkout"

    @app.api_route("/api/cart/{item}", methods=every, response_class=PlainTextResponse)
    def cart(item: str) -> str:
        return f"PROTECTED cart {item}"

    app.add_middleware(AnteroomASGIMiddleware, **EDGE)
    return app


def make_app(framework: str) -> Any:
    """The shop for ``framework``, behind the edge (a WSGI or an ASGI app)."""
    return globals()[f"{framework}_app"]()


def serve(server: str, framework: str, port: int) -> None:
    """Serve the shop on 127.0.0.1:``port`` until killed."""
    app = make_app(framework)
    if server == "uvicorn":
        import uvicorn

        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    elif server == "wsgiref":
        from wsgiref.simple_server import WSGIRequestHandler, make_server

        class Quiet(WSGIRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

        make_server("127.0.0.1", port, app, handler_class=Quiet).serve_forever()
    else:
        from gunicorn.app.base import BaseApplication

        class Server(BaseApplication):  # type: ignore[misc]
            def load_config(self) -> None:
                self.cfg.set("bind", f"127.0.0.1:{port}")
                self.cfg.set("workers", 1)
                self.cfg.set("worker_class", server)
                self.cfg.set("threads", 2 if server == "gthread" else 1)
                self.cfg.set("loglevel", "warning")

            def load(self) -> Any:
                return app

        Server().run()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], int(sys.argv[3]))
