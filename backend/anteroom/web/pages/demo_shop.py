"""The demo storefront (demo mode only): a shop embedding the agent, a checkout behind the edge."""

from __future__ import annotations

import time

from flask import Blueprint, Flask, Response, render_template, request
from flask.typing import ResponseReturnValue

from anteroom.config import Settings
from anteroom.sdk.wsgi_edge import AnteroomEdge, admission
from anteroom.web.pages.hosted_pages import secure

bp = Blueprint("demo", __name__, url_prefix="/demo")

# The demo's names: `anteroom serve` seeds them (ops/demo_seed.py), the pages here use them.
DEMO_ENV = "demo"
DEMO_PUBLIC_KEY = "pk_demo"
DEMO_SLUG = "demo"


def served_at(bind: str) -> str:
    """The base URL a local ``bind`` (``host:port``) is reached at (as ``anteroom serve`` logs)."""
    host, _, port = bind.rpartition(":")
    host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"http://{host}:{port}"


def protect(app: Flask, settings: Settings) -> AnteroomEdge:
    """Put the checkout behind ``anteroom.edge``, exactly as a site would protect its own."""
    return AnteroomEdge(
        app,
        keys=settings.keys,
        base_url=served_at(settings.bind),
        public_key=DEMO_PUBLIC_KEY,
        routes={"/demo/checkout": DEMO_SLUG},
        secure_cookie=False,  # the demo is served over plain http (an https request still gets it)
    )


@bp.get("/shop")
def shop() -> ResponseReturnValue:
    """A storefront page that queues with one script tag and ``enterQueue``."""
    return secure(Response(render_template("demo_shop.html"), mimetype="text/html"))


@bp.get("/checkout")
def checkout() -> ResponseReturnValue:
    """Only admitted visitors get here: the edge middleware checked their admission offline."""
    claims = admission(request.environ)
    seconds_left = int(claims["exp"] - time.time()) if claims else 0
    html = render_template("demo_checkout.html", claims=claims, seconds_left=seconds_left)
    # Without claims the middleware is not in front (a wiring mistake): still refuse.
    return secure(Response(html, status=200 if claims else 403, mimetype="text/html"))
