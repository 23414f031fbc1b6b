import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, test } from "node:test";

import { FRONT, HOLD_MAX_MS, SEEN_WITHIN_MS, admissionExpiry, callState, waitsForVisibility } from "../../frontend/callback.js";
import { startHostedPage } from "../../frontend/hosted-page.js";
import { FakeClock, FakeFetch, FakeStorage, installBrowser } from "./fakes.mjs";

const ROOM = "spring-drop";
const catalog = readFileSync(new URL("../../translations/en.json", import.meta.url), "utf8");

/** An admission token whose payload says it expires at `expMs` (the page reads, never checks). */
const admission = (expMs, n = 1) =>
  `ab1.k1.${Buffer.from(JSON.stringify({ exp: Math.floor(expMs / 1000), n })).toString("base64url")}.sig`;

class Element extends EventTarget {
  constructor(id) {
    super();
    this.id = id;
    this.dataset = {};
    this.textContent = "";
    this.hidden = false;
    this.disabled = false;
    this.attributes = new Map();
  }
  getAttribute(name) {
    return this.attributes.get(name) ?? null;
  }
  setAttribute(name, value) {
    this.attributes.set(name, String(value));
  }
  removeAttribute(name) {
    this.attributes.delete(name);
  }
  click() {
    this.dispatchEvent(new Event("click"));
  }
}

/** A page whose tab can be hidden and shown, with the favicon link and the alert button. */
function tab() {
  const elements = new Map();
  for (const id of ["anteroom", "room-name", "position", "status-text", "announce", "favicon", "alert", "anteroom-i18n"]) {
    elements.set(id, new Element(id));
  }
  elements.get("anteroom-i18n").textContent = catalog;
  elements.get("favicon").setAttribute("href", "/static/favicon.svg");
  elements.get("alert").hidden = true;
  Object.assign(elements.get("anteroom").dataset, { room: ROOM, key: "pk_test_1", roomName: "Spring drop", lang: "en" });
  const document = new EventTarget();
  Object.assign(document, {
    title: "Spring drop · waiting room",
    visibilityState: "visible",
    getElementById: (id) => elements.get(id) ?? null,
  });
  const assigned = [];
  return {
    document,
    get: (id) => elements.get(id),
    assigned,
    location: { assign: (url) => assigned.push(url) },
    setHidden(hidden) {
      document.visibilityState = hidden ? "hidden" : "visible";
      document.dispatchEvent(new Event("visibilitychange"));
    },
  };
}

class FakeNotification {
  static permission = "default";
  static asked = 0;
  static shown = [];
  static requestPermission() {
    FakeNotification.asked += 1;
    FakeNotification.permission = "granted";
    return Promise.resolve("granted");
  }
  constructor(title, options) {
    FakeNotification.shown.push({ title, ...options });
  }
}

class FakeAudio {
  static tones = 0;
  constructor() {
    this.currentTime = 0;
    this.destination = {};
  }
  createOscillator() {
    return { frequency: {}, connect: (node) => node, start: () => (FakeAudio.tones += 1), stop() {} };
  }
  createGain() {
    return { gain: {}, connect: (node) => node };
  }
}

const answer = (fields) => ({
  body: {
    status: "waiting", room: ROOM, roomName: "Spring drop", redirectUrl: "https://shop.example/go",
    position: 30, etaSeconds: 600, opensAt: null, pollAfterMs: 1000, queueToken: "qt1.k1.t.sig",
    roomStatus: "open", ...fields,
  },
});

describe("calling a visitor back", () => {
  test("the rules", () => {
    assert.equal(callState(false, "waiting", 1), null, "a visible tab keeps its own title");
    assert.equal(callState(true, "waiting", FRONT), "front");
    assert.equal(callState(true, "waiting", FRONT + 1), null);
    assert.equal(callState(true, "paused", 3), null);
    assert.equal(callState(true, "admitted", null), "admitted");
    const now = 1_000_000;
    assert.equal(waitsForVisibility(false, now + 1000, now), false, "a visible tab goes at once");
    assert.equal(waitsForVisibility(true, now + SEEN_WITHIN_MS, now), false, "enough life: go now");
    assert.equal(waitsForVisibility(true, now + SEEN_WITHIN_MS - 1, now), true);
    assert.equal(waitsForVisibility(true, null, now), false);
    assert.equal(admissionExpiry(admission(1_700_000_300_000)), 1_700_000_300_000);
    assert.equal(admissionExpiry("ab1.k1.!!!.sig"), null);
    assert.equal(admissionExpiry("nonsense"), null);
  });

  let browser;
  let clock;
  beforeEach(() => {
    browser = installBrowser();
    clock = new FakeClock();
    browser.localStorage.setItem(`anteroom::${ROOM}`, JSON.stringify({ sessionToken: "st1.k1.s.sig", sessionExpiresAt: clock.now() + 3_600_000 }));
    FakeNotification.permission = "default";
    FakeNotification.asked = 0;
    FakeNotification.shown = [];
    FakeAudio.tones = 0;
  });
  afterEach(() => browser.restore());

  const start = (fake, view) =>
    startHostedPage({
      document: view.document, location: view.location, sessionStorage: new FakeStorage(), fetch: fake.fetch, clock,
      Notification: FakeNotification, AudioContext: FakeAudio,
    });

  test("a background tab's title and icon change at the front ten and on admission; nothing is asked unasked", async () => {
    const long = admission(clock.now() + 300_000);
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ position: 30 })],
      "/api/v1/queue/poll": [answer({ position: 10 }), answer({ position: 4 }), answer({ status: "admitted", token: long, position: null })],
    });
    const view = tab();
    start(fake, view);
    await clock.advance(0);
    assert.equal(view.get("alert").hidden, false, "the offer is shown");
    view.setHidden(true);
    assert.equal(view.document.title, "Spring drop · waiting room", "30th: not yet");
    await clock.advance(1000);
    assert.equal(view.document.title, "Almost your turn · Spring drop");
    assert.equal(view.get("favicon").getAttribute("href"), "/static/favicon-turn.svg");
    view.setHidden(false);
    assert.equal(view.document.title, "Spring drop · waiting room", "a visible tab has its own title back");
    assert.equal(view.get("favicon").getAttribute("href"), "/static/favicon.svg");
    view.setHidden(true);
    await clock.advance(1000);
    await clock.advance(1000);
    assert.equal(view.document.title, "Your turn! · Spring drop");
    assert.equal(view.assigned.length, 1, "five minutes of admission left: the site's page loads at once");
    assert.equal(FakeNotification.asked, 0, "no permission prompt without a click");
    assert.deepEqual(FakeNotification.shown, []);
    assert.equal(FakeAudio.tones, 0);
  });

  test("after a click, a notification and a sound at the front and on admission", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ position: 12 })],
      "/api/v1/queue/poll": [answer({ position: 9 }), answer({ status: "admitted", token: admission(clock.now() + 300_000), position: null })],
    });
    const view = tab();
    start(fake, view);
    await clock.advance(0);
    view.get("alert").click();
    assert.equal(FakeNotification.asked, 1);
    assert.equal(view.get("alert").disabled, true);
    assert.equal(view.get("alert").textContent, "You'll be alerted when it's your turn.");
    view.setHidden(true);
    await clock.advance(1000);
    await clock.advance(1000);
    assert.deepEqual(FakeNotification.shown.map((n) => n.title), ["Almost your turn · Spring drop", "Your turn! · Spring drop"]);
    assert.equal(FakeAudio.tones, 2);
  });

  test("a short admission in a hidden tab is held, refreshed, and used when the tab is seen", async () => {
    const first = admission(clock.now() + 30_000, 1);
    const second = admission(clock.now() + 50_000, 2);
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ position: 2 })],
      "/api/v1/queue/poll": [answer({ status: "admitted", token: first, position: null })],
      "/api/v1/admission/refresh": [answer({ status: "admitted", token: second, position: null })],
    });
    const view = tab();
    start(fake, view);
    await clock.advance(0);
    view.setHidden(true);
    await clock.advance(1000);
    assert.equal(view.document.title, "Your turn! · Spring drop");
    assert.deepEqual(view.assigned, [], "30 s of life would run out unseen: held");
    await clock.advance(18_000);
    assert.equal(fake.callsTo("/api/v1/admission/refresh").length, 0);
    await clock.advance(1_000); // ten seconds before it expires
    assert.deepEqual(fake.callsTo("/api/v1/admission/refresh").map((c) => c.body.token), [first]);
    view.setHidden(false);
    assert.deepEqual(view.assigned, [`https://shop.example/go?abq=${encodeURIComponent(second)}`]);
  });

  test("a held admission is used anyway after the longest hold", async () => {
    let n = 0;
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ status: "admitted", token: admission(clock.now() + 30_000), position: null })],
      "/api/v1/admission/refresh": () => answer({ status: "admitted", token: admission(clock.now() + 30_000, ++n), position: null }),
    });
    const view = tab();
    view.document.visibilityState = "hidden";
    start(fake, view);
    await clock.advance(HOLD_MAX_MS - 1);
    assert.deepEqual(view.assigned, []);
    await clock.advance(30_000);
    assert.equal(view.assigned.length, 1);
    assert.ok(n >= 25, `refreshed every 20 s meanwhile (${n})`);
  });
});
