import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, test } from "node:test";

import { AnteroomError, enterQueue } from "../../frontend/index.js";
import { backoffDelay } from "../../frontend/backoff.js";
import { storageKey } from "../../frontend/storage.js";
import { FakeClock, FakeFetch, flush, installBrowser } from "./fakes.mjs";

const KEY = "pk_test_123";
const ROOM = "spring-drop";
const BASE = "https://queue.example.com";
const STORE_KEY = storageKey(BASE, ROOM);
const CHALLENGE = "pc1.k1.eyJleHAiOjE3MDAwMDAwNjB9.c2lnbmF0dXJl";
const DIFFICULTY = 6;

function leadingZeroBits(bytes) {
  let bits = 0;
  for (const byte of bytes) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

function queueAnswer(fields = {}) {
  return {
    status: 200,
    body: {
      status: "waiting",
      room: ROOM,
      roomName: "Spring drop",
      redirectUrl: "https://shop.example/drop",
      ticket: 7,
      position: 5,
      etaSeconds: 60,
      opensAt: null,
      pollAfterMs: 1000,
      queueToken: "qt1.k1.first.sig",
      token: null,
      roomStatus: "open",
      ...fields,
    },
  };
}

const admitted = (fields = {}) => queueAnswer({ status: "admitted", token: "ab1.k1.admission.sig", pollAfterMs: null, ...fields });
const failure = (status, error, { retryAfter, header } = {}) => ({
  status,
  body: { error, message: `${error} happened`, ...(retryAfter === undefined ? {} : { retryAfter }) },
  headers: header === undefined ? {} : { "Retry-After": String(header) },
});

const fitted = (fields = {}) => ({
  challenge: CHALLENGE,
  difficulty: DIFFICULTY,
  puzzles: Array.from({ length: 4 }, (_, i) => ({ prefix: `seed.${i}`, difficulty: DIFFICULTY })),
  minPuzzles: 2,
  fitMs: 600,
  expectedHashes: 256,
  tier: "low-calm",
  expiresAt: 1_700_000_060_000,
  ...fields,
});
const solves = (puzzles, solutions) =>
  solutions.every((s, i) => leadingZeroBits(createHash("sha256").update(`${puzzles[i].prefix}:${s}`).digest()) >= puzzles[i].difficulty);

/**
 * A server that checks proofs honestly; `enter` scripts the spot's answers, to enter and to
 * join alike (a join's is wrapped with its session).
 */
function server(clock, { enter = [queueAnswer()], poll = [admitted()], challenge = fitted(), ...extra } = {}) {
  let sessions = 0;
  let spots = 0;
  const spot = (body, call) => (typeof enter === "function" ? enter(body, call) : enter[Math.min(spots++, enter.length - 1)]);
  return new FakeFetch(clock, {
    "/api/v1/arrive": [{ body: challenge }],
    "/api/v1/queue/join": (body, call) => {
      assert.equal(body.challenge, challenge.challenge);
      assert.ok(body.solutions.length >= challenge.minPuzzles && solves(challenge.puzzles, body.solutions), "the solutions must meet the difficulty");
      const answer = spot(body, call);
      if (typeof answer === "string" || (answer.status ?? 200) !== 200) return answer;
      sessions += 1;
      const session = { sessionToken: `st1.k1.session${sessions}.sig`, expiresAt: clock.now() + 3_600_000, score: 3, sig: [] };
      return { ...answer, body: { session, queue: answer.body } };
    },
    "/api/v1/queue/enter": spot,
    "/api/v1/queue/poll": poll,
    ...extra,
  });
}

let browser;
let clock;
beforeEach(() => {
  browser = installBrowser();
  clock = new FakeClock();
});
afterEach(() => browser.restore());

const stored = () => JSON.parse(browser.localStorage.getItem(STORE_KEY) ?? "null");
const store = (record) => browser.localStorage.setItem(STORE_KEY, JSON.stringify(record));
const liveSession = () => ({ sessionToken: "st1.k1.stored.sig", sessionExpiresAt: clock.now() + 3_600_000 });
const start = (fake, options = {}) =>
  enterQueue(ROOM, { apiKey: KEY, baseUrl: BASE, fetch: fake.fetch, clock, ...options });
const pollTimes = (fake) => fake.callsTo("/api/v1/queue/poll").map((call) => call.at);
const outcomeOf = (promise) => promise.then((value) => ({ value }), (error) => ({ error }));
const gaps = (times) => times.slice(1).map((time, i) => time - times[i]);

describe("the happy path", () => {
  test("arrives in two calls, and polls at the server's pollAfterMs until admitted", async () => {
    const fake = server(clock, {
      enter: [queueAnswer({ pollAfterMs: 1000 })],
      poll: [queueAnswer({ position: 3, pollAfterMs: 2500 }), queueAnswer({ position: 1, pollAfterMs: 5000 }), admitted()],
    });
    const updates = [];
    const { value } = await clock.settle(start(fake, { onUpdate: (update) => updates.push(update) }));

    assert.equal(value.status, "admitted");
    assert.equal(value.token, "ab1.k1.admission.sig");
    assert.deepEqual(fake.calls.map((call) => call.path), [
      "/api/v1/arrive",
      "/api/v1/queue/join",
      "/api/v1/queue/poll",
      "/api/v1/queue/poll",
      "/api/v1/queue/poll",
    ]);
    const enteredAt = fake.callsTo("/api/v1/queue/join")[0].at;
    assert.deepEqual(pollTimes(fake).map((time) => time - enteredAt), [1000, 3500, 8500]);
    assert.deepEqual(updates.map((update) => update.status), ["waiting", "waiting", "waiting", "admitted"]);
    assert.ok(fake.calls.every((call) => call.body.apiKey === KEY && call.url.startsWith(BASE)));
  });

  for (const [fitMs, count] of [[0.001, 2], [1e9, 4]]) {
    test(`solves the floor's puzzles, times them, then as many as fit (fitMs ${fitMs}: ${count})`, async () => {
      const challenge = fitted({ fitMs });
      const fake = server(clock, { challenge });
      await clock.settle(start(fake));
      const ask = fake.callsTo("/api/v1/arrive")[0].body;
      assert.deepEqual([ask.room, ask.maxPuzzles], [ROOM, 16]);
      const join = fake.callsTo("/api/v1/queue/join")[0].body;
      assert.equal(join.solutions.length, count);
      assert.ok(solves(challenge.puzzles, join.solutions), "the first puzzles solved, in order");
      assert.equal("solution" in join, false);
    });
  }

  test("sends the arrive and join bodies the API documents", async () => {
    const fake = server(clock);
    await clock.settle(start(fake));
    const join = fake.callsTo("/api/v1/queue/join")[0].body;
    assert.deepEqual(Object.keys(join).sort(), ["apiKey", "challenge", "room", "signals", "solutions"]);
    assert.equal(join.challenge, CHALLENGE);
    assert.ok(join.solutions.every((s) => /^\d+$/.test(s)));
    assert.deepEqual(Object.keys(join.signals).sort(), ["hardwareConcurrency", "languages", "plugins", "timezone", "webdriver"]);
    assert.equal(join.signals.webdriver, false);
    assert.equal(join.signals.languages, 2);
    assert.equal(join.signals.hardwareConcurrency, 8);
    assert.equal(join.signals.plugins, 3);
    assert.deepEqual(fake.callsTo("/api/v1/arrive")[0].body.signals, join.signals);
    assert.deepEqual(fake.callsTo("/api/v1/queue/poll")[0].body, { apiKey: KEY, ticket: "qt1.k1.first.sig" });
  });

  test("an invite rides on the join", async () => {
    const fake = server(clock);
    await clock.settle(start(fake, { invite: "iv1.k1.vip.sig" }));
    assert.equal(fake.callsTo("/api/v1/queue/join")[0].body.invite, "iv1.k1.vip.sig");
  });

  test("a join retried after a 503 sends the same proof", async () => {
    const fake = server(clock, { enter: [failure(503, "Unavailable", { header: 2 }), queueAnswer()] });
    const { value } = await clock.settle(start(fake));
    assert.equal(value.status, "admitted");
    const [first, second] = fake.callsTo("/api/v1/queue/join").map((call) => call.body);
    assert.deepEqual(second, first);
    assert.equal(fake.callsTo("/api/v1/arrive").length, 1);
  });

  test("keeps the session and forgets the ticket once admitted", async () => {
    const fake = server(clock);
    const startedAt = clock.now();
    await clock.settle(start(fake));
    assert.deepEqual(stored(), { sessionToken: "st1.k1.session1.sig", sessionExpiresAt: startedAt + 3_600_000, queueToken: null });
  });

  test("a live stored session enters in one call", async () => {
    store(liveSession());
    const fake = server(clock);
    await clock.settle(start(fake));
    assert.equal(fake.callsTo("/api/v1/arrive").length, 0);
    assert.equal(fake.callsTo("/api/v1/queue/enter")[0].body.sessionToken, "st1.k1.stored.sig");
  });

  test("an expired stored session is sent as previousSession", async () => {
    store({ sessionToken: "st1.k1.old.sig", sessionExpiresAt: clock.now() - 1 });
    const fake = server(clock);
    await clock.settle(start(fake));
    assert.equal(fake.callsTo("/api/v1/queue/join")[0].body.previousSession, "st1.k1.old.sig");
  });

  test("a stored ticket is polled instead of entering again", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock);
    const { value } = await clock.settle(start(fake));
    assert.equal(value.status, "admitted");
    assert.deepEqual(fake.calls.map((call) => call.path), ["/api/v1/queue/poll"]);
    assert.equal(fake.calls[0].body.ticket, "qt1.k1.kept.sig");
    assert.equal(fake.calls[0].at, clock.time, "the first poll is at once");
  });

  test("an idle room resolves at once, without polling", async () => {
    store(liveSession());
    const fake = server(clock, { enter: [queueAnswer({ status: "idle", queueToken: null, position: null, pollAfterMs: null })] });
    const startedAt = clock.now();
    const { value } = await clock.settle(start(fake));
    assert.equal(value.status, "idle");
    assert.equal(clock.now(), startedAt);
    assert.equal(fake.callsTo("/api/v1/queue/poll").length, 0);
    assert.equal(stored().queueToken, null);
  });

  test("an admission dealt on entry resolves at once", async () => {
    store(liveSession());
    const fake = server(clock, { enter: [admitted()] });
    const { value } = await clock.settle(start(fake));
    assert.equal(value.token, "ab1.k1.admission.sig");
    assert.equal(fake.callsTo("/api/v1/queue/poll").length, 0);
  });

  test("a held spot keeps polling", async () => {
    store(liveSession());
    const held = queueAnswer({ status: "held", position: null, etaSeconds: null, pollAfterMs: 15000 });
    const fake = server(clock, { enter: [held], poll: [held, held, admitted()] });
    const { value } = await clock.settle(start(fake));
    assert.equal(value.status, "admitted");
    assert.deepEqual(gaps([fake.callsTo("/api/v1/queue/enter")[0].at, ...pollTimes(fake)]), [15000, 15000, 15000]);
  });
});

describe("backoff and Retry-After", () => {
  test("the backoff formula: equal jitter, base 1 s, factor 2, cap 60 s", () => {
    assert.deepEqual([0, 1, 2, 3, 6, 7, 20].map((n) => backoffDelay(n, () => 0)), [500, 1000, 2000, 4000, 30000, 30000, 30000]);
    assert.deepEqual([0, 1, 2, 3, 6, 7, 20].map((n) => backoffDelay(n, () => 1)), [1000, 2000, 4000, 8000, 60000, 60000, 60000]);
    assert.equal(backoffDelay(2, () => 0.25), 2500);
  });

  test("network errors back off exponentially, exactly as scheduled", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const poll = [...Array(8).fill("network"), admitted()];
    const fake = server(clock, { poll });
    const updates = [];
    const { value } = await clock.settle(start(fake, { random: () => 0.5, onUpdate: (update) => updates.push(update) }));
    assert.equal(value.status, "admitted");
    assert.deepEqual(gaps(pollTimes(fake)), [750, 1500, 3000, 6000, 12000, 24000, 45000, 45000]);
    const errors = updates.filter((update) => update.status === "error");
    assert.equal(errors.length, 8);
    assert.deepEqual(errors[0], { status: "error", error: "NetworkError", message: "The waiting room could not be reached.", retryAt: pollTimes(fake)[1] });
  });

  test("the backoff is capped at 60 s", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock, { poll: [...Array(10).fill("network"), admitted()] });
    await clock.settle(start(fake, { random: () => 0.9999999 }));
    assert.deepEqual(gaps(pollTimes(fake)), [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000, 60000]);
  });

  test("5xx backs off too, and a success resets the schedule", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock, {
      poll: [failure(500, "Internal"), failure(502, "Bad"), queueAnswer({ pollAfterMs: 1000 }), { status: 504, body: "<html>" }, admitted()],
    });
    await clock.settle(start(fake, { random: () => 0 }));
    assert.deepEqual(gaps(pollTimes(fake)), [500, 1000, 1000, 500]);
  });

  test("a 503 waits at least its Retry-After", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock, {
      poll: [failure(503, "Unavailable", { header: 10 }), failure(503, "Unavailable", { header: 1 }), admitted()],
    });
    await clock.settle(start(fake, { random: () => 0.5 }));
    assert.deepEqual(gaps(pollTimes(fake)), [10000, 1500]);
  });

  test("a 429 waits exactly Retry-After, with no jitter, and keeps the spot", async () => {
    store(liveSession());
    const fake = server(clock, {
      enter: [queueAnswer({ pollAfterMs: 1000 })],
      poll: [
        failure(429, "RateLimited", { header: 7 }),
        failure(429, "Busy", { retryAfter: 3 }),
        failure(429, "RateLimited", { header: 2, retryAfter: 9 }),
        admitted(),
      ],
    });
    const random = () => assert.fail("no jitter on an explicit Retry-After");
    const updates = [];
    const { value } = await clock.settle(start(fake, { random, onUpdate: (update) => updates.push(update) }));
    assert.equal(value.status, "admitted");
    assert.deepEqual(gaps(pollTimes(fake)), [7000, 3000, 2000]);
    assert.equal(fake.callsTo("/api/v1/queue/enter").length, 1, "never leaves the line");
    assert.ok(pollTimes(fake).every((_, i) => fake.callsTo("/api/v1/queue/poll")[i].body.ticket === "qt1.k1.first.sig"));
    assert.deepEqual(updates.filter((u) => u.status === "error").map((u) => u.error), ["RateLimited", "Busy", "RateLimited"]);
  });

  test("a full line (429 QueueFull on enter) retries the entry after Retry-After", async () => {
    store(liveSession());
    const fake = server(clock, { enter: [failure(429, "QueueFull", { header: 30 }), queueAnswer()] });
    await clock.settle(start(fake, { random: () => assert.fail("no jitter") }));
    assert.deepEqual(gaps(fake.callsTo("/api/v1/queue/enter").map((call) => call.at)), [30000]);
  });

  test("a Retry-After given as an HTTP date is honoured", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock, {
      poll: [failure(429, "RateLimited", { header: new Date(clock.now() + 12_000).toUTCString() }), admitted()],
    });
    await clock.settle(start(fake));
    assert.deepEqual(gaps(pollTimes(fake)), [12000]);
  });
});

describe("recovering and giving up", () => {
  test("410 TicketGone enters again with the same session", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.old.sig" });
    const fake = server(clock, {
      enter: [queueAnswer({ queueToken: "qt1.k1.new.sig" })],
      poll: (body) => (body.ticket === "qt1.k1.old.sig" ? failure(410, "TicketGone") : admitted()),
    });
    const { value } = await clock.settle(start(fake));
    assert.equal(value.status, "admitted");
    assert.deepEqual(fake.calls.map((call) => call.path), ["/api/v1/queue/poll", "/api/v1/queue/enter", "/api/v1/queue/poll"]);
    assert.deepEqual(fake.callsTo("/api/v1/queue/poll").map((call) => call.body.ticket), ["qt1.k1.old.sig", "qt1.k1.new.sig"]);
    assert.equal(fake.callsTo("/api/v1/queue/enter")[0].body.sessionToken, "st1.k1.stored.sig");
  });

  for (const [code, previous] of [["TokenExpired", "st1.k1.stored.sig"], ["TokenInvalid", undefined]]) {
    test(`401 ${code} on enter arrives again`, async () => {
      store(liveSession());
      const fake = server(clock, { enter: (body) => (body.sessionToken === "st1.k1.stored.sig" ? failure(401, code) : queueAnswer()) });
      const { value } = await clock.settle(start(fake));
      assert.equal(value.status, "admitted");
      assert.deepEqual(fake.calls.map((call) => call.path).slice(0, 3), [
        "/api/v1/queue/enter",
        "/api/v1/arrive",
        "/api/v1/queue/join",
      ]);
      assert.equal(fake.callsTo("/api/v1/queue/join")[0].body.previousSession, previous);
      assert.equal(stored().sessionToken, "st1.k1.session1.sig");
    });
  }

  test("gives up after repeated recoveries rather than loop", async () => {
    const fake = server(clock, { enter: [failure(401, "TokenInvalid")] });
    const { error } = await clock.settle(start(fake));
    assert.ok(error instanceof AnteroomError);
    assert.equal(error.code, "TokenInvalid");
    assert.equal(fake.callsTo("/api/v1/queue/enter").length + fake.callsTo("/api/v1/queue/join").length, 4);
  });

  test("SessionRevoked rejects and forgets the session and the ticket", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock, { poll: [failure(403, "SessionRevoked")] });
    const { error } = await clock.settle(start(fake));
    assert.ok(error instanceof AnteroomError);
    assert.equal(error.name, "AnteroomError");
    assert.deepEqual([error.code, error.status, error.message], ["SessionRevoked", 403, "SessionRevoked happened"]);
    assert.equal(browser.localStorage.getItem(STORE_KEY), null);
  });

  for (const [status, code] of [[403, "QueueDenied"], [403, "AddressRequired"], [404, "RoomNotFound"], [400, "BadRequest"], [401, "Unauthorized"]]) {
    test(`${status} ${code} on enter rejects with an AnteroomError`, async () => {
      store(liveSession());
      const fake = server(clock, { enter: [failure(status, code, { retryAfter: status === 400 ? undefined : 5 })] });
      const { error } = await clock.settle(start(fake));
      assert.ok(error instanceof AnteroomError);
      assert.deepEqual([error.code, error.status], [code, status]);
      assert.equal(error.retryAfter, status === 400 ? null : 5);
      assert.equal(fake.calls.length, 1);
      assert.equal(stored().sessionToken, "st1.k1.stored.sig", "the session is kept");
    });
  }
});

describe("aborting", () => {
  test("abort while waiting clears the timers, sends nothing more and rejects with the reason", async () => {
    store(liveSession());
    const fake = server(clock, { poll: [queueAnswer()] });
    const controller = new AbortController();
    const outcome = outcomeOf(start(fake, { signal: controller.signal }));
    await clock.advance(2500);
    const sent = fake.calls.length;
    assert.equal(sent, 3, "enter and two polls");
    const reason = new Error("tab closed");
    controller.abort(reason);
    const { error } = await outcome;
    assert.equal(error, reason);
    assert.equal(clock.timers.size, 0);
    await clock.advance(120_000);
    assert.equal(fake.calls.length, sent);
  });

  test("abort during a request aborts that request", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock, { poll: ["hang"] });
    const controller = new AbortController();
    const outcome = outcomeOf(start(fake, { signal: controller.signal }));
    await clock.advance(0);
    assert.equal(fake.calls.length, 1);
    controller.abort();
    const { error } = await outcome;
    assert.equal(error.name, "AbortError");
    assert.equal(fake.calls[0].signal.aborted, true);
  });

  test("abort during the proof of work stops it", async () => {
    const fake = server(clock, { challenge: fitted({ difficulty: 40, puzzles: [{ prefix: "seed.0", difficulty: 40 }], minPuzzles: 1 }) });
    const controller = new AbortController();
    const outcome = outcomeOf(start(fake, { signal: controller.signal }));
    await clock.step();
    await clock.step();
    assert.equal(clock.timers.size, 1, "the solver yields between slices");
    controller.abort();
    const { error } = await outcome;
    assert.equal(error.name, "AbortError");
    assert.equal(clock.timers.size, 0);
    assert.deepEqual(fake.calls.map((call) => call.path), ["/api/v1/arrive"]);
  });

  test("an already aborted signal rejects without a request", async () => {
    const fake = server(clock);
    const reason = new Error("never mind");
    const { error } = await clock.settle(start(fake, { signal: AbortSignal.abort(reason) }));
    assert.equal(error, reason);
    assert.equal(fake.calls.length, 0);
  });
});

describe("options", () => {
  const cases = [
    ["slug", () => enterQueue("No Caps", { apiKey: KEY })],
    ["slug", () => enterQueue("ab", { apiKey: KEY })],
    ["slug", () => enterQueue(42, { apiKey: KEY })],
    ["options", () => enterQueue(ROOM)],
    ["apiKey", () => enterQueue(ROOM, {})],
    ["apiKey", () => enterQueue(ROOM, { apiKey: "sk_secret" })],
    ["baseUrl", () => enterQueue(ROOM, { apiKey: KEY, baseUrl: 42 })],
    ["baseUrl", () => enterQueue(ROOM, { apiKey: KEY, baseUrl: "not a url" })],
    ["baseUrl", () => enterQueue(ROOM, { apiKey: KEY, baseUrl: "ftp://queue.example.com" })],
    ["onUpdate", () => enterQueue(ROOM, { apiKey: KEY, onUpdate: "log" })],
    ["signal", () => enterQueue(ROOM, { apiKey: KEY, signal: {} })],
    ["fetch", () => enterQueue(ROOM, { apiKey: KEY, fetch: "fetch" })],
    ["clock", () => enterQueue(ROOM, { apiKey: KEY, clock: { now: Date.now } })],
    ["random", () => enterQueue(ROOM, { apiKey: KEY, random: 0.5 })],
  ];
  for (const [name, call] of cases) {
    test(`a bad ${name} throws a TypeError naming it`, () => {
      assert.throws(call, (error) => error instanceof TypeError && error.message.includes(`\`${name}\``));
    });
  }

  test("the options object is copied, not changed", async () => {
    store(liveSession());
    const fake = server(clock);
    const options = { apiKey: KEY, baseUrl: `${BASE}/`, fetch: fake.fetch, clock };
    const frozen = Object.freeze({ ...options });
    await clock.settle(enterQueue(ROOM, frozen));
    assert.deepEqual(frozen, options);
    assert.ok(fake.calls.every((call) => call.url.startsWith(`${BASE}/api/v1/`)), "a trailing slash is dropped");
  });

  test("baseUrl defaults to the same origin", async () => {
    store({ ...liveSession() });
    browser.localStorage.setItem(storageKey("", ROOM), JSON.stringify(liveSession()));
    const fake = server(clock);
    await clock.settle(enterQueue(ROOM, { apiKey: KEY, fetch: fake.fetch, clock }));
    assert.equal(fake.calls[0].url, "/api/v1/queue/enter");
  });
});

describe("an unusable arrival", () => {
  test("a challenge without puzzles rejects with BadChallenge, nothing joined", async () => {
    const fake = server(clock, { challenge: fitted({ puzzles: undefined }) });
    const { error } = await clock.settle(start(fake));
    assert.ok(error instanceof AnteroomError);
    assert.equal(error.code, "BadChallenge");
    assert.deepEqual(fake.calls.map((call) => call.path), ["/api/v1/arrive"]);
  });
});

describe("waking from a sleep", () => {
  // A phone or laptop asleep runs no timers, and on waking they count on from where they
  // stopped: a poll due 5 minutes after the last one is, by the wall clock, long overdue.
  let saved;
  let page;
  beforeEach(() => {
    saved = Object.getOwnPropertyDescriptor(globalThis, "document");
    page = Object.assign(new EventTarget(), { visibilityState: "visible" });
    Object.defineProperty(globalThis, "document", { value: page, configurable: true, writable: true });
  });
  afterEach(() => {
    if (saved) Object.defineProperty(globalThis, "document", saved);
    else delete globalThis.document;
  });

  const far = queueAnswer({ position: 900, etaSeconds: 900, pollAfterMs: 300_000, queueToken: "qt1.k1.kept.sig" });
  const sleep = (ms) => {
    page.visibilityState = "hidden";
    page.dispatchEvent(new Event("visibilitychange"));
    clock.time += ms; // the wall clock moves on; the timers, asleep, do not fire
  };
  const wake = async (type = "visibilitychange") => {
    page.visibilityState = "visible";
    page.dispatchEvent(new Event(type));
    await flush();
  };

  for (const estimates of [false, true]) {
    test(`an overdue poll goes at once when the page is shown again (estimates ${estimates})`, async () => {
      store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
      const fake = server(clock, { poll: [far, far, admitted()] });
      const waiting = start(fake, { estimates });
      await flush();
      assert.equal(pollTimes(fake).length, 1);
      sleep(20 * 60_000);
      await flush();
      assert.equal(pollTimes(fake).length, 1, "nothing is sent while asleep");
      await wake();
      assert.deepEqual(gaps(pollTimes(fake)), [20 * 60_000], "polled the moment it woke");
      assert.deepEqual(fake.calls.map((call) => call.path), ["/api/v1/queue/poll", "/api/v1/queue/poll"]);
      assert.equal(fake.calls[1].body.ticket, "qt1.k1.kept.sig", "the kept ticket, not a new arrival");
      const { value } = await clock.settle(waiting);
      assert.equal(value.status, "admitted");
    });
  }

  test("a wake before the poll is due does not poll sooner than told", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock, { poll: [far, admitted()] });
    const waiting = start(fake, { estimates: false });
    await flush();
    sleep(60_000);
    await wake();
    await wake("resume");
    assert.equal(pollTimes(fake).length, 1);
    await clock.settle(waiting);
    assert.deepEqual(gaps(pollTimes(fake)), [300_000]);
  });
});

describe("waking from a sleep while retrying", () => {
  // Node's global object is no EventTarget: a browser window's is (its "online" event).
  const window = new EventTarget();
  beforeEach(() => {
    globalThis.addEventListener = window.addEventListener.bind(window);
    globalThis.removeEventListener = window.removeEventListener.bind(window);
  });
  afterEach(() => {
    delete globalThis.addEventListener;
    delete globalThis.removeEventListener;
  });

  test("back online after a sleep, an overdue retry goes at once, not a backoff later", async () => {
    store({ ...liveSession(), queueToken: "qt1.k1.kept.sig" });
    const fake = server(clock, { poll: ["network", "network", admitted()] });
    const waiting = start(fake, { random: () => 0 });
    await flush();
    await clock.advance(500); // the first retry, after 0.5 s: fails again; the next is 1 s away
    assert.equal(pollTimes(fake).length, 2);
    clock.time += 10 * 60_000; // asleep: no timer fires
    window.dispatchEvent(new Event("online"));
    await flush();
    assert.equal(pollTimes(fake).length, 3, "retried the moment the network came back");
    const { value } = await clock.settle(waiting);
    assert.equal(value.status, "admitted");
  });
});
