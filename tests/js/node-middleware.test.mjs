// The Node edge middleware behind real servers (node:http, Express 4 and 5) on 127.0.0.1, with a
// scripted Anteroom (another real server) where a refresh or a queue-through needs one. What the
// edge decides is the shared table (node-edge-contract.test.mjs); here, that the adapter reads
// real requests into the right facts and carries the decision out on real responses.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import http from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";

import { anteroomMiddleware } from "../../frontend/node/index.js";

const SECRET = Buffer.alloc(32, 7);
const KEYS = `k1:${SECRET.toString("base64")}`;
const NOW = 1_800_000_000;
const NAV = { Accept: "text/html,application/xhtml+xml", "Sec-Fetch-Mode": "navigate" };

/** Sign like Anteroom does (the format is checked against Python's tokens in node-verify). */
function sign(type, claims, secret = SECRET, kid = "k1") {
  const key = createHmac("sha256", secret).update(`anteroom-${type}-v1`).digest();
  const signed = `${type}.${kid}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
  return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
}

function networkTag(ipv4) {
  const key = createHmac("sha256", SECRET).update("anteroom-qi1-v1").digest();
  const bytes = Buffer.from([0x34, ...ipv4.split(".").map(Number)]);
  return createHmac("sha256", key).update(bytes).digest().subarray(0, 16).toString("base64url");
}

function admission(claims = {}) {
  const base = { q: "drop", qr: "q1", qj: "s1", vid: "v1", env: "web", jti: "j1", iat: NOW, exp: NOW + 300 };
  return sign("ab1", { ...base, ...claims });
}

/** Listen on 127.0.0.1:0; resolves to the server and its base URL. */
async function listen(handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

/** A closed port: connections to it are refused at once. */
async function deadUrl() {
  const { server, url } = await listen(() => {});
  await new Promise((resolve) => server.close(resolve));
  return url;
}

/** One request with node:http (fetch adds Sec-Fetch-Mode: cors and follows redirects). */
function request(base, path, { method = "GET", headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers }, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** One GET with the target exactly as spelled (no URL parsing on the way). */
function rawRequest(base, target, headers = {}) {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const options = { hostname, port, path: target, agent: false, headers: { Accept: "application/json", ...headers } };
    const req = http.request(options, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** A scripted Anteroom: answers are [status, body] per path, in order; requests are recorded. */
class FakeAnteroom {
  answers = new Map();
  requests = [];

  async start() {
    ({ server: this.server, url: this.url } = await listen((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        this.requests.push({ path: req.url, body: JSON.parse(body || "null") });
        const [status, answer] = this.answers.get(req.url)?.shift() ?? [404, { error: "NotFound" }];
        res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(answer));
      });
    }));
    return this;
  }

  answer(path, status, body) {
    if (!this.answers.has(path)) this.answers.set(path, []);
    this.answers.get(path).push([status, body]);
  }
}

/** A site behind the middleware; the app sets a cookie of its own to show ours is kept. */
async function site(options) {
  const guard = anteroomMiddleware({
    keys: KEYS,
    publicKey: "pk_test",
    routes: { "/checkout": "drop", "/api/cart": "drop", "/api": "api-room" },
    clock: () => NOW + 1,
    refreshAfter: 3600,
    ...options,
  });
  const errors = [];
  const { server, url } = await listen((req, res) =>
    guard(req, res, (error) => {
      if (error) {
        errors.push(error);
        res.statusCode = 500;
        res.end("error");
        return;
      }
      res.setHeader("Set-Cookie", "cart=1; Path=/");
      res.setHeader("Content-Type", "text/plain");
      res.end(`the shop: ${req.url}`);
    }),
  );
  return { server, url, guard, errors };
}

const servers = [];
async function siteFor(options) {
  const s = await site(options);
  servers.push(s.server);
  return s;
}
after(() => servers.forEach((server) => server.close()));

describe("offline enforcement (Anteroom unreachable)", () => {
  let shop;
  let dead;
  before(async () => {
    dead = await deadUrl();
    shop = await siteFor({ baseUrl: `${dead}/` });
  });

  test("unprotected paths pass untouched", async () => {
    const response = await request(shop.url, "/products?x=1");
    assert.equal(response.body, "the shop: /products?x=1");
    assert.equal(response.headers["anteroom-enforcement"], undefined);
  });

  test("a refusal is a whole response: 303 to the hosted page, or 429 JSON", async () => {
    const response = await request(shop.url, "/checkout/pay?x=1&y=a%20b", { headers: NAV });
    assert.equal(response.status, 303);
    assert.equal(response.headers["anteroom-enforcement"], "queue:no-admission");
    const returnUrl = `${shop.url}/checkout/pay?x=1&y=a%20b`;
    assert.equal(
      response.headers.location,
      `${dead}/queue/drop?key=pk_test&return=${encodeURIComponent(returnUrl).replaceAll("%20", "+")}`,
    );
    assert.equal(response.headers["content-length"], "0");
    const api = await request(shop.url, "/api/cart?x=1", { method: "POST" });
    assert.equal(api.status, 429);
    assert.equal(api.headers["content-length"], String(Buffer.byteLength(api.body)));
    assert.equal(JSON.parse(api.body).queuePage, `${dead}/queue/drop?key=pk_test&return=${encodeURIComponent(`${shop.url}/api/cart?x=1`)}`);
  });

  test("a valid cookie or header passes offline, the app's own cookie kept", async () => {
    const byCookie = await request(shop.url, "/checkout", { headers: { Cookie: `theme=dark; _abq=${admission()}` } });
    assert.equal(byCookie.body, "the shop: /checkout");
    assert.deepEqual(byCookie.headers["set-cookie"], ["cart=1; Path=/"]);
    const byHeader = await request(shop.url, "/api/cart", { headers: { "Anteroom-Admission": admission() } });
    assert.equal(byHeader.status, 200);
  });

  test("the client's address and session come from the options", async () => {
    const bound = admission({ qi: networkTag("127.0.0.1") });
    assert.equal((await request(shop.url, "/api/cart", { headers: { "Anteroom-Admission": bound } })).status, 200);
    const elsewhere = admission({ qi: networkTag("198.51.100.20") });
    const moved = await request(shop.url, "/api/cart", { headers: { "Anteroom-Admission": elsewhere } });
    assert.equal(moved.headers["anteroom-enforcement"], "queue:ip-mismatch");
    const strict = await siteFor({ baseUrl: dead, sessionJti: (req) => req.headers["x-session"] ?? null });
    const mine = { "Anteroom-Admission": admission(), "X-Session": "s1" };
    assert.equal((await request(strict.url, "/api/cart", { headers: mine })).status, 200);
    const theirs = await request(strict.url, "/api/cart", { headers: { ...mine, "X-Session": "s2" } });
    assert.equal(theirs.headers["anteroom-enforcement"], "queue:session-mismatch");
  });

  test("the hand-over reads the request's own URL; Host: localhost does not take Secure away", async () => {
    const token = admission();
    for (const host of ["shop.example", "localhost:3000", "[::1]:3000"]) {
      const response = await request(shop.url, `/checkout?a=1&abq=${token}`, { headers: { ...NAV, Host: host } });
      assert.equal(response.status, 307);
      assert.equal(response.headers.location, `http://${host}/checkout?a=1`);
      assert.deepEqual(response.headers["set-cookie"], [`_abq=${token}; Path=/; Max-Age=299; HttpOnly; SameSite=Lax; Secure`]);
    }
    const local = await siteFor({ baseUrl: dead, secureCookie: false });
    const plain = await request(local.url, `/checkout?abq=${token}`, { headers: NAV });
    assert.deepEqual(plain.headers["set-cookie"], [`_abq=${token}; Path=/; Max-Age=299; HttpOnly; SameSite=Lax`]);
  });

  test("a CORS preflight is answered by the edge, or by an app that says it answers OPTIONS", async () => {
    const preflight = { Origin: "https://app.example", "Access-Control-Request-Method": "POST" };
    const cors = { "Access-Control-Allow-Origin": ["https://app.example"], "Access-Control-Allow-Methods": "POST" };
    const answering = await siteFor({ baseUrl: dead, preflightHeaders: cors });
    const answered = await request(answering.url, "/api/cart", { method: "OPTIONS", headers: preflight });
    assert.equal(answered.status, 204);
    assert.equal(answered.body, "");
    assert.equal(answered.headers["access-control-allow-origin"], "https://app.example");
    assert.equal(answered.headers["access-control-allow-methods"], "POST");
    const passing = await siteFor({ baseUrl: dead, appAnswersOptions: true });
    const passed = await request(passing.url, "/api/cart", { method: "OPTIONS", headers: preflight });
    assert.equal(passed.body, "the shop: /api/cart");
    assert.equal((await request(shop.url, "/api/cart", { method: "OPTIONS" })).status, 429);
  });

  test("an old admission still counts while Anteroom is unreachable", async () => {
    const eager = await siteFor({ baseUrl: dead, refreshAfter: 0.001 });
    const response = await request(eager.url, "/checkout", { headers: { Cookie: `_abq=${admission()}` } });
    assert.equal(response.status, 200);
    assert.deepEqual(response.headers["set-cookie"], ["cart=1; Path=/"]);
  });

  test("a failure of its own goes to next(error)", async () => {
    const broken = await siteFor({
      baseUrl: dead,
      clientIp: () => {
        throw new Error("no address");
      },
    });
    const response = await request(broken.url, "/checkout", { headers: { Cookie: `_abq=${admission()}` } });
    assert.equal(response.status, 500);
    assert.equal(broken.errors[0].message, "no address");
  });
});

describe("talking to Anteroom", () => {
  let anteroom;
  let shop;
  let now;
  before(async () => {
    anteroom = await new FakeAnteroom().start();
    servers.push(anteroom.server);
    shop = await siteFor({ baseUrl: anteroom.url, refreshAfter: 15, clock: () => now });
  });
  beforeEach(() => {
    anteroom.answers.clear();
    anteroom.requests.length = 0;
    now = NOW + 1;
  });

  test("an older admission is refreshed, and the fresh one goes after the app's cookie", async () => {
    const old = admission({ iat: NOW - 14, jti: "j-cookie" });
    const fresh = admission({ iat: NOW, exp: NOW + 600 });
    anteroom.answer("/api/v1/admission/refresh", 200, { status: "admitted", token: fresh });
    const response = await request(shop.url, "/checkout", { headers: { Cookie: `_abq=${old}` } });
    assert.equal(response.status, 200);
    assert.deepEqual(anteroom.requests, [{ path: "/api/v1/admission/refresh", body: { apiKey: "pk_test", token: old } }]);
    assert.deepEqual(response.headers["set-cookie"], [
      "cart=1; Path=/",
      `_abq=${fresh}; Path=/; Max-Age=599; HttpOnly; SameSite=Lax; Secure`,
    ]);
  });

  test("an admission sent as a header is renewed in a header", async () => {
    const fresh = admission({ exp: NOW + 600 });
    anteroom.answer("/api/v1/admission/refresh", 200, { token: fresh });
    const response = await request(shop.url, "/api/cart", { headers: { "Anteroom-Admission": admission({ iat: 0, jti: "j-header" }) } });
    assert.equal(response.headers["anteroom-admission"], fresh);
    assert.deepEqual(response.headers["set-cookie"], ["cart=1; Path=/"]);
  });

  test("an answer that is not a JSON object leaves the admission in hand", async () => {
    anteroom.answer("/api/v1/admission/refresh", 200, ["not", "an", "object"]);
    const response = await request(shop.url, "/checkout", { headers: { Cookie: `_abq=${admission({ iat: 0, jti: "j-array" })}` } });
    assert.equal(response.status, 200);
    assert.deepEqual(response.headers["set-cookie"], ["cart=1; Path=/"]);
    assert.equal(anteroom.requests.length, 1);
  });

  test("queue-through: the ticket is polled, and the dealt admission handed back", async () => {
    anteroom.answer("/api/v1/queue/poll", 200, { status: "waiting", position: 3, etaSeconds: 40, pollAfterMs: 2500 });
    const waiting = await request(shop.url, "/api/cart", { headers: { "Anteroom-Ticket": "qt1.k1.t.s" } });
    assert.deepEqual(anteroom.requests, [{ path: "/api/v1/queue/poll", body: { apiKey: "pk_test", ticket: "qt1.k1.t.s" } }]);
    assert.equal(waiting.status, 429);
    assert.equal(waiting.headers["retry-after"], "3");
    const token = admission();
    anteroom.answer("/api/v1/queue/poll", 200, { status: "admitted", token });
    const passed = await request(shop.url, "/api/cart", { headers: { "Anteroom-Ticket": "qt1.k1.t.s" } });
    assert.equal(passed.status, 200);
    assert.equal(passed.headers["anteroom-admission"], token);
  });

  test("a 5xx pauses the calls for pauseAfterFailure seconds: one call, not three", async () => {
    const paused = await siteFor({ baseUrl: anteroom.url, refreshAfter: 15, clock: () => now });
    anteroom.answer("/api/v1/admission/refresh", 503, { error: "Down" });
    for (const [i, at] of [0, 2, 4].entries()) {
      now = NOW + 100 + at;
      const token = admission({ iat: NOW, jti: `j-paused-${i}` });
      assert.equal((await request(paused.url, "/checkout", { headers: { Cookie: `_abq=${token}` } })).status, 200);
    }
    assert.equal(anteroom.requests.length, 1);
    now = NOW + 105;
    anteroom.answer("/api/v1/admission/refresh", 410, {});
    await request(paused.url, "/checkout", { headers: { Cookie: `_abq=${admission({ iat: NOW, jti: "j-after" })}` } });
    assert.equal(anteroom.requests.length, 2);
  });
});

// -- real routers: the paths Express routes to a protected view --------------------------------

const ROUTERS = { "Express 5": (await import("express")).default, "Express 4": (await import("express4")).default };
const SPELLINGS = ["/checkout", "/CHECKOUT", "/Checkout", "/CheckOut/", "//checkout", "/checkout/", "/%2Fcheckout",
  "/x/../checkout", "/./checkout", "/checkout%2F..", "/api/CART", "/api//cart"];

for (const [name, express] of Object.entries(ROUTERS)) {
  describe(`behind ${name}`, () => {
    let shop;
    let strict;
    before(async () => {
      for (const caseSensitive of [false, true]) {
        const app = express();
        if (caseSensitive) app.set("case sensitive routing", true);
        app.use(anteroomMiddleware({ keys: KEYS, baseUrl: "http://127.0.0.1:9", publicKey: "pk_test", caseSensitive,
          routes: { "/checkout": "drop", "/api/cart": "drop" }, clock: () => NOW + 1 }));
        app.get("/checkout", (req, res) => res.send("PROTECTED checkout"));
        app.get("/api/cart", (req, res) => res.send("PROTECTED cart"));
        app.use((req, res) => res.status(404).send("not found"));
        const { server, url } = await listen(app);
        servers.push(server);
        if (caseSensitive) strict = url;
        else shop = url;
      }
    });

    for (const spelling of SPELLINGS) {
      test(`${spelling} does not reach a protected view without an admission`, async () => {
        const response = await rawRequest(shop, spelling);
        assert.ok(!response.body.includes("PROTECTED"), `${response.status} ${response.body}`);
      });
    }

    test("an admitted visitor reaches the view by any of its names", async () => {
      for (const spelling of ["/checkout", "/CHECKOUT", "/CheckOut/"]) {
        const response = await rawRequest(shop, spelling, { Cookie: `_abq=${admission()}` });
        assert.equal(response.body, "PROTECTED checkout", spelling);
      }
    });

    test("caseSensitive: true protects the case the app routes", async () => {
      assert.equal((await rawRequest(strict, "/checkout")).status, 429);
      const other = await rawRequest(strict, "/CHECKOUT");
      assert.deepEqual([other.status, other.body], [404, "not found"]); // not routed: nothing to protect
    });
  });
}

test("bad options throw a TypeError naming the option", () => {
  const good = { keys: KEYS, baseUrl: "https://q.example", publicKey: "pk", routes: {} };
  assert.throws(() => anteroomMiddleware({ ...good, keys: undefined }), /`keys`/);
  assert.throws(() => anteroomMiddleware({ ...good, keys: "nonsense" }), TypeError);
  assert.throws(() => anteroomMiddleware({ ...good, baseUrl: "" }), /`baseUrl`/);
  assert.throws(() => anteroomMiddleware({ ...good, publicKey: 1 }), /`publicKey`/);
  assert.throws(() => anteroomMiddleware({ ...good, routes: { checkout: "drop" } }), /`routes`/);
  assert.throws(() => anteroomMiddleware({ ...good, refreshAfter: "15" }), /`refreshAfter`/);
  assert.throws(() => anteroomMiddleware({ ...good, clock: 5 }), /`clock`/);
  assert.throws(() => anteroomMiddleware({ ...good, secureCookie: "no" }), /`secureCookie`/);
  assert.throws(() => anteroomMiddleware({ ...good, caseSensitive: 1 }), /`caseSensitive`/);
  assert.throws(() => anteroomMiddleware({ ...good, pauseAfterFailure: "5" }), /`pauseAfterFailure`/);
});

test("a bypass header rule is read off a real request and lets it through to the app", async () => {
  const monitor = "monitor-secret-0123456789";
  const bypass = [{ kind: "header", name: "X-Monitor", secret: monitor }];
  const guard = anteroomMiddleware({ keys: KEYS, baseUrl: "http://127.0.0.1:9", publicKey: "pk_test",
    routes: { "/checkout": "drop" }, clock: () => NOW + 1, bypass });
  const { server, url } = await listen((req, res) => guard(req, res, () => res.end("PROTECTED checkout")));
  try {
    const through = await rawRequest(url, "/checkout", { "X-Monitor": monitor });
    assert.deepEqual([through.status, through.body], [200, "PROTECTED checkout"]);
    assert.equal((await rawRequest(url, "/checkout", { "X-Monitor": `${monitor}!` })).status, 429);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  assert.throws(() => anteroomMiddleware({ keys: KEYS, baseUrl: "https://q.example", publicKey: "pk", routes: {},
    bypass: [{ kind: "address-range", value: "10.0.0.0/33" }] }), /`bypass` bypass\[0\]\.value: not a CIDR/);
});
