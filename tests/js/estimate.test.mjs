import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, test } from "node:test";

import { enterQueue } from "../../frontend/index.js";
import { estimateAt, estimateTick, paceOf, STALE_MIN_MS } from "../../frontend/estimate.js";
import { startHostedPage } from "../../frontend/hosted-page.js";
import { storageKey } from "../../frontend/storage.js";
import { FakeClock, FakeFetch, FakeStorage, installBrowser } from "./fakes.mjs";

const KEY = "pk_test_123";
const ROOM = "spring-drop";
const BASE = "https://queue.example.com";
const T0 = 1_700_000_000_000;

const waiting = (fields = {}) => ({
  status: "waiting",
  room: ROOM,
  roomName: "Spring drop",
  redirectUrl: "https://shop.example/drop",
  ticket: 700,
  position: 600,
  etaSeconds: 600,
  opensAt: null,
  pollAfterMs: 60_000,
  queueToken: "qt1.k1.t.sig",
  token: null,
  roomStatus: "open",
  ...fields,
});
const admitted = () => waiting({ status: "admitted", token: "ab1.k1.a.sig", position: null, etaSeconds: null, pollAfterMs: null });

describe("estimateAt: the place between polls", () => {
  test("moves at position / etaSeconds, in whole places, never ahead of the pace", () => {
    const answer = waiting({ position: 600, etaSeconds: 300 }); // 2 places a second
    assert.equal(paceOf(answer, T0), 2);
    assert.equal(estimateAt(answer, T0, T0 + 400), null, "not a whole place yet");
    for (const ms of [500, 1000, 1499, 10_000, 29_999]) {
      const shown = estimateAt(answer, T0, T0 + ms);
      assert.equal(shown.position, 600 - Math.floor((2 * ms) / 1000));
      assert.ok(600 - shown.position <= (2 * ms) / 1000, "never more places than the pace allows");
      assert.equal(shown.etaSeconds, Math.ceil(300 - ms / 1000));
      assert.equal(shown.estimate, true);
      assert.equal(shown.queueToken, answer.queueToken, "otherwise the answer as it was");
    }
  });

  test("never shows a place before the first nor a negative ETA", () => {
    const answer = waiting({ position: 3, etaSeconds: 3, pollAfterMs: 5000 });
    const late = estimateAt(answer, T0, T0 + 50_000);
    assert.equal(late.position, 1);
    assert.equal(late.etaSeconds, 0);
  });

  test("stops moving once the last answer is stale (lost polls)", () => {
    const answer = waiting({ position: 10_000, etaSeconds: 1000, pollAfterMs: 20_000 }); // 10 a second
    const cap = Math.max(STALE_MIN_MS, 2 * 20_000);
    assert.equal(estimateAt(answer, T0, T0 + cap).position, 10_000 - cap / 100);
    assert.equal(estimateAt(answer, T0, T0 + 10 * cap).position, 10_000 - cap / 100);
  });

  test("no estimate without a pace: held, paused, pre-queue, no ETA, admitted", () => {
    const cases = [
      waiting({ status: "held", position: null, etaSeconds: null }),
      waiting({ roomStatus: "paused", etaSeconds: null }),
      waiting({ roomStatus: "paused" }),
      waiting({ opensAt: T0 + 60_000 }),
      waiting({ etaSeconds: null }),
      waiting({ etaSeconds: 0 }),
      waiting({ position: 40, etaSeconds: 40, pollAfterMs: 2000 }), // the front: polls move it
      admitted(),
    ];
    for (const answer of cases) {
      assert.equal(paceOf(answer, T0), null, JSON.stringify(answer));
      assert.equal(estimateAt(answer, T0, T0 + 30_000), null);
      assert.equal(estimateTick(answer, T0), null);
    }
  });

  test("ticks once a place, at most once a second and at least every 15 s", () => {
    assert.equal(estimateTick(waiting({ position: 600, etaSeconds: 60 }), T0), 1000);
    assert.equal(estimateTick(waiting({ position: 600, etaSeconds: 1800 }), T0), 3000);
    assert.equal(estimateTick(waiting({ position: 10, etaSeconds: 3600 }), T0), 15_000);
  });
});

describe("the agent between polls", () => {
  let browser;
  let clock;
  beforeEach(() => {
    browser = installBrowser();
    clock = new FakeClock(T0);
    const record = { sessionToken: "st1.k1.s.sig", sessionExpiresAt: T0 + 3_600_000, queueToken: "qt1.k1.kept.sig" };
    browser.localStorage.setItem(storageKey(BASE, ROOM), JSON.stringify(record));
  });
  afterEach(() => browser.restore());

  const start = (fake, updates, options = {}) =>
    enterQueue(ROOM, { apiKey: KEY, baseUrl: BASE, fetch: fake.fetch, clock, onUpdate: (u) => updates.push({ at: clock.now(), ...u }), ...options });

  test("moves the place at the room's pace, polls when told, and the poll corrects it", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/poll": [
        { body: waiting({ position: 600, etaSeconds: 600, pollAfterMs: 60_000 }) }, // 1 a second
        { body: waiting({ position: 580, etaSeconds: 580, pollAfterMs: 5000 }) }, // slower than shown
        { body: admitted() },
      ],
    });
    const updates = [];
    const { value } = await clock.settle(start(fake, updates));
    assert.equal(value.status, "admitted");
    assert.equal(value.estimate, undefined);
    const polls = fake.callsTo("/api/v1/queue/poll").map((call) => call.at - T0);
    assert.deepEqual(polls, [0, 60_000, 65_000], "the server's pollAfterMs, whatever the estimates");
    const estimates = updates.filter((u) => u.estimate);
    const between = estimates.filter((u) => u.at < T0 + 60_000);
    assert.deepEqual(between.map((u) => u.at - T0), Array.from({ length: 59 }, (_, i) => (i + 1) * 1000), "one a second between the two polls");
    for (const u of between) {
      const elapsed = (u.at - T0) / 1000;
      assert.equal(u.position, 600 - Math.floor(elapsed));
      assert.ok(u.position >= 600 - elapsed, "never ahead of the pace");
    }
    const real = updates.filter((u) => !u.estimate).map((u) => u.position);
    assert.deepEqual(real, [600, 580, null]);
    const afterCorrection = updates.filter((u) => u.at >= T0 + 60_000);
    assert.equal(afterCorrection[0].position, 580, "the poll's answer replaces the estimate");
    assert.ok(afterCorrection.slice(1).every((u) => !u.estimate || u.position >= 575));
  });

  test("estimates: false shows only the server's answers", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/poll": [{ body: waiting() }, { body: admitted() }],
    });
    const updates = [];
    await clock.settle(start(fake, updates, { estimates: false }));
    assert.deepEqual(updates.map((u) => u.position), [600, null]);
    assert.throws(() => enterQueue(ROOM, { apiKey: KEY, estimates: "yes" }), /`estimates`/);
  });

  test("a front visitor polls at the server's 1 s and hears of the admission at once", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/poll": [
        { body: waiting({ position: 2, etaSeconds: 2, pollAfterMs: 1000 }) },
        { body: waiting({ position: 1, etaSeconds: 1, pollAfterMs: 1000 }) },
        { body: admitted() },
      ],
    });
    const updates = [];
    const { value } = await clock.settle(start(fake, updates));
    assert.equal(value.status, "admitted");
    assert.deepEqual(fake.callsTo("/api/v1/queue/poll").map((call) => call.at - T0), [0, 1000, 2000]);
    assert.ok(updates.every((u) => !u.estimate), "the front's polls move its place themselves");
  });
});

describe("the hosted page between polls", () => {
  let browser;
  let clock;
  beforeEach(() => {
    browser = installBrowser();
    clock = new FakeClock(T0);
    browser.localStorage.setItem(`anteroom::${ROOM}`, JSON.stringify({ sessionToken: "st1.k1.s.sig", sessionExpiresAt: T0 + 3_600_000 }));
  });
  afterEach(() => browser.restore());

  test("shows the moving place labelled as an estimate, and the poll's figure without the label", async () => {
    const elements = new Map();
    for (const id of ["anteroom", "position", "ahead", "estimate", "eta", "status-text", "announce"]) {
      elements.set(id, { id, dataset: {}, textContent: "", hidden: false, setAttribute() {}, removeAttribute() {} });
    }
    const i18n = { textContent: readFileSync(new URL("../../translations/de.json", import.meta.url), "utf8") };
    elements.set("anteroom-i18n", i18n);
    Object.assign(elements.get("anteroom").dataset, { room: ROOM, key: KEY, baseUrl: "", lang: "de" });
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [{ body: waiting({ position: 600, etaSeconds: 300, pollAfterMs: 30_000 }) }],
      "/api/v1/queue/poll": [{ body: waiting({ position: 545, etaSeconds: 280, pollAfterMs: 30_000 }) }],
    });
    startHostedPage({
      document: { getElementById: (id) => elements.get(id) ?? null },
      location: { assign() {} },
      sessionStorage: new FakeStorage(),
      fetch: fake.fetch,
      clock,
    });
    const position = elements.get("position");
    const label = elements.get("estimate");
    await clock.advance(0);
    assert.equal(position.textContent, "600");
    assert.equal(label.hidden, true);
    const announced = elements.get("announce").textContent;
    await clock.advance(10_000);
    assert.equal(position.textContent, "580");
    assert.equal(label.hidden, false);
    assert.equal(label.textContent, "Schätzung");
    assert.equal(elements.get("announce").textContent, announced, "estimates are not read out");
    await clock.advance(20_000); // the poll
    assert.equal(position.textContent, "545");
    assert.equal(label.hidden, true);
  });
});
