"""The OpenAPI 3.1 document of every API (SPEC "Management API"), served at /api/openapi.json.

Only the path wiring is written here: every schema is generated from the pydantic models the
views validate with and answer by (``*_models``), error codes come from the exception classes,
scopes from :data:`keystore.SCOPES`. The fuzz test (tests/integration/test_openapi.py) holds
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
from anteroom.web import api_models as shapes
from anteroom.web import audit_models as audit
from anteroom.web import management_models as management
from anteroom.web import series_models as series
from anteroom.web import visitor_models as visitor

Schema = dict[str, Any]
REF = "#/components/schemas/{model}"


class _Generator(GenerateJsonSchema):
    """Pydantic's JSON Schema without a title on every property (the names say it)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _schemas() -> dict[str, Schema]:
    """Every model's schema: requests as validated, answers as serialized."""
    answers = (shapes.Error, shapes.Alive, shapes.Ready, shapes.NotReady)
    answers += visitor.ANSWERS + management.ANSWERS + audit.ANSWERS + series.ANSWERS
    models: list[tuple[type[BaseModel], Any]] = [
        *((m, "validation") for m in visitor.REQUESTS + management.REQUESTS + audit.REQUESTS),
        *((m, "serialization") for m in answers),
    ]
    _, top = models_json_schema(models, ref_template=REF, schema_generator=_Generator)
    return dict(sorted(top["$defs"].items()))


def _ref(name: str) -> Schema:
    return {"$ref": REF.format(model=name)}


RETRY_AFTER: Schema = {"description": "Seconds to wait before asking again."}
RETRY_AFTER["schema"] = {"type": "integer", "minimum": 1}
WAIT = {"Retry-After": RETRY_AFTER}
BEARER: Schema = {"schema": {"type": "string", "pattern": "^Bearer"}}

# Every answer, by name: (description, error codes or the model of the body, headers).
# An error answer with Retry-After also carries retryAfter.
# fmt: off
ANSWERS: dict[str, tuple[str, list[str] | str, dict[str, Schema]]] = {
    "BadRequest": ("The request is not valid; fields names each problem.", ["BadRequest"], {}),
    "VisitorUnauthorized": ("Unknown apiKey, or a token that is not valid or has expired.",
                            shapes.error_codes(401), {}),
    "ManagementUnauthorized": (
        "No valid secret key.", ["Unauthorized"], {"WWW-Authenticate": BEARER}),
    "Forbidden": (
        "The key lacks the scope, or belongs to another environment.", ["Forbidden"], {}),
    "EnterForbidden": (
        "The session is convicted, revoked, or the room needs a visible client address.",
        ["QueueDenied", "SessionRevoked", "AddressRequired"], {}),
    "SpotForbidden": (
        "The session has been revoked, or (while Redis is unreachable) a bindIp room sees no "
        "client address.", ["SessionRevoked", "AddressRequired"], {}),
    "RoomNotFound": ("No such room.", ["RoomNotFound", "NotFound"], {}),
    "TicketGone": ("The spot or its room is gone; enter again.", ["TicketGone"], {}),
    "PayloadTooLarge": ("The body is larger than 16 KiB.", ["PayloadTooLarge"], {}),
    "RateLimited": ("Too many requests.", ["RateLimited"], WAIT),
    "SpotBusy": ("Polled too often, or Redis is out of memory.", ["RateLimited", "Busy"],
                 WAIT),
    "EnterBusy": ("Polled too often, the line is full, or Redis is out of memory.",
                  ["RateLimited", "QueueFull", "Busy"], WAIT),
    "Busy": ("Redis is out of memory; nothing was changed.", ["Busy"], WAIT),
    "Unavailable": ("Redis is unreachable.", ["Unavailable"], WAIT),
    "Challenge": ("A signed challenge, its puzzles and the work they take.", "Challenge", {}),
    "Session": ("A session token, its score and signals.", "Session", {}),
    "QueueAnswer": ("A queue answer; Retry-After is set while it asks the client to wait.",
                    "QueueAnswer", {"Retry-After": RETRY_AFTER | {"required": False}}),
    "Left": ("Left (also when there was nothing left to free).", "", {}),
    "RoomList": ("The rooms.", "RoomList", {}),
    "RoomCreated": ("The new room.", "Room", {"Location": {"schema": {"type": "string"}}}),
    "Room": ("The room after the change.", "Room", {}),
    "RoomDetail": ("The room.", "RoomDetail", {}),
    "Deleted": ("Deleted.", "", {}),
    "Revocation": ("Revoked; recorded as a session.revoked event.", "Revocation", {}),
    "AuditPage": ("One page of events.", "AuditPage", {}),
    "Series": ("The room's numbers over time, one point per step.", "Series", {}),
    "Alive": ("Up.", "Alive", {}),
    "Ready": ("Ready.", "Ready", {}),
    "NotReady": ("Not ready.", "NotReady", {}),
    "Document": ("The OpenAPI 3.1 document.", "object", {}),
}
VISITOR = "400:BadRequest 401:VisitorUnauthorized 413:PayloadTooLarge 503:Unavailable"
SPOT = f"{VISITOR} 410:TicketGone 429:SpotBusy"
READ = "401:ManagementUnauthorized 403:Forbidden 429:Busy 503:Unavailable"
WRITE = f"{READ} 400:BadRequest 413:PayloadTooLarge"
QUEUES, ROOM = "/api/management/v1/queues", "/api/management/v1/queues/{id}"
SERIES = ROOM + "/series"
# path, method, operationId, scope (management) or tag, request body, answers, summary
OPERATIONS = [
    ("/api/v1/challenge", "post", "createChallenge", "visitor", "ChallengeRequest",
     f"{VISITOR} 200:Challenge 429:RateLimited", "A proof-of-work challenge"),
    ("/api/v1/identify", "post", "identify", "visitor", "IdentifyRequest",
     f"{VISITOR} 200:Session 429:RateLimited", "Trade a solved challenge for a session token"),
    ("/api/v1/queue/enter", "post", "enterQueue", "visitor", "EnterRequest",
     f"{SPOT} 200:QueueAnswer 403:EnterForbidden 404:RoomNotFound 429:EnterBusy",
     "Take (or find again) the session's spot in a room"),
    ("/api/v1/queue/poll", "post", "pollQueue", "visitor", "TicketRequest",
     f"{SPOT} 200:QueueAnswer 403:SpotForbidden", "Poll a spot with its queueToken"),
    ("/api/v1/queue/leave", "post", "leaveQueue", "visitor", "TicketRequest",
     f"{SPOT} 204:Left", "Leave the line: frees a waiting spot or an active slot"),
    ("/api/v1/admission/refresh", "post", "refreshAdmission", "visitor", "RefreshRequest",
     f"{SPOT} 200:QueueAnswer 403:SpotForbidden", "A fresh admission; extends the active slot"),
    ("/api/management/v1/sessions/revoke", "post", "revokeSession", "queues:write",
     "RevokeRequest", f"{WRITE} 200:Revocation",
     "Revoke a session (jti) or visitor (vid) in every room of the environment"),
    (QUEUES, "get", "listQueues", "queues:read", None, f"{READ} 200:RoomList",
     "Every room of the environment, by slug"),
    (QUEUES, "post", "createQueue", "queues:write", "RoomCreate", f"{WRITE} 201:RoomCreated",
     "Create a room (idle until opened)"),
    (ROOM, "get", "getQueue", "queues:read", None, f"{READ} 200:RoomDetail 404:RoomNotFound",
     "A room's configuration, status, live stats and, while open, its line"),
    (SERIES, "get", "getQueueSeries", "queues:read", None,
     f"{READ} 200:Series 400:BadRequest 404:RoomNotFound",
     "The room's numbers over time: every 10 s for 24 h, every minute for 14 days"),
    (ROOM, "patch", "updateQueue", "queues:write", "RoomPatch",
     f"{WRITE} 200:Room 404:RoomNotFound",
     "Change configuration fields (not slug) and/or run an action"),
    (ROOM, "delete", "deleteQueue", "queues:write", None, f"{READ} 204:Deleted 404:RoomNotFound",
     "Delete a room and all its state; its tickets answer 410, its slug is free"),
    ("/api/management/v1/audit", "get", "listAuditEvents", "audit:read", None,
     f"{READ} 200:AuditPage 400:BadRequest", "The environment's audit events, newest first"),
    ("/healthz", "get", "healthz", "health", None, "200:Alive", "Liveness: the process is up"),
    ("/readyz", "get", "readyz", "health", None, "200:Ready 503:NotReady",
     "Readiness: Redis answers and every Lua script is loaded"),
    ("/api/openapi.json", "get", "openapi", "docs", None, "200:Document", "This document"),
]
# fmt: on
ENVIRONMENT: Schema = {"name": "environment", "in": "query", "required": False}
ENVIRONMENT["description"] = "Must be the key's environment (the default)."
ENVIRONMENT["schema"] = {"type": "string"}
ROOM_ID: Schema = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
NOTES = {
    "getQueueSeries": " Samples are taken every 10 s (kept 24 h) and every minute (kept 14"
    " days) by the service itself; a window's gauges (waiting, held, active, rate, capacity)"
    " are its last sample's, its counts (admitted, entries, refusals, leaves, abandoned, the"
    " wait histogram) what was added during it. Null: no sample in that window.",
    "revokeSession": " Its spots answer SessionRevoked at their next poll (a vid's are dropped"
    " at once), its admissions can no longer be refreshed and it cannot enter again; an"
    " admission already issued stays valid offline until its exp. Revocations expire by"
    " themselves after the longest token life (6 h, or a room's queue-token or admission life"
    " if longer).",
}


def _answer(description: str, body: list[str] | str, headers: dict[str, Schema]) -> Schema:
    """A shared answer: an error with these codes, a model's JSON, or no body."""
    out: Schema = {"description": description}
    if headers:
        out["headers"] = {name: {"required": True} | h for name, h in headers.items()}
    if isinstance(body, list):
        schema: Schema = {"allOf": [_ref("Error")], "properties": {"error": {"enum": body}}}
        if "Retry-After" in headers:
            schema["required"] = ["retryAfter"]
        out["content"] = {"application/json": {"schema": schema}}
    elif body:
        schema = {"type": "object"} if body == "object" else _ref(body)
        out["content"] = {"application/json": {"schema": schema}}
    return out


def _query(model: type[BaseModel]) -> list[Schema]:
    """The query parameters a model reads (none required)."""
    properties = model.model_json_schema(schema_generator=_Generator)["properties"]
    return [
        {"name": n, "in": "query", "required": False, "schema": s} for n, s in properties.items()
    ]


def _operation(op_id: str, scope: str, body: str | None, answers: str, summary: str) -> Schema:
    tag, security, description = scope, [], None
    if ":" in scope:  # a management scope
        tag, security = "management", [{"secretKey": [scope]}]
        description = f"Needs the `{scope}` scope." + NOTES.get(op_id, "")
    op: Schema = {"tags": [tag], "operationId": op_id, "summary": summary, "security": security}
    if description:
        op["description"] = description
    if body:
        content = {"application/json": {"schema": _ref(body)}}
        op["requestBody"] = {"required": True, "content": content}
    if op_id in ("revokeSession", "listQueues", "createQueue", "listAuditEvents"):
        op["parameters"] = [ENVIRONMENT]
    if op_id == "listAuditEvents":
        op["parameters"] += _query(audit.AuditQuery)
    if op_id == "getQueueSeries":
        op["parameters"] = _query(series.SeriesQuery)
    pairs = (item.split(":") for item in answers.split())
    responses = {status: {"$ref": f"#/components/responses/{name}"} for status, name in pairs}
    return op | {"responses": dict(sorted(responses.items()))}


def _paths() -> dict[str, Schema]:
    room_id = ROOM_ID | {"schema": {"type": "string", "pattern": management.ROOM_ID.pattern}}
    paths: dict[str, Schema] = {ROOM: {"parameters": [room_id]}, SERIES: {"parameters": [room_id]}}
    for path, method, op_id, scope, body, answers, summary in OPERATIONS:
        operation = _operation(op_id, scope, body, answers, summary)
        paths.setdefault(path, {})[method] = operation
    return paths


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
            {"name": "docs", "description": "This document."},
        ],
        "paths": _paths(),
        "components": {
            "schemas": _schemas(),
            "responses": {name: _answer(*answer) for name, answer in ANSWERS.items()},
            "securitySchemes": {
                "secretKey": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "sk_<key id>_<random>",
                    "description": f"A key from `anteroom keys create`; its scopes: {scopes}.",
                }
            },
        },
    }


def document() -> Schema:
    """The OpenAPI 3.1 document (a fresh copy: callers may change it)."""
    return copy.deepcopy(_build())
