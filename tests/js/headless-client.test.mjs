import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { BASE, KEY, ROOM, STORE_KEY, admissionToken, queueAnswer, server, withoutBrowser } from "./headless-fakes.mjs";
import { FakeClock } from "./fakes.mjs";

// The browser globals go before the client is even loaded: nothing at import time may need them.
const browser = withoutBrowser();
const { AnteroomError, asyncStorage, createClient, memoryStorage } = await import("../../frontend/headless/index.js");
const { hasZeroBits } = await import("../../frontend/headless/solver.js");
const { tokenExpiry } = await import("../../frontend/headless/storage.js");

const client = (clock, fake, options = {}) =>
  createClient({ apiKey: KEY, baseUrl: BASE, fetch: fake.fetch, clock, estimates: false, ...options });

/** An AsyncStorage-shaped store: every answer a promise, its items visible to the test. */
function asyncStore(items = new Map()) {
  return {
    items,
    getItem: async (key) => items.get(key) ?? null,
    setItem: async (key, value) => void items.set(key, value),
    removeItem: async (key) => void items.delete(key),
  };
}

after(() => {
  // Asserted once every test has run: not one of them read a browser global.
  const { touched } = browser;
  browser.restore();
  assert.deepEqual(touched, []);
});

describe("the headless client under Node, with no browser global", () => {
  test("window, document, localStorage, navigator, Worker, BroadcastChannel are absent", () => {
    for (const name of ["window", "document", "localStorage", "navigator", "Worker", "BroadcastChannel", "Blob"]) {
      assert.ok(browser.absent.includes(name), `${name} is absent`);
    }
  });

  test("arrives, polls at the server's pace and resolves with the admission", async () => {
    const clock = new FakeClock();
    const fake = server(clock);
    const updates = [];
    const anteroom = client(clock, fake);
    const { value } = await clock.settle(anteroom.enter(ROOM, { onUpdate: (u) => updates.push(u) }));
    assert.equal(value.status, "admitted");
    assert.deepEqual(fake.calls.map((c) => c.path), ["/api/v1/arrive", "/api/v1/queue/join", "/api/v1/queue/poll", "/api/v1/queue/poll"]);
    const joinedAt = fake.callsTo("/api/v1/queue/join")[0].at;
    assert.deepEqual(fake.callsTo("/api/v1/queue/poll").map((c) => c.at - joinedAt), [1000, 2000]);
    assert.deepEqual(updates.map((u) => [u.status, u.position]), [["waiting", 5], ["waiting", 2], ["admitted", 5]]);
    assert.equal((await anteroom.admission(ROOM)).token, value.token);
    // The proof of work went out as the browser agent sends it, with no device facts made up.
    assert.deepEqual(fake.callsTo("/api/v1/arrive")[0].body.signals, {});
  });

  test("the typed events: an ErrorUpdate before each retry, with the time of the next attempt", async () => {
    const clock = new FakeClock();
    const fake = server(clock, { poll: [{ status: 503, body: { error: "Unavailable", message: "down" }, headers: { "Retry-After": "7" } }, queueAnswer({ status: "admitted", token: admissionToken(2e9) })] });
    const seen = [];
    const anteroom = client(clock, fake);
    anteroom.subscribe((update, room) => seen.push([room, update.status, update.error ?? null]));
    const { value } = await clock.settle(anteroom.enter(ROOM));
    assert.equal(value.status, "admitted");
    const error = seen.find(([, status]) => status === "error");
    assert.deepEqual(error, [ROOM, "error", "Unavailable"]);
    const polls = fake.callsTo("/api/v1/queue/poll").map((c) => c.at);
    assert.ok(polls[1] - polls[0] >= 7000, "a 503's Retry-After is a floor");
  });

  test("a poll sent to another region than its ticket's is repeated, never a new entry", async () => {
    const clock = new FakeClock();
    const wrong = { status: 421, body: { error: "WrongRegion", message: "This ticket belongs to region 'eu'; send its calls there." }, headers: { "Retry-After": "1" } };
    const fake = server(clock, { poll: [wrong, wrong, queueAnswer({ status: "admitted", token: admissionToken(2e9) })] });
    const { value } = await clock.settle(client(clock, fake).enter(ROOM));
    assert.equal(value.status, "admitted");
    assert.equal(fake.callsTo("/api/v1/queue/join").length, 1, "the spot was kept: no second join");
    assert.equal(fake.callsTo("/api/v1/queue/poll").length, 3);
  });

  for (const [name, sha256] of [
    ["a sync digest (node:crypto)", (bytes) => createHash("sha256").update(bytes).digest()],
    // (answering with a promise, as a native module does; crypto.subtle's would settle off the fake clock)
    ["an async digest", async (bytes) => new Uint8Array(createHash("sha256").update(bytes).digest()).buffer],
  ]) {
    test(`the proof of work runs on the app's SHA-256: ${name}`, async () => {
      const clock = new FakeClock();
      const fake = server(clock);
      let calls = 0;
      const counted = (bytes) => (calls++, sha256(bytes));
      const { value } = await clock.settle(client(clock, fake, { sha256: counted }).enter(ROOM));
      assert.equal(value.status, "admitted");
      const solutions = fake.callsTo("/api/v1/queue/join")[0].body.solutions;
      assert.equal(calls, solutions.reduce((sum, s) => sum + Number(s) + 1, 0), "every hash was the app's");
    });
  }

  test("hasZeroBits reads leading bits exactly", () => {
    const bytes = new Uint8Array(32);
    bytes[1] = 0b0001_0000;
    assert.equal(hasZeroBits(bytes, 11), true);
    assert.equal(hasZeroBits(bytes, 12), false);
    assert.throws(() => hasZeroBits(new Uint8Array(16), 4), /32 bytes/);
  });
});

describe("state that survives a restart", () => {
  test("a restarted client polls its kept spot rather than entering again", async () => {
    const clock = new FakeClock();
    const items = new Map();
    const before = server(clock, { poll: [queueAnswer({ position: 4, pollAfterMs: 60_000 })] });
    const stop = new AbortController();
    const first = client(clock, before, { storage: asyncStorage(asyncStore(items)) });
    const waiting = first.enter(ROOM, { signal: stop.signal });
    await clock.advance(1000); // joined, then polled once
    assert.equal(before.callsTo("/api/v1/queue/poll").length, 1);
    stop.abort(new Error("the app was killed"));
    await assert.rejects(waiting, /killed/);
    assert.equal(JSON.parse(items.get(STORE_KEY)).queueToken, "qt1.k1.first.sig");

    const after = server(clock);
    const second = client(clock, after, { storage: asyncStorage(asyncStore(items)) });
    const { value } = await clock.settle(second.enter(ROOM));
    assert.equal(value.status, "admitted");
    assert.deepEqual(after.calls.map((c) => c.path), ["/api/v1/queue/poll", "/api/v1/queue/poll"]);
    assert.equal(after.calls[0].body.ticket, "qt1.k1.first.sig");
    assert.equal(after.calls[0].at, clock.now() - 1000, "the kept spot is polled at once");
  });

  test("a kept spot swept while the app slept (410) is entered again with the kept session, not arrived", async () => {
    const clock = new FakeClock();
    const items = new Map([[STORE_KEY, JSON.stringify({ sessionToken: "st1.k1.kept.sig", sessionExpiresAt: clock.now() + 3_600_000, queueToken: "qt1.k1.swept.sig" })]]);
    const fake = server(clock, {
      poll: (body) => (body.ticket === "qt1.k1.swept.sig"
        ? { status: 410, body: { error: "TicketGone", message: "swept" } }
        : queueAnswer({ status: "admitted", token: admissionToken(2e9) })),
    });
    const { value } = await clock.settle(client(clock, fake, { storage: asyncStorage(asyncStore(items)) }).enter(ROOM));
    assert.equal(value.status, "admitted");
    assert.deepEqual(fake.calls.map((c) => c.path), ["/api/v1/queue/poll", "/api/v1/queue/enter", "/api/v1/queue/poll"]);
    assert.equal(fake.callsTo("/api/v1/queue/enter")[0].body.sessionToken, "st1.k1.kept.sig");
  });

  test("a kept admission is answered at once after a restart, with no call; an expired one is not", async () => {
    const clock = new FakeClock();
    const items = new Map();
    const fake = server(clock);
    await clock.settle(client(clock, fake, { storage: asyncStorage(asyncStore(items)) }).enter(ROOM));
    const calls = fake.calls.length;
    const restarted = client(clock, fake, { storage: asyncStorage(asyncStore(items)) });
    const kept = await restarted.enter(ROOM);
    assert.equal(kept.status, "admitted");
    assert.equal(kept.expiresAt, tokenExpiry(kept.token));
    assert.equal(fake.calls.length, calls);

    clock.time = kept.expiresAt; // past its expiry: the room is entered again (with the kept session)
    const again = client(clock, server(clock), { storage: asyncStorage(asyncStore(items)) });
    const fresh = again.enter(ROOM);
    assert.equal((await clock.settle(fresh)).value.status, "admitted");
  });

  test("a storage that fails is not fatal: the client goes on in memory", async () => {
    const clock = new FakeClock();
    const broken = { getItem: async () => { throw new Error("disk"); }, setItem: async () => { throw new Error("full"); }, removeItem: () => {} };
    const anteroom = client(clock, server(clock), { storage: asyncStorage(broken) });
    const { value } = await clock.settle(anteroom.enter(ROOM));
    assert.equal(value.status, "admitted");
    assert.equal((await anteroom.admission(ROOM)).token, value.token);
  });

  test("memoryStorage keeps strings", () => {
    const storage = memoryStorage();
    storage.setItem("k", 5);
    assert.equal(storage.getItem("k"), "5");
    storage.removeItem("k");
    assert.equal(storage.getItem("k"), null);
  });
});

describe("AbortSignal on every wait and call", () => {
  test("abort while waiting clears the timers and sends nothing more", async () => {
    const clock = new FakeClock();
    const fake = server(clock, { poll: [queueAnswer({ pollAfterMs: 30_000 })] });
    const stop = new AbortController();
    const waiting = client(clock, fake).enter(ROOM, { signal: stop.signal });
    await clock.advance(1000);
    const sent = fake.calls.length;
    stop.abort(new Error("gone"));
    await assert.rejects(waiting, /gone/);
    await clock.advance(120_000);
    assert.equal(fake.calls.length, sent);
    assert.equal(clock.timers.size, 0);
  });

  test("two callers share one journey; it stops only when the last one aborts", async () => {
    const clock = new FakeClock();
    const fake = server(clock);
    const anteroom = client(clock, fake);
    const one = new AbortController();
    const first = anteroom.enter(ROOM, { signal: one.signal });
    const second = anteroom.enter(ROOM);
    await clock.advance(0); // both wait on the one journey, its arrival under way
    one.abort(new Error("first gave up"));
    await assert.rejects(first, /first gave up/);
    const { value } = await clock.settle(second);
    assert.equal(value.status, "admitted");
    assert.equal(fake.callsTo("/api/v1/queue/join").length, 1);
  });

  test("leave and refresh take a signal; an aborted one sends nothing", async () => {
    const clock = new FakeClock();
    const fake = server(clock);
    const anteroom = client(clock, fake);
    await clock.settle(anteroom.enter(ROOM));
    const aborted = AbortSignal.abort(new Error("no"));
    await assert.rejects(anteroom.refresh(ROOM, { signal: aborted }), /no/);
    assert.equal(fake.callsTo("/api/v1/admission/refresh").length, 0);
    const renewed = await anteroom.refresh(ROOM);
    assert.equal((await anteroom.admission(ROOM)).token, renewed.token);
  });

  test("leave gives the spot back and forgets it", async () => {
    const clock = new FakeClock();
    const fake = server(clock, { poll: [queueAnswer({ pollAfterMs: 60_000 })] });
    const storage = asyncStore();
    const anteroom = client(clock, fake, { storage });
    const waiting = anteroom.enter(ROOM);
    await clock.advance(1000);
    await anteroom.leave(ROOM);
    await assert.rejects(waiting, (error) => error instanceof AnteroomError && error.code === "Left");
    assert.deepEqual(fake.callsTo("/api/v1/queue/leave").map((c) => c.body.ticket), ["qt1.k1.first.sig"]);
    assert.equal(JSON.parse(storage.items.get(STORE_KEY)).queueToken, null);
  });
});

describe("bad options", () => {
  const cases = [
    ["apiKey", { apiKey: "sk_x" }],
    ["baseUrl", { baseUrl: "/relative" }],
    ["storage", { storage: { getItem() {} } }],
    ["sha256", { sha256: "node" }],
    ["clock", { clock: {} }],
    ["signals", { signals: 3 }],
  ];
  for (const [name, bad] of cases) {
    test(`a bad ${name} throws a TypeError naming it`, () => {
      assert.throws(() => createClient({ apiKey: KEY, baseUrl: BASE, ...bad }), (e) => e instanceof TypeError && e.message.includes(`\`${name}\``));
    });
  }
  test("a bad room slug and a bad signal are named", async () => {
    const anteroom = createClient({ apiKey: KEY, baseUrl: BASE });
    await assert.rejects(anteroom.enter("No Such Room"), /`room`/);
    await assert.rejects(anteroom.enter(ROOM, { signal: {} }), /`signal`/);
    assert.throws(() => asyncStorage({}), /lacks getItem, setItem, removeItem/);
  });
});

