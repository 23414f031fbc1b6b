import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { countdownText, etaText, pageState, progressValue, shouldAnnounce, withAdmission } from "../../frontend/view.js";

describe("the hosted page's view", () => {
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
    assert.equal(etaText(null), null);
    assert.equal(etaText(undefined), null);
    assert.equal(etaText(0), "less than a minute");
    assert.equal(etaText(59), "less than a minute");
    assert.equal(etaText(60), "about 1 minute");
    assert.equal(etaText(89), "about 1 minute");
    assert.equal(etaText(90), "about 2 minutes");
    assert.equal(etaText(3600), "about 60 minutes");
  });

  test("countdownText", () => {
    assert.equal(countdownText(0), "00:00:00");
    assert.equal(countdownText(-5000), "00:00:00");
    assert.equal(countdownText(1), "00:00:01");
    assert.equal(countdownText(61_000), "00:01:01");
    assert.equal(countdownText(50 * 3600_000 + 59_000), "50:00:59");
  });

  test("progressValue", () => {
    assert.equal(progressValue(11, 11), 0);
    assert.equal(progressValue(11, 6), 0.5);
    assert.equal(progressValue(11, 1), 1);
    assert.equal(progressValue(1, 1), 0);
    assert.equal(progressValue(5, 9), 0, "pushed back: clamped");
  });

  test("shouldAnnounce: state changes, and positions that moved meaningfully", () => {
    assert.equal(shouldAnnounce(null, { state: "waiting", position: 500 }), true);
    assert.equal(shouldAnnounce({ state: "waiting", position: 500 }, { state: "waiting", position: 499 }), false);
    assert.equal(shouldAnnounce({ state: "waiting", position: 500 }, { state: "waiting", position: 450 }), true);
    assert.equal(shouldAnnounce({ state: "waiting", position: 5 }, { state: "waiting", position: 4 }), true);
    assert.equal(shouldAnnounce({ state: "waiting", position: 4 }, { state: "waiting", position: 4 }), false);
    assert.equal(shouldAnnounce({ state: "waiting", position: 4 }, { state: "paused", position: 4 }), true);
  });
});
