"""The OpenAPI 3.1 document of every API (SPEC "Management API"), served at /api/openapi.json.

Built from the code's own definitions wherever they exist, so the document cannot drift from
what the views check and answer: room fields, ranges and defaults from :data:`rooms.FIELDS`,
error codes from the exception classes of :mod:`errors`, signal names from :data:`signals.RULES`,
scopes from :data:`keystore.SCOPES`. The fuzz test (tests/integration/test_openapi.py) holds the
rest to account: every answer of the real app must match this document.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from anteroom import __version__
from anteroom.identity import signal_rules as signals
from anteroom.identity.proof_of_work import MAX_SOLUTION_LENGTH
from anteroom.ops import keystore
from anteroom.ops.audit_log import CURSOR_PATTERN
from anteroom.queue import room_config as rooms
from anteroom.sdk import tokens
from anteroom.web import http_errors as errors
from anteroom.web.json_body import MAX_STRING_LENGTH
from anteroom.web.management_api import (
    ACTIONS,
    MAX_OPENS_AT,
    REASON_MAX_LENGTH,
    ROOM_ID,
    SESSION_ID,
)

Schema = dict[str, Any]

ROOM_STATUSES = ["idle", "open", "paused"]
QUEUE_STATUSES = ["idle", "waiting", "held", "admitted"]
AUDIT_EVENTS = ["queue.created", "queue.updated", "queue.deleted", "session.revoked"]

FIELD_DOCS = {
    "slug": "Public name, unique per environment; fixed once the room is created.",
    "name": "Shown on the hosted page (escaped).",
    "ratePerMinute": "Admissions a minute (the drain).",
    "capacity": "At most this many admitted visitors active at once; null: no bound.",
    "admissionTtlSec": "Life of an admission token, and of its active slot unless refreshed.",
    "holdScore": "Sessions scoring at or above it are held.",
    "bindIp": "Admissions carry a keyed tag of the entering network.",
    "redirectUrl": "Where the hosted page sends admitted visitors: an absolute https URL "
    "(http only for localhost, 127.0.0.1 and [::1]).",
    "maxWaiting": "Longest line; beyond it entries get QueueFull.",
    "abandonAfterSec": "A waiting spot not polled for this long is dropped when the drain "
    "reaches it, and anywhere in the line within a minute more by the room's sweep.",
    "failMode": "What visitors get while Redis is unreachable: open admits, closed answers 503.",
}


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(schema: Schema) -> Schema:
    out = dict(schema)
    out["type"] = [schema["type"], "null"]
    return out


def _object(properties: dict[str, Schema], required: list[str] | None = None) -> Schema:
    """A closed object: the fuzz test then also catches an undocumented property."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


# -- room configuration ------------------------------------------------------------------


def field_schema(field: rooms.Field) -> Schema:
    """JSON Schema of one configuration field, read from its check and default."""
    check = field.check
    if isinstance(check, rooms.IntRange):
        schema: Schema = {"type": "integer", "minimum": check.lo, "maximum": check.hi}
        if check.nullable:
            schema = _nullable(schema)
    elif field.api == "slug":
        schema = {"type": "string", "pattern": rooms.SLUG_PATTERN.pattern}
    elif field.api == "name":
        # At least one character that is not white space.
        schema = {"type": "string", "minLength": 1, "maxLength": rooms.NAME_MAX_LENGTH}
        schema["pattern"] = r"\S"
    elif field.api == "redirectUrl":
        schema = {"type": "string", "format": "uri", "maxLength": rooms.REDIRECT_URL_MAX_LENGTH}
        local = f"({_any_case('localhost')}|127\\.0\\.0\\.1|\\[::1\\])"
        https, http = _any_case("https://"), _any_case("http://")
        schema["pattern"] = f"^({https}|{http}([^/?#@]*@)?{local}([:/?#]|$))"
    elif field.api == "bindIp":
        schema = {"type": "boolean"}
    elif field.api == "failMode":
        schema = {"type": "string", "enum": list(rooms.FAIL_MODES)}
    else:  # a new field must be described here before the document builds
        raise KeyError(f"no OpenAPI schema for room field {field.api!r}")
    schema["description"] = FIELD_DOCS[field.api]
    if not field.required:
        schema["default"] = field.default
    return schema


def _any_case(word: str) -> str:
    """A regex of ``word`` in any ASCII case (JSON Schema patterns have no flags)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)


def _config_properties(names: frozenset[str] | None = None) -> dict[str, Schema]:
    return {f.api: field_schema(f) for f in rooms.FIELDS if names is None or f.api in names}


def _room_schemas() -> dict[str, Schema]:
    room_props: dict[str, Schema] = {
        "id": {"type": "string", "pattern": ROOM_ID.pattern},
        "environment": {"type": "string", "pattern": keystore.ENV_PATTERN.pattern},
    }
    room_props |= {name: _without_default(s) for name, s in _config_properties().items()}
    room_props |= {
        "status": {"type": "string", "enum": ROOM_STATUSES},
        "opensAt": {"type": ["integer", "null"], "description": "Epoch ms; null: not set."},
    }
    stats = _object(
        {
            "waiting": {"type": "integer", "minimum": 0},
            "held": {"type": "integer", "minimum": 0},
            "active": {"type": "integer", "minimum": 0},
            "admittedLastMinute": {"type": "integer", "minimum": 0},
            "dealtTotal": {"type": "integer", "minimum": 0},
            "opensAt": {"type": ["integer", "null"]},
        }
    )
    line_entry = _object(
        {
            "ticket": {"type": "integer", "minimum": 1},
            "position": {"type": "integer", "minimum": 1},
            "visitor": {"type": "string"},
            "score": {"type": "integer", "minimum": 0, "maximum": 100},
        }
    )
    detail_props = copy.deepcopy(room_props) | {
        "stats": stats,
        "line": {
            "type": "array",
            "maxItems": 200,
            "items": line_entry,
            "description": "While open only: the first 200 waiting spots, in drain order.",
        },
    }
    required = [name for name in detail_props if name != "line"]
    creatable = _object(_config_properties(), [f.api for f in rooms.FIELDS if f.required])
    patch_props = {k: _without_default(v) for k, v in _config_properties(rooms.MUTABLE).items()}
    patch_props["action"] = {
        "type": "string",
        "enum": list(ACTIONS),
        "description": "open (resume a paused room), pause (only from open), close.",
    }
    patch_props["opensAt"] = {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_OPENS_AT,
        "description": 'Epoch ms, only with "action": "open" on an idle room; a past one is '
        "taken as given.",
    }
    patch = _object(patch_props, [])
    patch["minProperties"] = 1
    patch["dependentSchemas"] = {
        "opensAt": {"required": ["action"], "properties": {"action": {"const": "open"}}}
    }
    return {
        "Room": _object(room_props),
        "RoomDetail": _object(detail_props, required),
        "RoomCreate": creatable,
        "RoomPatch": patch,
        "RoomList": _object(
            {"environment": {"type": "string"}, "queues": {"type": "array", "items": _ref("Room")}}
        ),
    }


def _without_default(schema: Schema) -> Schema:
    return {k: v for k, v in schema.items() if k != "default"}


# -- answers of the visitor API ----------------------------------------------------------


def _token(kind: str) -> Schema:
    return {"type": "string", "pattern": f"^{kind}\\.", "maxLength": tokens.MAX_TOKEN_LENGTH}


def _visitor_schemas() -> dict[str, Schema]:
    text = {"type": "string", "maxLength": MAX_STRING_LENGTH}
    api_key = {"type": "string", "maxLength": MAX_STRING_LENGTH, "description": "A public key."}
    api_key["pattern"] = "^pk_"
    sig_names = sorted({rule.name for rule in signals.RULES} | {"bot"})
    queue_answer = _object(
        {
            "status": {"type": "string", "enum": QUEUE_STATUSES},
            "room": {"type": "string"},
            "roomName": {"type": "string"},
            "redirectUrl": {"type": "string"},
            "ticket": {"type": ["integer", "null"], "minimum": 1},
            "position": {"type": ["integer", "null"], "minimum": 1},
            "etaSeconds": {"type": ["integer", "null"], "minimum": 0},
            "opensAt": {"type": ["integer", "null"], "description": "Epoch ms."},
            "pollAfterMs": {"type": ["integer", "null"], "minimum": 1},
            "queueToken": {**_nullable(_token(tokens.TICKET)), "description": "Poll with it."},
            "token": {**_nullable(_token(tokens.ADMISSION)), "description": "The admission."},
            "roomStatus": {"type": "string", "enum": ROOM_STATUSES},
            "failOpen": {
                "const": True,
                "description": "Only on admissions given while Redis was unreachable.",
            },
        }
    )
    queue_answer["required"].remove("failOpen")
    return {
        "ChallengeRequest": _object({"apiKey": api_key}),
        "IdentifyRequest": _object(
            {
                "apiKey": api_key,
                "challenge": text | {"description": "The pc1 token of /challenge."},
                "solution": {"type": "string", "minLength": 1, "maxLength": MAX_SOLUTION_LENGTH},
                "signals": {
                    "type": "object",
                    "description": "What the agent observed, e.g. webdriver, languages.",
                    "properties": {
                        "webdriver": {"type": "boolean"},
                        "languages": {"type": "integer", "minimum": 0},
                    },
                },
                "previousSession": {"type": ["string", "null"], "maxLength": MAX_STRING_LENGTH},
            },
            ["apiKey", "challenge", "solution"],
        ),
        "EnterRequest": _object({"apiKey": api_key, "room": text, "sessionToken": text}),
        "TicketRequest": _object(
            {"apiKey": api_key, "ticket": text | {"description": "The qt1 queueToken."}}
        ),
        "RefreshRequest": _object(
            {"apiKey": api_key, "token": text | {"description": "The ab1 admission."}}
        ),
        "Challenge": _object(
            {
                "challenge": _token(tokens.CHALLENGE),
                "difficulty": {"type": "integer", "minimum": 0, "maximum": 256},
                "expiresAt": {"type": "integer", "description": "Epoch ms."},
            }
        ),
        "Session": _object(
            {
                "sessionToken": _token(tokens.SESSION),
                "expiresAt": {"type": "integer", "description": "Epoch ms."},
                "score": {"type": "integer", "minimum": 0, "maximum": 100},
                "sig": {"type": "array", "items": {"type": "string", "enum": sig_names}},
            }
        ),
        "QueueAnswer": queue_answer,
    }


def _audit_schemas() -> dict[str, Schema]:
    change = _object({"before": {}, "after": {}})
    event = _object(
        {
            "id": {"type": "string", "pattern": CURSOR_PATTERN.pattern},
            "type": {"type": "string", "enum": AUDIT_EVENTS},
            "queue": _object({"id": {"type": "string"}, "slug": {"type": "string"}}),
            "keyId": {"type": "string"},
            "at": {"type": "integer", "description": "Epoch ms."},
            "changes": {"type": "object", "additionalProperties": change},
            "action": _object(
                {
                    "name": {"type": "string", "enum": list(ACTIONS)},
                    "opensAt": {"type": ["integer", "null"]},
                }
            ),
            "session": {
                "description": "session.revoked: the session (jti) or visitor (vid) revoked.",
                **_object({"jti": {"type": "string"}, "vid": {"type": "string"}}, []),
                "minProperties": 1,
                "maxProperties": 1,
            },
            "reason": {"type": ["string", "null"], "description": "session.revoked: as given."},
        },
        ["id", "type", "keyId", "at"],
    )
    event["description"] = "queue.* events name the queue; session.revoked names the session."
    page = _object(
        {
            "environment": {"type": "string"},
            "events": {"type": "array", "items": _ref("AuditEvent")},
            "nextCursor": {"type": ["string", "null"], "description": "Null on the last page."},
        }
    )
    session_id = {"type": "string", "pattern": SESSION_ID.pattern}
    revoke = _object(
        {
            "jti": session_id | {"description": "A session's jti (from its st1 token)."},
            "vid": session_id | {"description": "A visitor's vid: every session of it."},
            "reason": {
                "type": ["string", "null"],
                "maxLength": REASON_MAX_LENGTH,
                "description": "Kept in the audit log.",
            },
        },
        [],
    )
    revoke["oneOf"] = [{"required": ["jti"]}, {"required": ["vid"]}]
    revoked = _object(
        {
            "environment": {"type": "string"},
            "jti": {"type": "string"},
            "vid": {"type": "string"},
            "reason": {"type": ["string", "null"]},
            "rooms": {
                "type": "integer",
                "minimum": 0,
                "description": "Rooms of the environment now holding the revocation.",
            },
            "droppedNow": {
                "type": "integer",
                "minimum": 0,
                "description": "Spots dropped at once (a vid's); a jti's go at their next poll.",
            },
            "expiresAt": {
                "type": "integer",
                "description": "Epoch ms when it stops counting: after the longest token life.",
            },
        },
        ["environment", "reason", "rooms", "droppedNow", "expiresAt"],
    )
    revoked["oneOf"] = [{"required": ["jti"]}, {"required": ["vid"]}]
    return {"AuditEvent": event, "AuditPage": page, "RevokeRequest": revoke, "Revocation": revoked}


# -- errors ------------------------------------------------------------------------------


def error_codes(status: int | None = None) -> list[str]:
    """Every SPEC error code (of one HTTP status), from the exception classes."""
    found: list[str] = []
    pending: list[type[errors.ApiError]] = [errors.ApiError]
    while pending:
        cls = pending.pop(0)
        pending.extend(cls.__subclasses__())
        if cls is not errors.ApiError and (status is None or cls.code == status):
            found.append(cls.error)
    return sorted(set(found))


def _error_schema() -> Schema:
    return _object(
        {
            "error": {"type": "string", "enum": error_codes()},
            "message": {"type": "string"},
            "fields": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Each offending field (or body, or parameter) and what is wrong.",
            },
            "retryAfter": {"type": "integer", "minimum": 1, "description": "Seconds."},
        },
        ["error", "message"],
    )


RETRY_AFTER: Schema = {
    "description": "Seconds to wait before asking again.",
    "schema": {"type": "integer", "minimum": 1},
}


def _error(description: str, codes: list[str], *, retry: bool = False) -> Schema:
    schema: Schema = {"allOf": [_ref("Error")], "properties": {"error": {"enum": codes}}}
    answer: Schema = {"description": description}
    if retry:
        schema["required"] = ["retryAfter"]
        answer["headers"] = {"Retry-After": RETRY_AFTER | {"required": True}}
    answer["content"] = {"application/json": {"schema": schema}}
    return answer


def _responses() -> dict[str, Schema]:
    unauthorized = _error("No valid secret key.", ["Unauthorized"])
    unauthorized["headers"] = {
        "WWW-Authenticate": {"required": True, "schema": {"type": "string", "pattern": "^Bearer"}}
    }
    return {
        "BadRequest": _error(
            "The request is not valid; fields names each problem.", ["BadRequest"]
        ),
        "VisitorUnauthorized": _error(
            "Unknown apiKey, or a token that is not valid or has expired.", error_codes(401)
        ),
        "ManagementUnauthorized": unauthorized,
        "Forbidden": _error(
            "The key lacks the scope, or belongs to another environment.", ["Forbidden"]
        ),
        "RoomNotFound": _error("No such room.", ["RoomNotFound", "NotFound"]),
        "TicketGone": _error("The spot or its room is gone; enter again.", ["TicketGone"]),
        "PayloadTooLarge": _error("The body is larger than 16 KiB.", ["PayloadTooLarge"]),
        "RateLimited": _error("Too many requests.", ["RateLimited"], retry=True),
        "Busy": _error("Redis is out of memory; nothing was changed.", ["Busy"], retry=True),
        "Unavailable": _error("Redis is unreachable.", ["Unavailable"], retry=True),
    }


def _use(*names: str) -> dict[str, Schema]:
    """Shared answers by status: ``_use("400:BadRequest", …)``."""
    out: dict[str, Schema] = {}
    for item in names:
        status, name = item.split(":")
        out[status] = {"$ref": f"#/components/responses/{name}"}
    return out


# -- operations --------------------------------------------------------------------------


def _json(schema: Schema, description: str, **headers: Schema) -> Schema:
    answer: Schema = {"description": description}
    if headers:
        answer["headers"] = headers
    answer["content"] = {"application/json": {"schema": schema}}
    return answer


def _body(name: str) -> Schema:
    return {"required": True, "content": {"application/json": {"schema": _ref(name)}}}


def _visitor_op(
    op_id: str, summary: str, request: str, ok: dict[str, Schema], *errs: str
) -> Schema:
    responses = ok | _use("400:BadRequest", "401:VisitorUnauthorized", "413:PayloadTooLarge")
    responses |= _use(*errs)
    return {
        "tags": ["visitor"],
        "operationId": op_id,
        "summary": summary,
        "security": [],
        "requestBody": _body(request),
        "responses": dict(sorted(responses.items())),
    }


def _visitor_paths() -> dict[str, Schema]:
    queue_answer = _json(
        _ref("QueueAnswer"),
        "A queue answer; Retry-After is set while it asks the client to wait.",
        **{"Retry-After": RETRY_AFTER},
    )
    too_many = _error(
        "Polled too often, the line is full, or Redis is out of memory.",
        ["RateLimited", "QueueFull", "Busy"],
        retry=True,
    )
    limited_or_busy = _error(
        "Polled too often, or Redis is out of memory.", ["RateLimited", "Busy"], retry=True
    )
    enter = _visitor_op(
        "enterQueue",
        "Take (or find again) the session's spot in a room",
        "EnterRequest",
        {"200": queue_answer},
        "404:RoomNotFound",
        "410:TicketGone",
        "503:Unavailable",
    )
    enter["responses"]["403"] = _error(
        "The session is convicted, revoked, or the room needs a visible client address.",
        ["QueueDenied", "SessionRevoked", "AddressRequired"],
    )
    enter["responses"]["429"] = too_many
    poll = _visitor_op(
        "pollQueue",
        "Poll a spot with its queueToken",
        "TicketRequest",
        {"200": queue_answer},
        "410:TicketGone",
        "503:Unavailable",
    )
    revoked = _error(
        "The session has been revoked, or (while Redis is unreachable) a bindIp room sees no "
        "client address.",
        ["SessionRevoked", "AddressRequired"],
    )
    poll["responses"] |= {"403": revoked, "429": limited_or_busy}
    leave = _visitor_op(
        "leaveQueue",
        "Leave the line: frees a waiting spot or an active slot",
        "TicketRequest",
        {"204": {"description": "Left (also when there was nothing left to free)."}},
        "410:TicketGone",
        "503:Unavailable",
    )
    leave["responses"]["429"] = limited_or_busy
    refresh = _visitor_op(
        "refreshAdmission",
        "A fresh admission; extends the active slot",
        "RefreshRequest",
        {"200": queue_answer},
        "410:TicketGone",
        "503:Unavailable",
    )
    refresh["responses"] |= {"403": revoked, "429": limited_or_busy}
    for op in (enter, poll, leave, refresh):
        op["responses"] = dict(sorted(op["responses"].items()))
    return {
        "/api/v1/challenge": {
            "post": _visitor_op(
                "createChallenge",
                "A proof-of-work challenge",
                "ChallengeRequest",
                {"200": _json(_ref("Challenge"), "A signed challenge and its difficulty.")},
                "429:RateLimited",
                "503:Unavailable",
            )
        },
        "/api/v1/identify": {
            "post": _visitor_op(
                "identify",
                "Trade a solved challenge for a session token",
                "IdentifyRequest",
                {"200": _json(_ref("Session"), "A session token, its score and signals.")},
                "429:RateLimited",
                "503:Unavailable",
            )
        },
        "/api/v1/queue/enter": {"post": enter},
        "/api/v1/queue/poll": {"post": poll},
        "/api/v1/queue/leave": {"post": leave},
        "/api/v1/admission/refresh": {"post": refresh},
    }


def _management_op(
    op_id: str, summary: str, scope: str, ok: dict[str, Schema], *errs: str
) -> Schema:
    responses = ok | _use("401:ManagementUnauthorized", "403:Forbidden", "429:Busy")
    responses |= _use("503:Unavailable", *errs)
    return {
        "tags": ["management"],
        "operationId": op_id,
        "summary": summary,
        "description": f"Needs the `{scope}` scope.",
        "security": [{"secretKey": [scope]}],
        "responses": dict(sorted(responses.items())),
    }


ENVIRONMENT_PARAM: Schema = {
    "name": "environment",
    "in": "query",
    "required": False,
    "description": "Must be the key's environment (the default).",
    "schema": {"type": "string"},
}
ROOM_ID_PARAM: Schema = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": ROOM_ID.pattern},
}


def _management_paths() -> dict[str, Schema]:
    listing = _management_op(
        "listQueues",
        "Every room of the environment, by slug",
        "queues:read",
        {"200": _json(_ref("RoomList"), "The rooms.")},
    )
    listing["parameters"] = [ENVIRONMENT_PARAM]
    location = {"required": True, "schema": {"type": "string"}}
    create = _management_op(
        "createQueue",
        "Create a room (idle until opened)",
        "queues:write",
        {"201": _json(_ref("Room"), "The new room.", Location=location)},
        "400:BadRequest",
        "413:PayloadTooLarge",
    )
    create["parameters"] = [ENVIRONMENT_PARAM]
    create["requestBody"] = _body("RoomCreate")
    get = _management_op(
        "getQueue",
        "A room's configuration, status, live stats and, while open, its line",
        "queues:read",
        {"200": _json(_ref("RoomDetail"), "The room.")},
        "404:RoomNotFound",
    )
    patch = _management_op(
        "updateQueue",
        "Change configuration fields (not slug) and/or run an action",
        "queues:write",
        {"200": _json(_ref("Room"), "The room after the change.")},
        "400:BadRequest",
        "404:RoomNotFound",
        "413:PayloadTooLarge",
    )
    patch["requestBody"] = _body("RoomPatch")
    delete = _management_op(
        "deleteQueue",
        "Delete a room and all its state; its tickets answer 410, its slug is free",
        "queues:write",
        {"204": {"description": "Deleted."}},
        "404:RoomNotFound",
    )
    audit = _management_op(
        "listAuditEvents",
        "The environment's audit events, newest first",
        "audit:read",
        {"200": _json(_ref("AuditPage"), "One page of events.")},
        "400:BadRequest",
    )
    audit["parameters"] = [
        ENVIRONMENT_PARAM,
        {
            "name": "cursor",
            "in": "query",
            "required": False,
            "description": "The nextCursor of the previous page.",
            "schema": {"type": "string", "pattern": CURSOR_PATTERN.pattern},
        },
        {
            "name": "limit",
            "in": "query",
            "required": False,
            "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
        },
    ]
    revoke = _management_op(
        "revokeSession",
        "Revoke a session (jti) or visitor (vid) in every room of the environment",
        "queues:write",
        {"200": _json(_ref("Revocation"), "Revoked; recorded as a session.revoked event.")},
        "400:BadRequest",
        "413:PayloadTooLarge",
    )
    revoke["description"] += (
        " Its spots answer SessionRevoked at their next poll (a vid's are dropped at once), its"
        " admissions can no longer be refreshed and it cannot enter again; an admission already"
        " issued stays valid offline until its exp. Revocations expire by themselves after the"
        " longest token life (6 h, or a room's queue-token or admission life if longer)."
    )
    revoke["parameters"] = [ENVIRONMENT_PARAM]
    revoke["requestBody"] = _body("RevokeRequest")
    return {
        "/api/management/v1/sessions/revoke": {"post": revoke},
        "/api/management/v1/queues": {"get": listing, "post": create},
        "/api/management/v1/queues/{id}": {
            "parameters": [ROOM_ID_PARAM],
            "get": get,
            "patch": patch,
            "delete": delete,
        },
        "/api/management/v1/audit": {"get": audit},
    }


def _probe(op_id: str, summary: str, answers: dict[str, Schema]) -> Schema:
    probe: Schema = {"tags": ["health"], "operationId": op_id, "summary": summary}
    return probe | {"security": [], "responses": answers}


def _other_paths() -> dict[str, Schema]:
    ready = _object({"status": {"const": "ready"}, "scripts": {"type": "integer", "minimum": 1}})
    # Why is in the service's log only: a probe's caller never sees Redis's error text.
    not_ready = _object({"status": {"const": "unavailable"}}, ["status"])
    return {
        "/healthz": {
            "get": _probe(
                "healthz",
                "Liveness: the process is up",
                {"200": _json(_object({"status": {"const": "ok"}}), "Up.")},
            )
        },
        "/readyz": {
            "get": _probe(
                "readyz",
                "Readiness: Redis answers and every Lua script is loaded",
                {
                    "200": _json(ready, "Ready."),
                    "503": _json(not_ready, "Not ready."),
                },
            )
        },
        "/api/openapi.json": {
            "get": {
                "tags": ["docs"],
                "operationId": "openapi",
                "summary": "This document",
                "security": [],
                "responses": {"200": _json({"type": "object"}, "The OpenAPI 3.1 document.")},
            }
        },
    }


@cache
def _build() -> Schema:
    schemas = {"Error": _error_schema()}
    schemas |= _room_schemas() | _visitor_schemas() | _audit_schemas()
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
        "paths": _visitor_paths() | _management_paths() | _other_paths(),
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "responses": _responses(),
            "securitySchemes": {
                "secretKey": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "sk_<key id>_<random>",
                    "description": "A secret key from `anteroom keys create`; its scopes are "
                    + ", ".join(keystore.SCOPES)
                    + ".",
                }
            },
        },
    }


def document() -> Schema:
    """The OpenAPI 3.1 document (a fresh copy: callers may change it)."""
    return copy.deepcopy(_build())
