"""Parse and check JSON request bodies: unknown fields and wrong types are named in one 400."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import request

from anteroom.web.http_errors import BadRequest, PayloadTooLarge

MAX_STRING_LENGTH = 4096  # per string field of a visitor body (tokens are far shorter)

# field name -> expected Python type (str, int, bool, dict, list) and whether it is required
Schema = Mapping[str, tuple[type | tuple[type, ...], bool]]


def json_body() -> dict[str, Any]:
    """The request body as a JSON object, or :class:`BadRequest`."""
    # Read raw: a client that forgets Content-Type (curl -d sends a form type) still sends JSON,
    # and letting Flask parse it as a form would hide the body.
    if not _raw_body():
        raise BadRequest("A JSON object body is required.", fields={"body": "is empty"})
    try:
        data = request.get_json(force=True, silent=False, cache=True)
    except Exception:
        raise BadRequest("The body is not valid JSON.", fields={"body": "is not JSON"}) from None
    if not isinstance(data, dict):
        raise BadRequest("The body must be a JSON object.", fields={"body": "is not an object"})
    bad = _unencodable(data)
    if bad is not None:
        # JSON may spell a lone surrogate (\ud800); no UTF-8 store or hash can take it.
        raise BadRequest("The body is not valid Unicode text.", fields={bad: "is not valid text"})
    return data


def _raw_body() -> bytes:
    """The body's bytes, or :class:`PayloadTooLarge` when it is over the app's limit.

    A body with a Content-Length over the limit is refused by werkzeug before it is read. A
    chunked one has no length: werkzeug stops reading it at the limit without a word, which
    would hand the JSON parser a cut-off body and answer 400. A chunked body that fills the limit
    cannot be told from a longer one without reading past it, so it counts as too large.
    """
    data = request.get_data(cache=True, parse_form_data=False)
    limit = request.max_content_length
    if request.content_length is None and limit is not None and len(data) >= limit:
        raise PayloadTooLarge()
    return data


def _unencodable(data: dict[str, Any]) -> str | None:
    """The top-level field holding text that is not valid Unicode (``body`` for a key), or None."""
    for name, value in data.items():
        if not _encodes(name):
            return "body"
        pending = [value]
        while pending:  # iterative: nesting is as deep as the JSON parser allowed
            item = pending.pop()
            if isinstance(item, str) and not _encodes(item):
                return name
            if isinstance(item, dict):
                if not all(_encodes(k) for k in item):
                    return name
                pending.extend(item.values())
            elif isinstance(item, list):
                pending.extend(item)
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", bool: "true or false", dict: "an object"}
    names |= {list: "a list", float: "a number", type(None): "null"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def parse(schema: Schema) -> dict[str, Any]:
    """The body checked against ``schema``: every problem named under ``fields``."""
    data = json_body()
    problems: dict[str, str] = {}
    for name in data:
        if name not in schema:
            problems[name] = "unknown field"
    for name, (kind, required) in schema.items():
        if name not in data:
            if required:
                problems[name] = "is required"
            continue
        value = data[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        bad_bool = isinstance(value, bool) and bool not in kinds
        if bad_bool or not isinstance(value, kinds):
            problems[name] = f"must be {_type_name(kind)}"
        elif isinstance(value, str) and len(value) > MAX_STRING_LENGTH:
            problems[name] = "is too long"
    if problems:
        raise BadRequest("Some fields are not valid.", fields=problems)
    return data
