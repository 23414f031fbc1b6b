"""The OpenAPI 3.1 document of every API (docs/management-api.md), served at /api/openapi.json.

Built from the routes as declared (:mod:`anteroom.web.api.api_routes`), which the views are
registered from too: every schema is generated from the pydantic models the views validate with
and answer by (``*_models``), error codes come from the exception classes, scopes from
:data:`keystore.SCOPES`. The fuzz test (tests/integration/test_openapi.py) holds
the rest to account: every answer of the real app must match this document.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from anteroom import __version__
from anteroom.store import keystore
from anteroom.web.api import api_models as shapes
from anteroom.web.api import api_routes as routes
from anteroom.web.manage import event_models, invite_models, key_models
from anteroom.web.manage import management_models as management

Schema = dict[str, Any]
REF = "#/components/schemas/{model}"
ROOM = "q0123456789abcdef"  # a room id, for the examples


class _Generator(GenerateJsonSchema):
    """Pydantic's JSON Schema without a title on every property (the names say it)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _schemas() -> dict[str, Schema]:
    """Every model's schema: requests as validated, answers as serialized."""
    requests = dict.fromkeys(r.body for r in routes.ROUTES if r.body)
    replies = (reply for r in routes.ROUTES for reply in r.answers.values())
    answers = dict.fromkeys([shapes.Error, *(reply.model for reply in replies if reply.model)])
    models: list[tuple[type[BaseModel], Any]] = [
        *((m, "validation") for m in requests),
        *((m, "serialization") for m in answers),
    ]
    _, top = models_json_schema(models, ref_template=REF, schema_generator=_Generator)
    return dict(sorted(top["$defs"].items()))


def _ref(name: str) -> Schema:
    return {"$ref": REF.format(model=name)}


ENVIRONMENT: Schema = {"name": "environment", "in": "query", "required": False}
ENVIRONMENT["description"] = (
    "The environment the call works in, such as prod or staging: it must be the key's own, "
    "which is also what leaving it out means."
)
ENVIRONMENT["schema"] = {"type": "string", "examples": ["prod"]}
EVENT_ID: Schema = {
    "name": "eventId",
    "in": "path",
    "required": True,
    "description": "The event, as its creation answered it.",
    "schema": {"type": "string", "pattern": event_models.EVENT_ID, "examples": ["ev0123456789ab"]},
}
INVITE_ID: Schema = {
    "name": "inviteId",
    "in": "path",
    "required": True,
    "description": "The invite, by the id its issue (or the room's list of invites) answered.",
    "schema": {"type": "string", "pattern": invite_models.INVITE_ID.pattern,
               "examples": [invite_models.INVITE_ID_EXAMPLE]},
}  # fmt: skip
KEY_ID: Schema = {
    "name": "keyId",
    "in": "path",
    "required": True,
    "description": "The key, by its id (the part of its secret after sk_, as the list shows).",
    "schema": {"type": "string", "pattern": keystore.KEY_ID.pattern,
               "examples": [key_models.KEY_ID_EXAMPLE]},
}  # fmt: skip
ROOM_ID: Schema = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "The room's id, as its creation (or the list of rooms) answered it.",
    "schema": {"type": "string"},
}
SLUG: Schema = {
    "name": "slug",
    "in": "path",
    "required": True,
    "description": "The room's slug: the short name in its public address.",
    "schema": {"type": "string", "examples": ["spring-drop"]},
}


def _answer(reply: routes.Reply) -> Schema:
    """A shared answer: an error with its codes, a model's JSON, or no body."""
    out: Schema = {"description": reply.description}
    if reply.headers:
        out["headers"] = {name: {"required": True} | h for name, h in reply.headers.items()}
    schema: Schema | None = None
    if reply.errors:
        schema = {"allOf": [_ref("Error")], "properties": {"error": {"enum": list(reply.errors)}}}
        if "Retry-After" in reply.headers:
            schema["required"] = ["retryAfter"]
    elif reply.model is not None:
        schema = _ref(reply.model.__name__)
    elif reply.any_object:
        schema = {"type": "object"}
    if schema is not None:
        out["content"] = {"application/json": {"schema": schema}}
    return out


def _query(model: type[BaseModel]) -> list[Schema]:
    """The query parameters a model reads (none required)."""
    properties = model.model_json_schema(schema_generator=_Generator)["properties"]
    return [
        {"name": n, "in": "query", "required": False, "description": s.get("description", "")}
        | {"schema": s}
        for n, s in properties.items()
    ]


def _operation(route: routes.Route) -> Schema:
    tag, security = route.tag, []
    if route.scope is not None:
        security = [{"secretKey": [route.scope]}]
    op: Schema = {"tags": [tag], "operationId": route.operation_id, "summary": route.summary}
    op["security"] = security
    if route.scope is not None:
        op["description"] = f"Needs the `{route.scope}` scope." + route.notes
    elif route.notes:
        op["description"] = route.notes.strip()
    if route.body is not None:
        content = {"application/json": {"schema": _ref(route.body.__name__)}}
        op["requestBody"] = {"required": True, "content": content}
    parameters = [ENVIRONMENT] if route.takes_environment else []
    if route.query is not None:
        parameters += _query(route.query)
    if parameters:
        op["parameters"] = parameters
    responses = {
        str(status): {"$ref": f"#/components/responses/{reply.name}"}
        for status, reply in route.answers.items()
    }
    return op | {"responses": dict(sorted(responses.items()))}


def _paths() -> dict[str, Schema]:
    pattern = management.ROOM_ID.pattern
    room_id = ROOM_ID | {"schema": {"type": "string", "pattern": pattern, "examples": [ROOM]}}
    paths: dict[str, Schema] = {}
    for route in routes.ROUTES:
        item = paths.setdefault(route.path, {})
        if "{id}" in route.path:
            item.setdefault("parameters", [room_id])
        if "{eventId}" in route.path:
            item["parameters"] = [room_id, EVENT_ID]
        if "{inviteId}" in route.path:
            item["parameters"] = [room_id, INVITE_ID]
        if "{keyId}" in route.path:
            item["parameters"] = [KEY_ID]
        if "{slug}" in route.path:
            item.setdefault("parameters", [SLUG])
        item[route.method] = _operation(route)
    return paths


def _responses() -> dict[str, Schema]:
    """Every answer some route gives, by name, in the order first given."""
    replies = {reply.name: reply for r in routes.ROUTES for reply in r.answers.values()}
    return {name: _answer(reply) for name, reply in replies.items()}


@cache
def _build() -> Schema:
    scopes = ", ".join(keystore.SCOPES)
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {
            "title": "Anteroom",
            "version": __version__,
            "summary": "A self-hosted virtual waiting room.",
            "description": "The visitor API (public key pk_… in the body), the management API "
            "(secret key sk_… as a Bearer token) and the probes. Every error is JSON "
            "{error, message, fields?, retryAfter?}; every answer that asks the client to "
            "wait carries Retry-After.",
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "tags": [
            {"name": "visitor", "description": "Called by the browser agent and API clients."},
            {"name": "management", "description": "Called by operators with a secret key."},
            {"name": "health", "description": "Probes for load balancers and orchestrators."},
            {"name": "fairness", "description": "A room's draw, public: what anyone checks."},
            {"name": "docs", "description": "This document."},
        ],
        "paths": _paths(),
        "components": {
            "schemas": _schemas(),
            "responses": _responses(),
            "securitySchemes": {
                "secretKey": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "sk_<key id>_<random>",
                    "description": f"A key from `anteroom keys create` (or createKey); its "
                    f"scopes: {scopes}.",
                }
            },
        },
    }


def document() -> Schema:
    """The OpenAPI 3.1 document (a fresh copy: callers may change it)."""
    return copy.deepcopy(_build())
