import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";

import { AnteroomError, enterQueue } from "../../frontend/index.js";
import { storageKey } from "../../frontend/storage.js";
import { FakeClock, FakeFetch, installBrowser } from "./fakes.mjs";

const KEY = "pk_test_123";
const ROOM = "spring-drop";
const TICKET = "qt1.k1.shared.sig";

const gaps = (times) => times.slice(1).map((time, i) => time - times[i]);
const waiting = (position) => ({
  body: { status: "waiting", room: ROOM, position, etaSeconds: position * 10, opensAt: null, pollAfterMs: 1000, queueToken: TICKET },
});
const admitted = { body: { status: "admitted", room: ROOM, position: null, token: "ab1.k1.admission.sig", redirectUrl: "https://shop.example/" } };

/**
 * Two "tabs": two enterQueue calls sharing the fake locks, channel and storage; each tab's
 * requests are tagged with its name.
 */
function twoTabs(clock, { polls }) {
  let position = 10;
  const fake = new FakeFetch(clock, {
    "/api/v1/queue/enter": [waiting(position)],
    "/api/v1/queue/poll": () => {
      position -= 1;
      return position > polls ? waiting(position) : admitted;
    },
  });
  const open = (name) => {
    const controller = new AbortController();
    const updates = [];
    const fetch = (url, init) => {
      const answer = fake.fetch(url, init);
      fake.calls.at(-1).tab = name;
      return answer;
    };
    const done = enterQueue(ROOM, { apiKey: KEY, fetch, clock, signal: controller.signal, onUpdate: (update) => updates.push(update) })
      .then((value) => ({ value }), (error) => ({ error }));
    return { controller, updates, done };
  };
  return { fake, open };
}

for (const locks of [true, false]) {
  describe(locks ? "tabs with Web Locks" : "tabs with the localStorage lease", () => {
    let browser;
    let clock;
    beforeEach(() => {
      browser = installBrowser({ locks });
      clock = new FakeClock();
      browser.localStorage.setItem(storageKey("", ROOM), JSON.stringify({ sessionToken: "st1.k1.s.sig", sessionExpiresAt: clock.now() + 3_600_000 }));
    });
    afterEach(() => browser.restore());

    test("only the leader polls; the follower hears every update and takes over with the same ticket", async () => {
      const { fake, open } = twoTabs(clock, { polls: 0 });
      const first = open("first");
      await clock.advance(0);
      const second = open("second");
      await clock.advance(0);
      // A tab that joins late hears the latest answer at once.
      assert.deepEqual(second.updates.map((update) => update.position), [10]);

      await clock.advance(3000);
      assert.deepEqual(fake.calls.map((call) => [call.tab, call.path]), [
        ["first", "/api/v1/queue/enter"],
        ["first", "/api/v1/queue/poll"],
        ["first", "/api/v1/queue/poll"],
        ["first", "/api/v1/queue/poll"],
      ]);
      assert.deepEqual(first.updates.map((update) => update.position), [10, 9, 8, 7]);
      assert.deepEqual(second.updates.map((update) => update.position), [10, 9, 8, 7]);

      // The leader's tab closes.
      const reason = new Error("tab closed");
      first.controller.abort(reason);
      assert.equal((await first.done).error, reason);
      await clock.advance(1000);

      const after = fake.calls.slice(4);
      assert.ok(after.length >= 1, "the follower took over");
      assert.ok(after.every((call) => call.tab === "second" && call.path === "/api/v1/queue/poll"));
      assert.ok(after.every((call) => call.body.ticket === TICKET), "same ticket, no new entry");
      assert.equal(fake.callsTo("/api/v1/queue/enter").length, 1);
      assert.deepEqual(second.updates.map((update) => update.position).slice(0, 5), [10, 9, 8, 7, 6]);
      await clock.advance(10_000);
      // Polls at 3000 (at once on taking over), 4000, … 9000, when the admission comes.
      const { value } = await second.done;
      assert.equal(value.status, "admitted");
      assert.deepEqual(gaps(fake.calls.slice(4).map((call) => call.at)), [1000, 1000, 1000, 1000, 1000, 1000]);
      assert.equal(clock.timers.size, 0);
    });

    test("a follower resolves with the admission the leader got", async () => {
      const { fake, open } = twoTabs(clock, { polls: 8 });
      const first = open("first");
      const second = open("second");
      await clock.advance(5000);
      const [one, two] = [await first.done, await second.done];
      assert.equal(one.value.token, "ab1.k1.admission.sig");
      assert.deepEqual(two.value, one.value);
      assert.ok(fake.calls.every((call) => call.tab === "first"));
      assert.equal(second.updates.at(-1).status, "admitted");
    });

    test("a follower that closes gives up its wait and sends nothing", async () => {
      const { fake, open } = twoTabs(clock, { polls: 0 });
      const first = open("first");
      const second = open("second");
      await clock.advance(1000);
      const reason = new Error("follower closed");
      second.controller.abort(reason);
      assert.equal((await second.done).error, reason);
      const heard = second.updates.length;
      first.controller.abort();
      await first.done;
      await clock.advance(10_000);
      assert.ok(fake.calls.every((call) => call.tab === "first"));
      assert.equal(second.updates.length, heard, "no listener left behind");
      assert.equal(clock.timers.size, 0);
      if (locks) assert.equal(browser.locks.held.size + (browser.locks.queues.get(`anteroom:${ROOM}`)?.length ?? 0), 0);
    });

    test("a follower rejects with the error that ended the leader", async () => {
      const fake = new FakeFetch(clock, {
        "/api/v1/queue/enter": [{ status: 403, body: { error: "QueueDenied", message: "no" } }],
      });
      const run = () => enterQueue(ROOM, { apiKey: KEY, fetch: fake.fetch, clock }).then(() => assert.fail("resolved"), (error) => error);
      const [one, two] = [run(), run()];
      await clock.advance(0);
      const [first, second] = [await one, await two];
      assert.ok(second instanceof AnteroomError);
      assert.deepEqual([second.code, second.status, second.message], [first.code, first.status, first.message]);
      assert.equal(fake.calls.length, 1);
    });
  });
}

describe("the localStorage lease", () => {
  test("a lease held by a tab that vanished is taken over once it runs out", async () => {
    const browser = installBrowser({ locks: false });
    try {
      const clock = new FakeClock();
      browser.localStorage.setItem(storageKey("", ROOM), JSON.stringify({ sessionToken: "st1.k1.s.sig", sessionExpiresAt: clock.now() + 3_600_000 }));
      browser.localStorage.setItem(`anteroom:${ROOM}:leader`, JSON.stringify({ tabId: "gone", until: clock.now() + 5000 }));
      const fake = new FakeFetch(clock, { "/api/v1/queue/enter": [admitted] });
      const startedAt = clock.now();
      const { value } = await clock.settle(enterQueue(ROOM, { apiKey: KEY, fetch: fake.fetch, clock }));
      assert.equal(value.status, "admitted");
      // Checked every 2 s: still held at 2 s and 4 s, expired at 6 s.
      assert.deepEqual(fake.calls.map((call) => call.at - startedAt), [6000]);
      assert.equal(browser.localStorage.getItem(`anteroom:${ROOM}:leader`), null, "released on the way out");
    } finally {
      browser.restore();
    }
  });
});

describe("tabs without BroadcastChannel", () => {
  test("each tab runs on its own", async () => {
    const browser = installBrowser({ channel: false });
    try {
      const clock = new FakeClock();
      browser.localStorage.setItem(storageKey("", ROOM), JSON.stringify({ sessionToken: "st1.k1.s.sig", sessionExpiresAt: clock.now() + 3_600_000 }));
      const fake = new FakeFetch(clock, { "/api/v1/queue/enter": [admitted] });
      const answers = await Promise.all([1, 2].map(() => enterQueue(ROOM, { apiKey: KEY, fetch: fake.fetch, clock })));
      assert.equal(answers.length, 2);
      assert.equal(fake.calls.length, 2);
    } finally {
      browser.restore();
    }
  });
});
