import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { BASE, KEY, ROOM, admissionToken, server, withoutBrowser } from "./headless-fakes.mjs";
import { FakeClock } from "./fakes.mjs";

const browser = withoutBrowser();
const { createClient, queueThrough } = await import("../../frontend/headless/index.js");

after(() => {
  const { touched } = browser;
  browser.restore();
  assert.deepEqual(touched, []);
});

const SHOP = "https://shop.example.com";
const queueRequired = () =>
  new Response(JSON.stringify({ error: "QueueRequired", message: "queue first", room: ROOM, api: `${BASE}/api/v1`, retryAfter: 5 }), {
    status: 429,
    headers: { "Content-Type": "application/json", "Retry-After": "5" },
  });

/**
 * The app's API behind an edge, as the edge answers: 429 QueueRequired without an admission it
 * accepts, the view's answer with one. `accepts(token)` says which it accepts.
 */
function shop({ accepts = () => true, renew = null } = {}) {
  const calls = [];
  const fetch = async (input, init = {}) => {
    const request = new Request(input, init);
    const admission = request.headers.get("Anteroom-Admission");
    calls.push({ method: request.method, url: request.url, admission, body: request.body ? await request.text() : null, header: request.headers.get("X-App") });
    if (!admission || !accepts(admission)) return queueRequired();
    const headers = renew ? { "Anteroom-Admission": renew } : {};
    return new Response(JSON.stringify({ ok: true }), { status: 200, headers });
  };
  return { calls, fetch };
}

function setup(options = {}) {
  const clock = new FakeClock();
  const anteroom = server(clock);
  const client = createClient({ apiKey: KEY, baseUrl: BASE, fetch: anteroom.fetch, clock, estimates: false });
  const app = shop(options.shop);
  const fetch = queueThrough(app.fetch, client, options.through);
  return { clock, anteroom, client, app, fetch };
}

describe("queueThrough", () => {
  test("a GET refused with QueueRequired queues, then is repeated once with the admission", async () => {
    const updates = [];
    const { clock, anteroom, app, fetch } = setup({ through: { onUpdate: (u) => updates.push(u.status) } });
    const { value } = await clock.settle(fetch(`${SHOP}/api/cart`, { headers: { "X-App": "1" } }));
    assert.equal(value.status, 200);
    assert.deepEqual(app.calls.map((c) => [c.method, c.admission === null, c.header]), [["GET", true, "1"], ["GET", false, "1"]]);
    assert.deepEqual(anteroom.calls.map((c) => c.path), ["/api/v1/arrive", "/api/v1/queue/join", "/api/v1/queue/poll", "/api/v1/queue/poll"]);
    assert.deepEqual(updates, ["waiting", "waiting", "admitted"]);
    assert.ok(app.calls[1].admission.startsWith("ab1."));
  });

  test("the app's own headers and a Request object survive the repeat", async () => {
    const { clock, app, fetch } = setup();
    const request = new Request(`${SHOP}/api/cart`, { headers: { "X-App": "req" } });
    const { value } = await clock.settle(fetch(request));
    assert.equal(value.status, 200);
    assert.deepEqual(app.calls.map((c) => c.header), ["req", "req"]);
  });

  test("a POST is not repeated: its 429 goes back to the app, and nobody queues", async () => {
    const { clock, anteroom, app, fetch } = setup();
    const { value } = await clock.settle(fetch(`${SHOP}/api/cart`, { method: "POST", body: "[1]" }));
    assert.equal(value.status, 429);
    assert.equal((await value.json()).error, "QueueRequired", "the app can still read the body");
    assert.equal(app.calls.length, 1);
    assert.equal(anteroom.calls.length, 0);
  });

  test("a POST is repeated (once, same body) when the app says so", async () => {
    const { clock, app, fetch } = setup({ through: { retryNonIdempotent: true } });
    const { value } = await clock.settle(fetch(`${SHOP}/api/cart`, { method: "POST", body: "[1]" }));
    assert.equal(value.status, 200);
    assert.deepEqual(app.calls.map((c) => [c.method, c.body]), [["POST", "[1]"], ["POST", "[1]"]]);
  });

  test("a repeat refused again goes back to the app: no second repeat, the admission forgotten", async () => {
    const { clock, client, app, fetch } = setup({ shop: { accepts: () => false } });
    const { value } = await clock.settle(fetch(`${SHOP}/api/cart`));
    assert.equal(value.status, 429);
    assert.equal(app.calls.length, 2);
    assert.equal(await client.admission(ROOM), null);
  });

  test("other answers, a 429 that is not QueueRequired among them, pass untouched", async () => {
    const clock = new FakeClock();
    const client = createClient({ apiKey: KEY, baseUrl: BASE, fetch: () => assert.fail("no queue"), clock });
    let calls = 0;
    const busy = async () => (calls++, new Response(JSON.stringify({ error: "RateLimited" }), { status: 429 }));
    const response = await queueThrough(busy, client)(`${SHOP}/x`);
    assert.equal(response.status, 429);
    assert.equal(calls, 1);
    const plain = await queueThrough(async () => new Response("<html>", { status: 429 }), client)(`${SHOP}/x`);
    assert.equal(plain.status, 429);
  });

  test("later calls to the same origin carry the kept admission from the start; a renewed one is kept", async () => {
    const renewed = admissionToken(2_000_000_000, "renewed");
    const { clock, client, app, fetch } = setup({ shop: { renew: renewed } });
    await clock.settle(fetch(`${SHOP}/api/cart`));
    assert.equal((await client.admission(ROOM)).token, renewed);
    const { value } = await clock.settle(fetch(`${SHOP}/api/cart/items`));
    assert.equal(value.status, 200);
    assert.equal(app.calls.length, 3, "one call, no 429 first");
    assert.equal(app.calls[2].admission, renewed);
  });

  test("abort while queued rejects the call with the reason; the app's call is not repeated", async () => {
    const { clock, app, fetch } = setup();
    const stop = new AbortController();
    const call = fetch(`${SHOP}/api/cart`, { signal: stop.signal });
    await clock.advance(500);
    stop.abort(new Error("left the screen"));
    await assert.rejects(call, /left the screen/);
    await clock.advance(60_000);
    assert.equal(app.calls.length, 1);
  });

  test("bad arguments are named", () => {
    const client = createClient({ apiKey: KEY, baseUrl: BASE });
    assert.throws(() => queueThrough("fetch", client), /`fetch`/);
    assert.throws(() => queueThrough(async () => {}, {}), /`client`/);
    assert.throws(() => queueThrough(async () => {}, client, { retryNonIdempotent: "yes" }), /`retryNonIdempotent`/);
  });
});
