"""A Flask shop with two protected views behind ``AnteroomEdge``, for the bypass tests.

No Anteroom is needed: without an admission every request is refused offline. Served in-process
(werkzeug, wsgiref) or by gunicorn (``gunicorn guarded_shop:app``), which hands ``//checkout``
on to the app as it is.
"""

from __future__ import annotations

from flask import Flask
from flask.typing import ResponseReturnValue

from anteroom.edge import AnteroomEdge
from helpers import TEST_KEYS


def guarded_shop() -> Flask:
    """The shop: its protected views say so in their body."""
    shop = Flask("guarded")

    @shop.route("/checkout")
    def checkout() -> ResponseReturnValue:
        return "PROTECTED checkout"

    @shop.route("/shop/cart/<path:rest>")
    def cart(rest: str) -> ResponseReturnValue:
        return f"PROTECTED cart {rest}"

    AnteroomEdge(shop, keys=TEST_KEYS, base_url="http://127.0.0.1:9", public_key="pk_test",
                 routes={"/checkout": "drop", "/shop/cart": "drop"})  # fmt: skip
    return shop


app = guarded_shop()
