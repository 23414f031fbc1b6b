// The Node edge middleware behind a real node:http server on 127.0.0.1, with a scripted Anteroom
// (another real server) where a refresh or a queue-through needs one.
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
    assert.equal((await request(shop.url, "/checkoutx")).status, 200); // a prefix, not a substring
  });

  test("a browser navigation without admission goes (303) to the hosted page", async () => {
    const response = await request(shop.url, "/checkout/pay?x=1&y=a%20b", { headers: NAV });
    assert.equal(response.status, 303);
    assert.equal(response.headers["anteroom-enforcement"], "queue:no-admission");
    assert.equal(response.headers["cache-control"], "no-store");
    const returnUrl = `${shop.url}/checkout/pay?x=1&y=a%20b`;
    assert.equal(
      response.headers.location,
      `${dead}/queue/drop?key=pk_test&return=${encodeURIComponent(returnUrl).replaceAll("%20", "+")}`,
    );
    assert.equal(response.headers["set-cookie"], undefined);
    assert.equal((await request(shop.url, "/checkout", { method: "HEAD", headers: NAV })).status, 303);
  });

  test("anything else gets 429 + Retry-After + JSON QueueRequired", async () => {
    const cases = [
      { method: "POST", headers: { Accept: "text/html" } },
      { headers: { Accept: "application/json, text/html" } },
      { headers: { ...NAV, "Sec-Fetch-Mode": "cors" } },
      { headers: {} },
    ];
    for (const options of cases) {
      const response = await request(shop.url, "/api/cart?x=1", options);
      assert.equal(response.status, 429, JSON.stringify(options));
      assert.equal(response.headers["retry-after"], "5");
      assert.equal(response.headers["content-type"], "application/json");
      assert.equal(response.headers["anteroom-enforcement"], "queue:no-admission");
      const returnUrl = encodeURIComponent(`${shop.url}/api/cart?x=1`);
      assert.deepEqual(JSON.parse(response.body), {
        error: "QueueRequired",
        message: "This resource is behind a waiting room; queue first.",
        room: "drop",
        api: `${dead}/api/v1`,
        retryAfter: 5,
        queuePage: `${dead}/queue/drop?key=pk_test&return=${returnUrl}`,
      });
    }
  });

  test("a navigation carrying a ticket is answered 429, not redirected", async () => {
    const response = await request(shop.url, "/checkout", { headers: { ...NAV, "Anteroom-Ticket": "qt1.k1.x.y" } });
    assert.equal(response.status, 429);
    assert.equal(JSON.parse(response.body).status, "unknown"); // nobody answered the poll
  });

  test("a valid cookie or header passes offline", async () => {
    const byCookie = await request(shop.url, "/checkout", { headers: { Cookie: `theme=dark; _abq=${admission()}` } });
    assert.equal(byCookie.body, "the shop: /checkout");
    assert.deepEqual(byCookie.headers["set-cookie"], ["cart=1; Path=/"]);
    const byHeader = await request(shop.url, "/api/cart", { headers: { "Anteroom-Admission": admission() } });
    assert.equal(byHeader.status, 200);
  });

  test("the longest prefix picks the room; encoded paths are decoded first", async () => {
    const token = admission({ q: "api-room", qr: "q2" });
    assert.equal((await request(shop.url, "/api/other", { headers: { "Anteroom-Admission": token } })).status, 200);
    const cart = await request(shop.url, "/api/cart", { headers: { "Anteroom-Admission": token } });
    assert.equal(cart.headers["anteroom-enforcement"], "queue:wrong-room");
    assert.equal((await request(shop.url, "/check%6Fut")).status, 429);
    assert.equal(shop.guard.roomFor("/api/cart/items"), "drop");
    assert.equal(shop.guard.roomFor("/apiary"), null);
  });

  const stranger = sign("ab1", { q: "drop", exp: NOW + 300 }, Buffer.alloc(32, 9), "k9");
  const refusals = [
    ["wrong room", admission({ q: "other", qr: "q9" }), "queue:wrong-room"],
    ["expired", admission({ exp: NOW }), "queue:admission-expired"],
    ["forged", "ab1.k1.bm90.c2ln", "queue:admission-forged"],
    ["malformed", "garbage", "queue:admission-malformed"],
    ["unknown key", stranger, "queue:admission-unknown-key"],
    ["a session token", sign("st1", { exp: NOW + 300 }), "queue:admission-malformed"],
    ["another network", admission({ qi: networkTag("198.51.100.20") }), "queue:ip-mismatch"],
  ];
  for (const [what, token, reason] of refusals) {
    test(`refusal names its reason: ${what}`, async () => {
      for (const headers of [{ "Anteroom-Admission": token }, { Cookie: `_abq=${token}` }]) {
        const response = await request(shop.url, "/api/cart", { headers });
        assert.equal(response.status, 429);
        assert.equal(response.headers["anteroom-enforcement"], reason);
      }
      const navigation = await request(shop.url, "/checkout", { headers: { ...NAV, Cookie: `_abq=${token}` } });
      assert.equal(navigation.status, 303);
      assert.equal(navigation.headers["anteroom-enforcement"], reason);
    });
  }

  test("the network binding and the session binding, with the client's address and session", async () => {
    const bound = admission({ qi: networkTag("127.0.0.1") });
    assert.equal((await request(shop.url, "/api/cart", { headers: { "Anteroom-Admission": bound } })).status, 200);
    const strict = await siteFor({ baseUrl: dead, sessionJti: (req) => req.headers["x-session"] ?? null });
    const mine = { "Anteroom-Admission": admission(), "X-Session": "s1" };
    assert.equal((await request(strict.url, "/api/cart", { headers: mine })).status, 200);
    const theirs = await request(strict.url, "/api/cart", { headers: { ...mine, "X-Session": "s2" } });
    assert.equal(theirs.headers["anteroom-enforcement"], "queue:session-mismatch");
  });

  test("?abq= becomes the cookie, with a 307 to the same URL without it", async () => {
    const token = admission();
    const response = await request(shop.url, `/checkout?a=1&abq=${token}&b=x%2Fy&c`, { headers: NAV });
    assert.equal(response.status, 307);
    assert.equal(response.headers.location, `${shop.url}/checkout?a=1&b=x%2Fy&c`);
    assert.equal(response.headers["cache-control"], "no-store");
    assert.deepEqual(response.headers["set-cookie"], [`_abq=${token}; Path=/; Max-Age=299; HttpOnly; SameSite=Lax`]);
    assert.equal(response.body, "");
    const alone = await request(shop.url, `/checkout?abq=${token}`, { headers: { Accept: "application/json" } });
    assert.equal(alone.status, 307);
    assert.equal(alone.headers.location, `${shop.url}/checkout`);
  });

  test("the cookie is Secure off localhost", async () => {
    const token = admission();
    for (const [host, secure] of [["shop.example", true], ["shop.example:8443", true], ["localhost:3000", false], ["[::1]:3000", false]]) {
      const response = await request(shop.url, `/checkout?abq=${token}`, { headers: { ...NAV, Host: host } });
      assert.equal(response.status, 307);
      assert.equal(response.headers.location, `http://${host}/checkout`);
      assert.equal(response.headers["set-cookie"][0].endsWith("; Secure"), secure, host);
    }
  });

  test("an invalid ?abq= sets nothing, even next to a valid cookie", async () => {
    const headers = { ...NAV, Cookie: `_abq=${admission()}` };
    const navigation = await request(shop.url, "/checkout?abq=forged&a=1", { headers });
    assert.equal(navigation.status, 303);
    assert.equal(navigation.headers["anteroom-enforcement"], "queue:admission-malformed");
    assert.equal(navigation.headers["set-cookie"], undefined);
    const returnUrl = new URL(navigation.headers.location).searchParams.get("return");
    assert.equal(returnUrl, `${shop.url}/checkout?a=1`); // without the bad abq
    const expired = await request(shop.url, `/api/cart?abq=${admission({ exp: NOW - 1 })}`);
    assert.equal(expired.status, 429);
    assert.equal(expired.headers["anteroom-enforcement"], "queue:admission-expired");
    assert.equal(expired.headers["set-cookie"], undefined);
  });

  test("an old admission still counts while Anteroom is unreachable", async () => {
    const eager = await siteFor({ baseUrl: dead, refreshAfter: 0 });
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
  before(async () => {
    anteroom = await new FakeAnteroom().start();
    servers.push(anteroom.server);
    shop = await siteFor({ baseUrl: anteroom.url, refreshAfter: 15 });
  });
  beforeEach(() => {
    anteroom.answers.clear();
    anteroom.requests.length = 0;
  });

  test("an admission younger than refreshAfter is not refreshed", async () => {
    const token = admission({ iat: NOW - 13 });
    assert.equal((await request(shop.url, "/checkout", { headers: { Cookie: `_abq=${token}` } })).status, 200);
    assert.equal(anteroom.requests.length, 0);
  });

  test("an older one is refreshed, and the fresh one replaces the cookie", async () => {
    const old = admission({ iat: NOW - 14, jti: "j-cookie" });
    const fresh = admission({ iat: NOW, exp: NOW + 600 });
    anteroom.answer("/api/v1/admission/refresh", 200, { status: "admitted", token: fresh });
    const response = await request(shop.url, "/checkout", { headers: { Cookie: `_abq=${old}` } });
    assert.equal(response.status, 200);
    assert.deepEqual(anteroom.requests, [{ path: "/api/v1/admission/refresh", body: { apiKey: "pk_test", token: old } }]);
    assert.deepEqual(response.headers["set-cookie"], [
      "cart=1; Path=/",
      `_abq=${fresh}; Path=/; Max-Age=599; HttpOnly; SameSite=Lax`,
    ]);
  });

  test("an admission sent as a header is renewed in a header", async () => {
    const fresh = admission({ exp: NOW + 600 });
    anteroom.answer("/api/v1/admission/refresh", 200, { token: fresh });
    const response = await request(shop.url, "/api/cart", { headers: { "Anteroom-Admission": admission({ iat: 0, jti: "j-header" }) } });
    assert.equal(response.headers["anteroom-admission"], fresh);
    assert.deepEqual(response.headers["set-cookie"], ["cart=1; Path=/"]);
  });

  test("a refusal or a useless answer leaves the admission in hand", async () => {
    anteroom.answer("/api/v1/admission/refresh", 410, { error: "TicketGone" });
    anteroom.answer("/api/v1/admission/refresh", 200, { token: "ab1.k1.not.valid" });
    anteroom.answer("/api/v1/admission/refresh", 200, ["not", "an", "object"]);
    for (let i = 0; i < 3; i++) {
      const token = admission({ iat: 0, jti: `j-useless-${i}` });
      const response = await request(shop.url, "/checkout", { headers: { Cookie: `_abq=${token}` } });
      assert.equal(response.status, 200);
      assert.deepEqual(response.headers["set-cookie"], ["cart=1; Path=/"]);
    }
    assert.equal(anteroom.requests.length, 3);
  });

  test("an admission is renewed at most once per refreshAfter", async () => {
    const old = admission({ iat: 0, jti: "j-once" });
    anteroom.answer("/api/v1/admission/refresh", 200, { token: admission({ jti: "j-once", exp: NOW + 600 }) });
    for (const headers of [{ Cookie: `_abq=${old}` }, { "Anteroom-Admission": old }]) {
      assert.equal((await request(shop.url, "/checkout", { headers })).status, 200);
    }
    assert.equal(anteroom.requests.length, 1);
  });

  test("queue-through: a refused ticket names Anteroom's error and keeps its Retry-After", async () => {
    anteroom.answer("/api/v1/queue/poll", 404, { error: "TokenInvalid", retryAfter: 7 });
    const response = await request(shop.url, "/api/cart", { headers: { "Anteroom-Ticket": "qt1.k1.t.s" } });
    assert.equal(response.status, 429);
    assert.equal(response.headers["retry-after"], "7");
    const body = JSON.parse(response.body);
    assert.deepEqual([body.status, body.ticketError, body.retryAfter], ["unknown", "TokenInvalid", 7]);
  });

  test("queue-through: 429 with the position while waiting", async () => {
    anteroom.answer("/api/v1/queue/poll", 200, { status: "waiting", position: 3, etaSeconds: 40, pollAfterMs: 2500 });
    const response = await request(shop.url, "/api/cart", { headers: { "Anteroom-Ticket": "qt1.k1.t.s" } });
    assert.deepEqual(anteroom.requests, [{ path: "/api/v1/queue/poll", body: { apiKey: "pk_test", ticket: "qt1.k1.t.s" } }]);
    assert.equal(response.status, 429);
    assert.equal(response.headers["retry-after"], "3");
    assert.equal(response.headers["anteroom-enforcement"], "queue:no-admission");
    const body = JSON.parse(response.body);
    assert.deepEqual([body.status, body.position, body.etaSeconds, body.retryAfter], ["waiting", 3, 40, 3]);
    assert.equal(body.queuePage, `${anteroom.url}/queue/drop?key=pk_test`);
  });

  test("queue-through: passed with an Anteroom-Admission header once admitted", async () => {
    const token = admission();
    anteroom.answer("/api/v1/queue/poll", 200, { status: "admitted", token });
    const response = await request(shop.url, "/api/cart", {
      headers: { "Anteroom-Ticket": "qt1.k1.t.s", "Anteroom-Admission": "expired-or-junk" },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers["anteroom-admission"], token);
  });

  test("queue-through: an admission that does not verify, or no answer, is refused", async () => {
    anteroom.answer("/api/v1/queue/poll", 200, { status: "admitted", token: admission({ q: "other", qr: "q9" }) });
    const wrong = await request(shop.url, "/api/cart", { headers: { "Anteroom-Ticket": "qt1.k1.t.s" } });
    assert.equal(wrong.status, 429);
    assert.equal(wrong.headers["anteroom-enforcement"], "queue:wrong-room");
    anteroom.answer("/api/v1/queue/poll", 410, { error: "TicketGone" });
    const gone = await request(shop.url, "/api/cart", { headers: { "Anteroom-Ticket": "qt1.k1.t.s" } });
    assert.equal(gone.status, 429);
    assert.equal(JSON.parse(gone.body).status, "unknown");
    assert.equal(JSON.parse(gone.body).ticketError, "TicketGone");
  });
});

test("bad options throw a TypeError naming the option", () => {
  const good = { keys: KEYS, baseUrl: "https://q.example", publicKey: "pk", routes: {} };
  assert.throws(() => anteroomMiddleware({ ...good, keys: undefined }), /`keys`/);
  assert.throws(() => anteroomMiddleware({ ...good, keys: "nonsense" }), TypeError);
  assert.throws(() => anteroomMiddleware({ ...good, baseUrl: "" }), /`baseUrl`/);
  assert.throws(() => anteroomMiddleware({ ...good, publicKey: 1 }), /`publicKey`/);
  assert.throws(() => anteroomMiddleware({ ...good, routes: { checkout: "drop" } }), /`routes`/);
  assert.throws(() => anteroomMiddleware({ ...good, refreshAfter: "15" }), /`refreshAfter`/);
  assert.throws(() => anteroomMiddleware({ ...good, clock: 5 }), /`clock`/);
});
