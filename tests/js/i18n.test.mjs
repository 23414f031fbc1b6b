import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { createTranslator, readCatalog } from "../../frontend/i18n.js";

const DIR = new URL("../../translations/", import.meta.url);
const LANGUAGES = ["en", "es", "fr", "de", "it", "pt-BR", "nl", "pl", "tr", "ja", "ko", "zh-CN", "ar"];
const load = (lang) => JSON.parse(readFileSync(new URL(`${lang}.json`, DIR), "utf8"));
const placeholders = (text) => new Set([...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
const forms = (message) => (typeof message === "string" ? [message] : Object.values(message));

describe("the catalogs", () => {
  const english = load("en");

  test("there is one per language, and no other", () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5));
    assert.deepEqual(files.sort(), [...LANGUAGES].sort());
  });

  for (const lang of LANGUAGES) {
    test(`${lang} has every key of English, each with its placeholders`, () => {
      const catalog = load(lang);
      const missing = Object.keys(english).filter((key) => !(key in catalog));
      assert.deepEqual(missing, [], `${lang}.json lacks keys`);
      const extra = Object.keys(catalog).filter((key) => !(key in english));
      assert.deepEqual(extra, [], `${lang}.json has keys English has not`);
      for (const [key, message] of Object.entries(english)) {
        if (key === "_meta") continue;
        assert.equal(typeof catalog[key], typeof message, `${lang}: ${key} must ${typeof message === "string" ? "not " : ""}count`);
        const wanted = placeholders(forms(message).join(" "));
        const have = placeholders(forms(catalog[key]).join(" "));
        // A counting form may spell the number out (Arabic "two"): {count} may be left out.
        wanted.delete("count");
        have.delete("count");
        assert.deepEqual(have, wanted, `${lang}: ${key} placeholders`);
      }
    });

    test(`${lang}'s counting messages have every plural category Intl knows for it`, () => {
      const catalog = load(lang);
      const categories = new Intl.PluralRules(lang).resolvedOptions().pluralCategories;
      for (const [key, message] of Object.entries(catalog)) {
        if (typeof message === "string" || key === "_meta") continue;
        for (const category of categories) assert.ok(category in message, `${lang}: ${key} lacks "${category}"`);
      }
      assert.equal(catalog._meta.dir, lang === "ar" ? "rtl" : "ltr");
    });
  }
});

describe("the catalog loader", () => {
  const doc = (text) => ({ getElementById: (id) => (id === "anteroom-i18n" && text !== null ? { textContent: text } : null) });

  test("reads the embedded JSON, and nothing that is not an object", () => {
    assert.deepEqual(readCatalog(doc('{"a": "b"}')), { a: "b" });
    assert.equal(readCatalog(doc(null)), null);
    assert.equal(readCatalog(doc("not json")), null);
    assert.equal(readCatalog(doc("[1]")), null);
    assert.equal(readCatalog(doc("null")), null);
  });

  test("a missing key shows as itself, a missing form falls back to other", () => {
    const tr = createTranslator({ hi: "Hi {name}", n: { other: "{count} things" } }, "pl");
    assert.equal(tr.text("hi", { name: "Ann" }), "Hi Ann");
    assert.equal(tr.text("nope"), "nope");
    assert.equal(tr.count("n", 3), "3 things"); // "few" is missing
    assert.equal(tr.text("hi"), "Hi {name}");
  });

  test("an unknown or malformed locale formats as English", () => {
    assert.equal(createTranslator({}, "not a tag!").number(1235), "1,235");
  });

  test("times are in the visitor's time zone, with a date beyond a day", () => {
    const tr = createTranslator({}, "de");
    const now = Date.UTC(2026, 11, 3, 12, 0);
    const soon = now + 3_600_000;
    assert.equal(tr.time(soon, now), new Intl.DateTimeFormat("de", { timeStyle: "short" }).format(soon));
    const later = now + 3 * 86_400_000;
    assert.match(tr.time(later, now), /2026/);
  });
});
