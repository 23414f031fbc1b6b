"""The OpenAPI 3.1 document of every API, at ``GET /api/openapi.json``."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from flask.typing import ResponseReturnValue

from anteroom.web.api import api_routes as routes
from anteroom.web.api import openapi_document as openapi

bp = Blueprint("docs", __name__)


@routes.view(bp, routes.OPENAPI)
def openapi_json() -> ResponseReturnValue:
    """The document; public, so tooling on any origin (a Swagger UI, a generator) may read it."""
    response: Response = jsonify(openapi.document())
    response.headers["Access-Control-Allow-Origin"] = "*"
    response.headers["Cache-Control"] = "public, max-age=300"
    return response
