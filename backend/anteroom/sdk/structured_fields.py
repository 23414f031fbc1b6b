"""The part of HTTP Structured Field Values (RFC 8941) that message signatures need.

``Signature-Input`` is a dictionary of inner lists with parameters, ``Signature`` a dictionary
of byte sequences, ``Signature-Agent`` a string or a dictionary of strings. This parses those
shapes (dictionaries, inner lists, parameters and the bare items: integers, decimals, strings,
tokens, byte sequences, booleans) and serializes items back, as the signature base needs them
(RFC 9421 section 2.3 re-serializes the signature parameters). Standard library only.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field

__all__ = ["FieldError", "InnerList", "Item", "Token", "parse_dictionary", "parse_item",
           "serialize_inner_list", "serialize_item", "serialize_params"]  # fmt: skip

_KEY = re.compile(r"[a-z*][a-z0-9_\-.*]*")
_TOKEN = re.compile(r"[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]*")
_NUMBER = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,3})?")
_BYTES = re.compile(r":([A-Za-z0-9+/=]*):")


class FieldError(ValueError):
    """A header that is not the structured field it should be; its text says where."""


class Token(str):
    """A bare token (``ed25519`` unquoted), told apart from a string when serialized."""


BareItem = int | float | str | bytes | bool | Token


@dataclass(frozen=True)
class Item:
    """A bare item and its parameters, in their order."""

    value: BareItem
    params: dict[str, BareItem] = field(default_factory=dict)


@dataclass(frozen=True)
class InnerList:
    """A parenthesized list of items, and its parameters, in their order."""

    items: tuple[Item, ...]
    params: dict[str, BareItem] = field(default_factory=dict)


class _Reader:
    def __init__(self, text: str) -> None:
        if not text.isascii():
            raise FieldError("holds characters outside ASCII")
        self.text, self.at = text, 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def skip_spaces(self) -> None:
        while self.peek() == " ":
            self.at += 1

    def skip_ows(self) -> None:
        while self.peek() in (" ", "\t") and self.peek():
            self.at += 1

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise FieldError(f"expected {char!r} at {self.at}")
        self.at += 1

    def match(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        found = pattern.match(self.text, self.at)
        if found:
            self.at = found.end()
        return found


def _key(r: _Reader) -> str:
    found = r.match(_KEY)
    if not found:
        raise FieldError(f"expected a key at {r.at}")
    return found.group(0)


def _string(r: _Reader) -> str:
    r.expect('"')
    out = []
    while True:
        char = r.peek()
        if char == "":
            raise FieldError("a string is not closed")
        r.at += 1
        if char == '"':
            return "".join(out)
        if char == "\\":
            escaped = r.peek()
            if escaped not in ('"', "\\"):
                raise FieldError(f"a bad escape at {r.at}")
            r.at += 1
            out.append(escaped)
        elif not (0x20 <= ord(char) <= 0x7E):
            raise FieldError(f"a control character in a string at {r.at}")
        else:
            out.append(char)


def _bare_item(r: _Reader) -> BareItem:
    char = r.peek()
    if char == '"':
        return _string(r)
    if char == ":":
        found = r.match(_BYTES)
        if not found:
            raise FieldError(f"a byte sequence is not closed at {r.at}")
        try:
            return base64.b64decode(found.group(1), validate=True)
        except binascii.Error:
            raise FieldError("a byte sequence is not base64") from None
    if char == "?":
        r.at += 1
        flag = r.peek()
        if flag not in ("0", "1"):
            raise FieldError(f"a boolean must be ?0 or ?1 at {r.at}")
        r.at += 1
        return flag == "1"
    if char == "-" or char.isdigit():
        found = r.match(_NUMBER)
        if not found:
            raise FieldError(f"a number is malformed at {r.at}")
        return float(found.group(0)) if found.group(1) else int(found.group(0))
    found = r.match(_TOKEN)
    if not found:
        raise FieldError(f"expected an item at {r.at}")
    return Token(found.group(0))


def _params(r: _Reader) -> dict[str, BareItem]:
    params: dict[str, BareItem] = {}
    while r.peek() == ";":
        r.at += 1
        r.skip_spaces()
        name = _key(r)
        value: BareItem = True
        if r.peek() == "=":
            r.at += 1
            value = _bare_item(r)
        params[name] = value
    return params


def _inner_list(r: _Reader) -> InnerList:
    r.expect("(")
    items = []
    while True:
        r.skip_spaces()
        if r.peek() == ")":
            r.at += 1
            return InnerList(tuple(items), _params(r))
        items.append(Item(_bare_item(r), _params(r)))
        if r.peek() not in (" ", ")"):
            raise FieldError(f"expected a space or ')' at {r.at}")


def _member(r: _Reader) -> Item | InnerList:
    if r.peek() == "(":
        return _inner_list(r)
    return Item(_bare_item(r), _params(r))


def parse_dictionary(text: str) -> dict[str, Item | InnerList]:
    """A dictionary field's members by name (a repeated name keeps its last value)."""
    r = _Reader(text)
    r.skip_spaces()
    out: dict[str, Item | InnerList] = {}
    while r.peek():
        name = _key(r)
        if r.peek() == "=":
            r.at += 1
            out[name] = _member(r)
        else:
            out[name] = Item(True, _params(r))
        r.skip_ows()
        if not r.peek():
            break
        r.expect(",")
        r.skip_ows()
        if not r.peek():
            raise FieldError("a trailing comma")
    return out


def parse_item(text: str) -> Item:
    """An item field (a single value with its parameters)."""
    r = _Reader(text)
    r.skip_spaces()
    item = Item(_bare_item(r), _params(r))
    r.skip_spaces()
    if r.peek():
        raise FieldError(f"text after the item at {r.at}")
    return item


def serialize_bare(value: BareItem) -> str:
    """A bare item as it is written in a field."""
    if isinstance(value, bool):
        return "?1" if value else "?0"
    if isinstance(value, Token):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value % 1 else f"{value:.1f}"
    if isinstance(value, bytes):
        return ":" + base64.b64encode(value).decode() + ":"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def serialize_params(params: dict[str, BareItem]) -> str:
    """Parameters as they are written after an item or an inner list (``;keyid="k";sf``)."""
    return "".join(
        f";{name}" if value is True else f";{name}={serialize_bare(value)}"
        for name, value in params.items()
    )


def serialize_item(item: Item) -> str:
    """An item and its parameters as they are written in a field."""
    return serialize_bare(item.value) + serialize_params(item.params)


def serialize_inner_list(inner: InnerList) -> str:
    """An inner list and its parameters as they are written in a field."""
    return (
        "("
        + " ".join(serialize_item(i) for i in inner.items)
        + ")"
        + serialize_params(inner.params)
    )
