import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { readFileSync } from "node:fs";

import { createTranslator } from "../../frontend/i18n.js";
import { aheadText, countdownText, etaRange, etaText, observedRates, pageState, progressValue, shouldAnnounce, statusText, withAdmission, localText, localTextWithLanguage } from "../../frontend/view.js";

const translator = (lang) =>
  createTranslator(JSON.parse(readFileSync(new URL(`../../translations/${lang}.json`, import.meta.url), "utf8")), lang);
const en = translator("en");

describe("the hosted page's view", () => {
  test("an operator's text by language: the page's own, else the one for every other language", () => {
    const notice = { "*": "Sizes S and M are sold out.", fr: "Les tailles S et M sont épuisées." };
    assert.equal(localText(notice, "fr"), "Les tailles S et M sont épuisées.");
    assert.equal(localText(notice, "en"), "Sizes S and M are sold out.");
    assert.equal(localText(notice, "de"), "Sizes S and M are sold out.");
    // the text for every other language is in no known language: the page marks none
    assert.deepEqual(localTextWithLanguage(notice, "de"), { text: "Sizes S and M are sold out.", lang: null });
    // without "*": English, else the first
    assert.equal(localText({ de: "Hallo", en: "Hello" }, "fr"), "Hello");
    assert.equal(localText({ de: "Hallo" }, "fr"), "Hallo");
    assert.equal(localText("Plain", "ar"), "Plain");
    assert.equal(localText(null, "en"), null);
  });

  test("withAdmission keeps the query and puts the token before the fragment", () => {
    const cases = [
      ["https://shop.example/drop", "https://shop.example/drop?abq=ab1.x"],
      ["https://shop.example/drop?color=red", "https://shop.example/drop?color=red&abq=ab1.x"],
      ["https://shop.example/drop?", "https://shop.example/drop?abq=ab1.x"],
      ["https://shop.example/drop?a=1&", "https://shop.example/drop?a=1&abq=ab1.x"],
      ["https://shop.example/drop#size", "https://shop.example/drop?abq=ab1.x#size"],
      ["https://shop.example/drop?a=1#x?y", "https://shop.example/drop?a=1&abq=ab1.x#x?y"],
    ];
    for (const [url, expected] of cases) assert.equal(withAdmission(url, "ab1.x"), expected);
    assert.equal(withAdmission("https://shop.example/", "ab1.a+b/c="), "https://shop.example/?abq=ab1.a%2Bb%2Fc%3D");
  });

  test("pageState", () => {
    const now = 1_000_000;
    assert.equal(pageState(null, now), "connecting");
    assert.equal(pageState({ status: "waiting", opensAt: null }, now), "waiting");
    assert.equal(pageState({ status: "waiting", opensAt: now - 1 }, now), "waiting");
    assert.equal(pageState({ status: "waiting", opensAt: now + 1 }, now), "prequeue");
    assert.equal(pageState({ status: "waiting", roomStatus: "paused", opensAt: now + 1 }, now), "paused");
    for (const status of ["held", "idle", "admitted", "error"]) assert.equal(pageState({ status }, now), status);
  });

  test("etaText", () => {
    assert.equal(etaText(null, en), null);
    assert.equal(etaText(undefined, en), null);
    assert.equal(etaText(0, en), "less than a minute");
    assert.equal(etaText(59, en), "less than a minute");
    assert.equal(etaText(60, en), "about 1 minute");
    assert.equal(etaText(89, en), "about 1 minute");
    assert.equal(etaText(90, en), "about 2 minutes");
    assert.equal(etaText(3600, en), "about 60 minutes");
    assert.equal(etaText(89 * 60, en), "about 89 minutes");
    assert.equal(etaText(90 * 60, en), "about 1.5 hours");
    assert.equal(etaText(150 * 60, translator("de")), "etwa 2,5 Stunden");
    assert.equal(etaText(60 * 60 * 3, en), "about 3 hours");
  });

  test("the ETA is a range once the line's pace has varied", () => {
    const minute = 60_000;
    // 10 a minute, then 5 a minute: at position 400 that is 40 to 80 minutes.
    const varied = [
      { at: 0, position: 500 },
      { at: 30_000, position: 495 },
      { at: minute, position: 490 },
      { at: 2 * minute, position: 485 },
      { at: 3 * minute, position: 475 },
    ];
    assert.deepEqual(observedRates(varied), [10 / minute, 5 / minute, 10 / minute]);
    const range = etaRange(3600, 400, observedRates(varied));
    assert.deepEqual(range, { low: 2400, high: 4800 });
    assert.equal(etaText(3600, en, range), "about 40–80 minutes");
    assert.equal(etaText(3600, translator("ar"), range), `حوالي ${translator("ar").number(40)}–${translator("ar").number(80)} دقيقة`);
    // A steady pace (within a quarter), too little seen, or a stalled line: the single estimate.
    const steady = [{ at: 0, position: 500 }, { at: minute, position: 490 }, { at: 2 * minute, position: 481 }];
    assert.equal(etaRange(3600, 400, observedRates(steady)), null);
    assert.equal(etaRange(3600, 400, observedRates(varied.slice(0, 3))), null);
    assert.equal(etaRange(3600, 400, [0, 0, 5 / minute]), null);
    assert.equal(etaText(3600, en, null), "about 60 minutes");
    // The range always holds the server's own estimate.
    assert.deepEqual(etaRange(6000, 400, [10 / minute, 5 / minute]), { low: 2400, high: 6000 });
  });

  test("countdownText", () => {
    assert.equal(countdownText(0, en), "00:00");
    assert.equal(countdownText(-5000, en), "00:00");
    assert.equal(countdownText(1, en), "00:01");
    assert.equal(countdownText(754_000, en), "12:34");
    assert.equal(countdownText(3600_000 + 61_000, en), "1:01:01");
    assert.equal(countdownText(50 * 3600_000 + 59_000, en), "50:00:59");
  });

  test("the front of the line says 'Almost there'", () => {
    assert.equal(statusText("waiting", { position: 1 }, "Drop", en), "Almost there: you're number 1 in line.");
    assert.equal(statusText("waiting", { position: 10 }, "Drop", en), "Almost there: you're number 10 in line.");
    assert.match(statusText("waiting", { position: 11 }, "Drop", en), /^You're number 11 in line\./);
  });

  test("progressValue", () => {
    assert.equal(progressValue(11, 11), 0);
    assert.equal(progressValue(11, 6), 0.5);
    assert.equal(progressValue(11, 1), 1);
    assert.equal(progressValue(1, 1), 1, "first seen at the front: the bar is full, not empty");
    assert.equal(progressValue(11, 1), 1);
    assert.equal(progressValue(5, 9), 0, "pushed back: clamped");
  });

  test("shouldAnnounce: state changes, and positions that moved meaningfully", () => {
    assert.equal(shouldAnnounce(null, { state: "waiting", position: 500 }), true);
    assert.equal(shouldAnnounce({ state: "waiting", position: 500 }, { state: "waiting", position: 499 }), false);
    assert.equal(shouldAnnounce({ state: "waiting", position: 500 }, { state: "waiting", position: 450 }), true);
    assert.equal(shouldAnnounce({ state: "waiting", position: 5 }, { state: "waiting", position: 4 }), true);
    assert.equal(shouldAnnounce({ state: "waiting", position: 4 }, { state: "waiting", position: 4 }), false);
    assert.equal(shouldAnnounce({ state: "waiting", position: 4 }, { state: "paused", position: 4 }), true);
    // Not more than every 30 s for a moving position, whatever it moved by (the last five aside).
    const at = (position, ms) => ({ state: "waiting", position, at: ms });
    assert.equal(shouldAnnounce(at(500, 0), at(300, 29_999)), false);
    assert.equal(shouldAnnounce(at(500, 0), at(300, 30_000)), true);
    assert.equal(shouldAnnounce(at(6, 0), at(5, 1000)), true);
    assert.equal(shouldAnnounce(at(500, 0), { state: "admitted", position: null, at: 1 }), true);
  });

  test("numbers, plurals and durations follow each language's rules", () => {
    const de = translator("de");
    const ar = translator("ar");
    const pl = translator("pl");
    const ja = translator("ja");
    assert.equal(en.number(1235), "1,235");
    assert.equal(de.number(1235), "1.235");
    assert.equal(aheadText(1, en), null, "at the front: no '0 people ahead of you'");
    assert.equal(aheadText(2, en), "1 person ahead of you");
    assert.equal(aheadText(3, en), "2 people ahead of you");
    assert.equal(aheadText(1236, de), "1.235 Personen vor Ihnen");
    assert.equal(etaText(41 * 60, de), "etwa 41 Minuten");
    assert.equal(etaText(60, de), "etwa 1 Minute");
    // Polish: one, few (2–4, 22–24…), many (5–21, 25…).
    assert.equal(aheadText(2, pl), "1 osoba przed Tobą");
    assert.equal(aheadText(4, pl), "3 osoby przed Tobą");
    assert.equal(aheadText(6, pl), "5 osób przed Tobą");
    assert.equal(aheadText(23, pl), "22 osoby przed Tobą");
    // Arabic: zero, one, two, few (3–10), many (11–99), other; its own digits.
    assert.equal(ar.count("ahead", 0), "لا أحد أمامك");
    assert.equal(aheadText(3, ar), "شخصان أمامك");
    assert.equal(aheadText(4, ar), `${ar.number(3)} أشخاص أمامك`);
    assert.equal(aheadText(12, ar), `${ar.number(11)} شخصًا أمامك`);
    assert.equal(etaText(2 * 60, ar), "حوالي دقيقتين");
    // Japanese has one form.
    assert.equal(aheadText(1236, ja), "あなたの前に 1,235 人");
    assert.equal(countdownText(61_000, ar), `${ar.number(1, { minimumIntegerDigits: 2 })}:${ar.number(1, { minimumIntegerDigits: 2 })}`);
  });
});
