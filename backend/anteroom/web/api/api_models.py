"""Typed API shapes (pydantic v2): the base of every request body and answer, and the shared ones.

A request model validates a parsed JSON body (see :func:`anteroom.web.serving.json_body.parse`) and
names every problem by its API field; an answer model is what a view returns, serialised with
just the fields it was given (:func:`anteroom.web.api.api_routes.answered`); the hot path
(web/visitor/hot_path.py) writes the same JSON from plain dicts, unvalidated. The OpenAPI document
is
generated from both (:mod:`anteroom.web.api.openapi_document`), so what is checked and what is
written agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from anteroom.sdk import tokens
from anteroom.web.serving import http_errors as errors

MAX_STRING_LENGTH = 4096  # per string field of a visitor body (tokens are far shorter)

# Wording of pydantic's error types, as the API has always named them.
TYPE_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "unknown field",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "dict_type": "must be an object",
    "string_too_long": "is too long",
    "string_too_short": "is too short",
}
Wording = str | Callable[[Any], str | None]


def problem(why: str) -> PydanticCustomError:
    """A validation error worded by us (raise it from a validator; its text is kept as is)."""
    return PydanticCustomError("problem", "{why}", {"why": why})


def checked(check: Callable[[Any], str | None]) -> AfterValidator:
    """Run ``check`` (None or why a value is bad) after the type and constraints passed."""

    def run(value: Any) -> Any:
        why = check(value)
        if why:
            raise problem(why)
        return value

    return AfterValidator(run)


def schema_extra(**extra: Any) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` that adds ``extra`` and drops defaults that are not API defaults.

    A field that may be left out but has no default value of its own gets a placeholder
    default in Python; the document must not announce it.
    """

    def edit(schema: dict[str, Any]) -> None:
        for prop in schema.get("properties", {}).values():
            prop.pop("default", None)
        schema.update(extra)

    return edit


class Body(BaseModel):
    """A request body: a closed object, strictly typed (JSON values are never coerced)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    # Per-field wording of any problem but a missing or an unknown field: a text, or a check
    # of the value that says what is wrong with it.
    messages: ClassVar[Mapping[str, Wording]] = {}

    @classmethod
    def cross_check(cls, data: dict[str, Any], problems: dict[str, str]) -> None:
        """Rules over several fields of raw ``data``; each field's own problems are in already."""


class Answer(BaseModel):
    """A JSON answer: closed, so the fuzz test also catches an undocumented property."""

    model_config = ConfigDict(extra="forbid")


def problems_of(exc: ValidationError, model: type[Body]) -> dict[str, str]:
    """``exc`` as the API's ``fields``: each top-level field once, with what is wrong with it."""
    out: dict[str, str] = {}
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else "body"
        if name not in out:
            out[name] = _message(model, name, error["type"], error["msg"], error.get("input"))
    return out


def _message(model: type[Body], name: str, kind: str, text: str, value: Any) -> str:
    if kind in ("missing", "extra_forbidden"):
        return TYPE_MESSAGES[kind]
    if kind == "problem":
        return text
    wording = model.messages.get(name)
    if callable(wording):
        wording = wording(value)
    return wording or TYPE_MESSAGES.get(kind) or "is not valid"


def token_example(kind: str) -> str:
    """What a signed token of ``kind`` looks like: its type, key id, claims and signature."""
    return f"{kind}.k2026a.eyJlbnYiOiJwcm9kIiwiZXhwIjoxNzY1MTE2MDAwMDAwfQ.Zm9yLWV4YW1wbGUtb25seQ"


def token_text(kind: str, description: str | None = None) -> Any:
    """A signed token of ``kind`` as an answer carries it."""
    pattern, longest = f"^{kind}\\.", tokens.MAX_TOKEN_LENGTH
    field = Field(
        pattern=pattern, max_length=longest, description=description,
        examples=[token_example(kind)],
    )  # fmt: skip
    return Annotated[str, field]


def error_codes(status: int | None = None) -> list[str]:
    """Every error code (of one HTTP status), from the exception classes."""
    found: list[str] = []
    pending: list[type[errors.ApiError]] = [errors.ApiError]
    while pending:
        cls = pending.pop(0)
        pending.extend(cls.__subclasses__())
        if cls is not errors.ApiError and (status is None or cls.code == status):
            found.append(cls.error)
    return sorted(set(found))


class Error(Answer):
    """Every error answer: {error, message, fields?, retryAfter?}."""

    error: Literal[tuple(error_codes())] = Field(  # type: ignore[valid-type]
        description="What went wrong, as a stable code a client can branch on.",
        examples=["BadRequest"],
    )
    message: str = Field(
        description="What went wrong, in words for a person (not to be parsed).",
        examples=["Some fields are not valid."],
    )
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="Each offending field (or body, or parameter) and what is wrong.",
        examples=[{"queueToken": "is required (the older name `ticket` is still taken)"}],
    )
    retryAfter: int = Field(
        default=1, ge=1, description="Seconds to wait before trying again.", examples=[5]
    )
    closedMessage: str | dict[str, str] | None = Field(
        default=None,
        description="Only when a room is closed to new entries: the message its operator set "
        "for that (text, or texts by language; null: the page's default).",
        examples=["Sold out. Thank you for waiting."],
    )
    model_config = ConfigDict(json_schema_extra=schema_extra())


class Alive(Answer):
    status: Literal["ok"] = Field(description="Always ok: the process answers.", examples=["ok"])


class Ready(Answer):
    status: Literal["ready"] = Field(
        description="Always ready: this instance can take visitors.", examples=["ready"]
    )
    scripts: int = Field(ge=1, description="Lua scripts loaded in Redis.", examples=[24])


class NotReady(Answer):
    """Why is in the service's log only: a probe's caller never sees Redis's error text."""

    status: Literal["unavailable"] = Field(
        description="Always unavailable: Redis does not answer, or a script is missing.",
        examples=["unavailable"],
    )
