"""The hosted page's catalogs and the choice of language (no Redis, no app)."""

from __future__ import annotations

import json

import pytest

from anteroom.resources import resource_dir
from anteroom.web.pages import page_languages as languages


def test_every_language_has_a_catalog_and_no_catalog_is_extra() -> None:
    files = {p.stem for p in resource_dir("translations").glob("*.json")}
    assert files == set(languages.LANGUAGES)


@pytest.mark.parametrize("code", languages.LANGUAGES)
def test_catalog_has_every_english_key(code: str) -> None:
    assert languages.missing_keys(languages.catalog("en"), languages.catalog(code)) == []


def test_a_catalog_missing_a_key_is_caught() -> None:
    english = languages.catalog("en")
    short = {k: v for k, v in english.items() if k != "page.note"}
    counting = dict(english) | {"ahead": "no forms"}
    assert languages.missing_keys(english, short) == ["page.note"]
    assert languages.missing_keys(english, counting) == ["ahead"]


@pytest.mark.parametrize(
    ("override", "accepted", "chosen"),
    [
        (None, [("de-DE", 1.0), ("en", 0.5)], "de"),
        (None, [("en", 0.4), ("ja", 0.9)], "ja"),
        (None, [("pt", 1.0)], "pt-BR"),
        (None, [("pt-PT", 1.0)], "pt-BR"),
        (None, [("zh-Hans-CN", 1.0)], "zh-CN"),
        (None, [("zh-TW", 1.0), ("fr", 0.5)], "fr"),
        (None, [("ar-EG", 1.0)], "ar"),
        (None, [("sv", 1.0), ("*", 0.1)], "en"),
        (None, [("de", 0.0), ("it", 0.2)], "it"),
        (None, [], "en"),
        ("ar", [("de", 1.0)], "ar"),
        ("PT_br", [("de", 1.0)], "pt-BR"),
        ("klingon", [("de", 1.0)], "de"),
        ("", [("ko-KR", 1.0)], "ko"),
    ],
)
def test_negotiate(override: str | None, accepted: list[tuple[str, float]], chosen: str) -> None:
    assert languages.negotiate(override, accepted) == chosen


def test_translate_fills_placeholders_and_refuses_counting_messages() -> None:
    assert (
        languages.translate("de", "status.idle", room="Drop") == "Drop ist gerade nicht geöffnet."
    )
    assert languages.direction("ar") == "rtl" and languages.direction("ja") == "ltr"
    with pytest.raises(TypeError):
        languages.translate("en", "ahead")


def test_catalogs_are_plain_json_objects_of_text() -> None:
    for code in languages.LANGUAGES:
        data = json.loads((resource_dir("translations") / f"{code}.json").read_text("utf-8"))
        for key, value in data.items():
            if key == "_meta":
                continue
            texts = [value] if isinstance(value, str) else list(value.values())
            assert texts and all(isinstance(t, str) and t.strip() for t in texts), (code, key)
