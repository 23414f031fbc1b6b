"""Read JSON request bodies and check them with their models: every problem named in one 400."""

from __future__ import annotations

from typing import Any, TypeVar

from flask import request
from pydantic import ValidationError

from anteroom.web.api.api_models import Body, problems_of
from anteroom.web.serving.http_errors import BadRequest, PayloadTooLarge

B = TypeVar("B", bound=Body)


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


def parse(model: type[B]) -> B:
    """The body as ``model``, or one :class:`BadRequest` naming every bad field."""
    return validated(model, json_body(), "Some fields are not valid.")


def parse_query(model: type[B]) -> B:
    """The query string as ``model`` (the first value of each name), or one BadRequest."""
    return validated(model, request.args.to_dict(), "Some parameters are not valid.")


def validated(model: type[B], data: dict[str, Any], message: str) -> B:
    """``data`` checked by ``model``: its fields' problems and its rules over several at once."""
    problems: dict[str, str] = {}
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        problems = problems_of(exc, model)
    model.cross_check(data, problems)
    if problems:
        raise BadRequest(message, fields=problems)
    return parsed
