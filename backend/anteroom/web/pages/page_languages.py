"""The hosted page's languages: one JSON catalog per language, read by Jinja and by the script.

``translations/<code>.json`` maps a message key to its text, or, for a message that counts, to
its forms by CLDR plural category (``one``, ``few``, ``many``, ``other``…, as
``Intl.PluralRules`` names them). ``{name}`` marks a placeholder. The server renders only the
texts that do not count; the page's script gets the whole catalog embedded as JSON and does the
counting, number and time formatting with ``Intl`` in the visitor's locale. English is the
reference: every other catalog must have each of its keys (a test checks it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from anteroom.queue.rooms.room_config import PAGE_LANGUAGES
from anteroom.resources import resource_dir

# BCP 47 tags, as the catalogs are named; the first is the fallback. Stated with the room
# rules, since a room's texts for visitors may be given in each of them.
LANGUAGES: tuple[str, ...] = PAGE_LANGUAGES
DEFAULT = LANGUAGES[0]
# A bare or regional tag that names one of ours by another spelling (zh-Hans, zh-SG, pt-PT…).
ALIASES = {"pt": "pt-BR", "zh": "zh-CN", "zh-hans": "zh-CN", "zh-sg": "zh-CN"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@cache
def catalog(code: str) -> dict[str, Any]:
    """The catalog of language ``code`` (one of :data:`LANGUAGES`), read once per process."""
    if code not in LANGUAGES:
        raise KeyError(code)
    path: Path = resource_dir("translations") / f"{code}.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def match(tag: str) -> str | None:
    """One of :data:`LANGUAGES` that ``tag`` (any case, ``-`` or ``_``) names, or None."""
    tag = tag.strip().replace("_", "-").lower()
    if not tag or len(tag) > 35:
        return None
    for code in LANGUAGES:
        if code.lower() == tag:
            return code
    if tag in ALIASES:
        return ALIASES[tag]
    primary = tag.split("-", 1)[0]
    if tag.startswith("zh-") and any(p in tag for p in ("-hant", "-tw", "-hk", "-mo")):
        return None  # traditional Chinese readers are better served by English than Simplified
    if primary in ALIASES:
        return ALIASES[primary]
    return next((c for c in LANGUAGES if c.split("-", 1)[0] == primary), None)


def negotiate(override: str | None, accepted: Iterable[tuple[str, float]]) -> str:
    """The page's language: ``?lang=`` when it names one of ours, else the first of the
    visitor's ``Accept-Language`` (in quality order) that does, else English."""
    if override and (chosen := match(override)):
        return chosen
    for tag, quality in sorted(accepted, key=lambda pair: -pair[1]):
        if quality > 0 and (chosen := match(tag)):
            return chosen
    return DEFAULT


def direction(code: str) -> str:
    """``rtl`` or ``ltr``, as the catalog says."""
    return str(catalog(code).get("_meta", {}).get("dir", "ltr"))


def translate(code: str, key: str, **values: Any) -> str:
    """The text of ``key`` in ``code`` (English when the catalog lacks it) with ``{name}``
    placeholders filled. Counting messages are the script's: asking for one here is a bug."""
    text = catalog(code).get(key)
    if text is None:
        text = catalog(DEFAULT)[key]
    if not isinstance(text, str):
        raise TypeError(f"{key} counts: the page's script renders it")
    return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), text)


def choices() -> list[tuple[str, str]]:
    """Each language's code and its own name, for the page's switcher."""
    return [(code, str(catalog(code)["_meta"]["name"])) for code in LANGUAGES]


def missing_keys(reference: Mapping[str, Any], other: Mapping[str, Any]) -> list[str]:
    """Keys of ``reference`` that ``other`` lacks (or has with another shape)."""
    out = []
    for key, text in reference.items():
        if key not in other or isinstance(text, str) != isinstance(other[key], str):
            out.append(key)
    return out
