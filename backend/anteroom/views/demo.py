"""The demo storefront (demo mode only): a shop embedding the agent, a checkout verifying."""

from __future__ import annotations

import time

from flask import Blueprint, Response, current_app, render_template, request
from flask.typing import ResponseReturnValue

from ..demo import DEMO_SLUG
from ..verify import verify_admission
from .pages import secure

bp = Blueprint("demo", __name__, url_prefix="/demo")


@bp.get("/shop")
def shop() -> ResponseReturnValue:
    """A storefront page that queues with one script tag and ``enterQueue``."""
    return secure(Response(render_template("demo_shop.html"), mimetype="text/html"))


@bp.get("/checkout")
def checkout() -> ResponseReturnValue:
    """Accept the visitor only with a valid admission (``?abq=``), checked offline."""
    keyring = current_app.extensions["anteroom"].keyring
    result = verify_admission(request.args.get("abq", ""), keyring, room=DEMO_SLUG)
    seconds_left = int(result.claims["exp"] - time.time()) if result.valid and result.claims else 0
    html = render_template("demo_checkout.html", result=result, seconds_left=seconds_left)
    return secure(Response(html, status=200 if result.valid else 403, mimetype="text/html"))
