import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";

import { readFileSync } from "node:fs";

import { startHostedPage } from "../../frontend/hosted-page.js";
import { FakeClock, FakeFetch, FakeStorage, installBrowser } from "./fakes.mjs";

const ROOM = "spring-drop";
const catalogText = (lang) => readFileSync(new URL(`../../translations/${lang}.json`, import.meta.url), "utf8");

class FakeElement {
  constructor(id, tag = "div") {
    this.id = id;
    this.tagName = tag.toUpperCase();
    this.dataset = {};
    this.textContent = "";
    this.hidden = false;
    this.attributes = new Map();
    if (tag === "progress") {
      this.max = 1;
      this.value = 0;
    }
    if (tag === "time") this.dateTime = "";
  }
  setAttribute(name, value) {
    this.attributes.set(name, String(value));
  }
  removeAttribute(name) {
    this.attributes.delete(name);
    if (name === "value") this.value = null;
  }
  get innerHTML() {
    throw new Error("innerHTML must not be used");
  }
  set innerHTML(_) {
    throw new Error("innerHTML must not be used");
  }
}

function page(data, lang = "en") {
  const elements = new Map();
  const add = (id, tag) => elements.set(id, new FakeElement(id, tag));
  add("anteroom", "main");
  for (const id of ["room-name", "position", "ahead", "eta", "countdown", "opens-at", "status-text", "announce", "notice"]) add(id);
  const section = new FakeElement("notice-section", "section");
  section.hidden = true;
  elements.get("notice").parentElement = section;
  // The server embeds the page language's catalog as JSON; so does this fake page.
  add("anteroom-i18n", "script");
  elements.get("anteroom-i18n").textContent = catalogText(lang);
  data = { lang, ...data };
  add("progress", "progress");
  add("retry-at", "time");
  elements.get("retry-at").parentElement = new FakeElement("retry", "p");
  Object.assign(elements.get("anteroom").dataset, data);
  const assigned = [];
  return {
    elements,
    get: (id) => elements.get(id),
    section,
    assigned,
    document: { getElementById: (id) => elements.get(id) ?? null },
    location: { assign: (url) => assigned.push(url) },
  };
}

const answer = (fields) => ({
  body: {
    status: "waiting",
    room: ROOM,
    roomName: "Spring drop",
    redirectUrl: "https://shop.example/drop?color=red#top",
    position: 11,
    etaSeconds: 600,
    opensAt: null,
    pollAfterMs: 1000,
    queueToken: "qt1.k1.t.sig",
    roomStatus: "open",
    ...fields,
  },
});

describe("the hosted page", () => {
  let browser;
  let clock;
  beforeEach(() => {
    browser = installBrowser();
    clock = new FakeClock();
    browser.localStorage.setItem(`anteroom::${ROOM}`, JSON.stringify({ sessionToken: "st1.k1.s.sig", sessionExpiresAt: clock.now() + 3_600_000 }));
  });
  afterEach(() => browser.restore());

  const start = (fake, view) =>
    startHostedPage({ document: view.document, location: view.location, sessionStorage: new FakeStorage(), fetch: fake.fetch, clock });

  test("shows the wait, then redirects with the admission kept before the fragment", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer()],
      "/api/v1/queue/poll": [
        answer({ position: 6, etaSeconds: 30 }),
        { status: 503, body: { error: "Unavailable", message: "down" }, headers: { "Retry-After": "5" } },
        answer({ position: 1, etaSeconds: null }),
        answer({ status: "admitted", token: "ab1.k1.a+b.sig", position: null }),
      ],
    });
    const view = page({ room: ROOM, key: "pk_test_1", baseUrl: "", roomName: "Spring drop" });
    const root = view.get("anteroom");
    start(fake, view);
    assert.equal(root.dataset.state, "connecting");

    await clock.advance(0);
    assert.equal(root.dataset.state, "waiting");
    assert.equal(view.get("position").textContent, "11");
    assert.equal(view.get("eta").textContent, "about 10 minutes");
    assert.equal(view.get("eta").hidden, false);
    assert.equal(view.get("progress").value, 0);
    assert.equal(view.get("room-name").textContent, "Spring drop");
    assert.match(view.get("announce").textContent, /number 11/);
    assert.equal(view.get("countdown").hidden, true);

    await clock.advance(1000);
    assert.equal(view.get("position").textContent, "6");
    assert.equal(view.get("eta").textContent, "less than a minute");
    assert.equal(view.get("progress").value, 0.5);

    await clock.advance(1000);
    assert.equal(root.dataset.state, "error");
    assert.equal(root.dataset.error, "Unavailable");
    assert.equal(view.get("retry-at").hidden, false);
    assert.equal(view.get("retry-at").parentElement.hidden, false, "'Next attempt at' with its time");
    assert.equal(view.get("retry-at").dateTime, new Date(clock.now() + 5000).toISOString());
    assert.equal(view.get("position").textContent, "6", "the last position stays on screen");

    await clock.advance(5000);
    assert.equal(root.dataset.state, "waiting");
    assert.equal(root.dataset.error, undefined);
    assert.equal(view.get("retry-at").hidden, true);
    assert.equal(view.get("eta").hidden, true);
    assert.equal(view.get("progress").value, 1);

    await clock.advance(1000);
    assert.equal(root.dataset.state, "admitted");
    assert.deepEqual(view.assigned, ["https://shop.example/drop?color=red&abq=ab1.k1.a%2Bb.sig#top"]);
  });

  test("counts down a pre-queue, then waits", async () => {
    const opensAt = clock.now() + 62_500;
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ opensAt, position: 3, pollAfterMs: 60_000 })],
      "/api/v1/queue/poll": [answer({ opensAt, position: 3 })],
    });
    const view = page({ room: ROOM, key: "pk_test_1" });
    const controller = start(fake, view);
    await clock.advance(0);
    assert.equal(view.get("anteroom").dataset.state, "prequeue");
    assert.equal(view.get("countdown").textContent, "01:03");
    // The countdown once (not again as the ETA), and no place yet: it is drawn at the opening.
    assert.equal(view.get("eta").hidden, true);
    assert.equal(view.get("position").hidden, true);
    assert.equal(view.get("ahead").hidden, true);
    assert.equal(
      view.get("opens-at").textContent,
      `Opens at ${new Intl.DateTimeFormat("en", { timeStyle: "short" }).format(opensAt)}`,
      "in the visitor's own time zone",
    );
    assert.match(view.get("announce").textContent, /^You're in\. .* Opens at /);
    await clock.advance(500);
    assert.equal(view.get("countdown").textContent, "01:02");
    await clock.advance(1000);
    assert.equal(view.get("countdown").textContent, "01:01");
    assert.equal(view.get("eta").hidden, true);
    await clock.advance(62_000);
    assert.equal(view.get("anteroom").dataset.state, "waiting");
    assert.equal(view.get("countdown").hidden, true);
    controller.abort();
    await clock.advance(0);
    assert.equal(clock.timers.size, 0);
  });

  test("a paused room, a held spot and a refusal each have their state", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ roomStatus: "paused", etaSeconds: null })],
      "/api/v1/queue/poll": [
        answer({ status: "held", position: null, etaSeconds: null }),
        { status: 403, body: { error: "SessionRevoked", message: "revoked" } },
      ],
    });
    const view = page({ room: ROOM, key: "pk_test_1" });
    const root = view.get("anteroom");
    start(fake, view);
    await clock.advance(0);
    assert.equal(root.dataset.state, "paused");
    await clock.advance(1000);
    assert.equal(root.dataset.state, "held");
    assert.equal(view.get("position").textContent, "");
    assert.equal(view.get("progress").value, null, "indeterminate while held");
    await clock.advance(1000);
    assert.equal(root.dataset.state, "error");
    assert.equal(root.dataset.error, "SessionRevoked");
    assert.equal(view.get("retry-at").hidden, true);
    assert.equal(view.get("retry-at").parentElement.hidden, true, "no 'Next attempt at' without a time");
    assert.match(view.get("status-text").textContent, /withdrawn/);
  });

  test("an idle room says so and asks again later", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ status: "idle", position: null, queueToken: null }), answer({ status: "admitted", token: "ab1.t" })],
    });
    const view = page({ room: ROOM, key: "pk_test_1", roomName: "Spring drop" });
    start(fake, view);
    await clock.advance(0);
    assert.equal(view.get("anteroom").dataset.state, "idle");
    assert.match(view.get("status-text").textContent, /Spring drop is not open/);
    await clock.advance(60_000);
    assert.equal(fake.callsTo("/api/v1/queue/enter").length, 2);
    assert.deepEqual(view.assigned, ["https://shop.example/drop?color=red&abq=ab1.t#top"]);
  });

  test("a page without a usable key shows an error", async () => {
    const view = page({ room: ROOM });
    start(new FakeFetch(clock, {}), view);
    await clock.advance(0);
    assert.equal(view.get("anteroom").dataset.state, "error");
  });

  test("a notice shows at the next poll, in the page's language, and is announced once", async () => {
    const notice = { en: "Sizes S and M are sold out.", de: "Größen S und M sind ausverkauft." };
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ notice: null })],
      "/api/v1/queue/poll": [answer({ notice }), answer({ notice, position: 10 }), answer({ notice: null, position: 9 })],
    });
    const view = page({ room: ROOM, key: "pk_test_1" }, "de");
    start(fake, view);
    await clock.advance(0);
    assert.equal(view.section.hidden, true);
    assert.equal(view.get("position").textContent, "11");
    await clock.advance(1000);
    assert.equal(view.section.hidden, false);
    assert.equal(view.get("notice").textContent, notice.de);
    assert.match(view.get("announce").textContent, /Nachricht des Veranstalters: Größen S und M/);
    const writes = [];
    Object.defineProperty(view.get("announce"), "textContent", { get: () => writes.at(-1) ?? "", set: (v) => writes.push(v) });
    await clock.advance(1000);
    assert.deepEqual(writes, [], "the same notice is not read out again (nor a one-step move)");
    await clock.advance(1000);
    assert.equal(view.section.hidden, true, "a withdrawn notice goes away");
  });

  test("a notice carries its own language and direction", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ notice: { en: "Sizes S and M are sold out." } })],
      "/api/v1/queue/poll": [answer({ notice: "Back at 6 pm", position: 10 })],
    });
    const view = page({ room: ROOM, key: "pk_test_1" }, "ar");
    start(fake, view);
    await clock.advance(0);
    const notice = view.get("notice");
    assert.equal(notice.attributes.get("lang"), "en", "English on an Arabic page: marked as English");
    assert.equal(notice.attributes.get("dir"), "auto", "its full stop stays at its own end");
    await clock.advance(1000);
    assert.equal(notice.attributes.has("lang"), false, "plain text: its language is not known");
    assert.equal(notice.attributes.get("dir"), "auto");
  });

  test("a notice is spoken joined to its label as the page's language joins them", async () => {
    const ja = page({ room: ROOM, key: "pk_test_1" }, "ja");
    start(new FakeFetch(clock, { "/api/v1/queue/enter": [answer({ notice: { ja: "完売しました" } })] }), ja);
    await clock.advance(0);
    const label = JSON.parse(catalogText("ja"))["page.notice"];
    assert.match(ja.get("announce").textContent, new RegExp(`${label}：完売しました`), "joined as Japanese is");
  });

  test("the front of the line: 'Almost there', nobody counted ahead, the bar full", async () => {
    const fake = new FakeFetch(clock, { "/api/v1/queue/enter": [answer({ position: 1, etaSeconds: 5 })] });
    const view = page({ room: ROOM, key: "pk_test_1" });
    start(fake, view);
    await clock.advance(0);
    assert.equal(view.get("status-text").textContent, "Almost there: you're number 1 in line.");
    assert.equal(view.get("ahead").hidden, true);
    assert.equal(view.get("progress").value, 1);
  });

  test("a random room's draw: no place, the odds in words, in the page's language", async () => {
    const draw = (odds) => answer({ position: null, etaSeconds: null, odds });
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [draw(0.025)],
      "/api/v1/queue/poll": [draw(0.9), draw(0), answer({ position: 3, etaSeconds: 20 })],
    });
    const view = page({ room: ROOM, key: "pk_test_1" });
    start(fake, view);
    await clock.advance(0);
    assert.match(view.get("status-text").textContent, /^You're in the draw/);
    assert.equal(view.get("ahead").textContent, "About a 1 in 40 chance in the next minute");
    assert.equal(view.get("anteroom").dataset.draw, "1");
    assert.equal(view.get("eta").hidden, true);
    assert.equal(view.get("position").textContent, "");
    await clock.advance(1000);
    assert.equal(view.get("ahead").textContent, "You're likely to be taken in within the next minute");
    await clock.advance(1000);
    assert.equal(view.get("ahead").textContent, "Nobody is being let in at this moment");
    // back to fifo: a place again, and the draw's styling goes
    await clock.advance(1000);
    assert.equal(view.get("position").textContent, "3");
    assert.equal(view.get("anteroom").dataset.draw, "");
  });

  test("the odds read in the page's language, with its number format", async () => {
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ position: null, etaSeconds: null, odds: 0.001 })],
    });
    const view = page({ room: ROOM, key: "pk_test_1" }, "de");
    start(fake, view);
    await clock.advance(0);
    assert.equal(view.get("ahead").textContent, "Etwa 1 zu 1.000 Chance in der nächsten Minute");
  });

  test("a closed room shows its closing message instead of the idle sentence", async () => {
    const closedMessage = { en: "Sold out — thank you for waiting", ja: "完売しました。お待ちいただきありがとうございました" };
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [answer({ status: "idle", position: null, queueToken: null, closedMessage })],
    });
    const view = page({ room: ROOM, key: "pk_test_1", roomName: "Spring drop" }, "ja");
    start(fake, view);
    await clock.advance(0);
    assert.equal(view.get("anteroom").dataset.state, "idle");
    assert.equal(view.get("status-text").textContent, closedMessage.ja);
    assert.equal(view.get("announce").textContent, closedMessage.ja);
  });

  test("a room taking no new entries (RoomClosed) reads as a closed one and is asked again", async () => {
    const closedMessage = { en: "Sold out — thank you for waiting", de: "Ausverkauft — danke fürs Warten" };
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [
        { status: 403, body: { error: "RoomClosed", message: "This room takes no new entries.", closedMessage } },
        { status: 403, body: { error: "RoomClosed", message: "This room takes no new entries.", closedMessage: null } },
        answer({ status: "admitted", token: "ab1.t" }),
      ],
    });
    const view = page({ room: ROOM, key: "pk_test_1", roomName: "Spring drop" }, "de");
    start(fake, view);
    await clock.advance(0);
    const root = view.get("anteroom");
    assert.equal(root.dataset.state, "idle");
    assert.equal(root.dataset.error, undefined, "not shown as trouble");
    assert.equal(view.get("status-text").textContent, closedMessage.de);
    await clock.advance(60_000);
    assert.equal(fake.callsTo("/api/v1/queue/enter").length, 2);
    assert.equal(root.dataset.state, "idle");
    assert.match(view.get("status-text").textContent, /Spring drop/, "no message: the idle sentence");
    await clock.advance(60_000);
    assert.deepEqual(view.assigned, ["https://shop.example/drop?color=red&abq=ab1.t#top"]);
  });

  test("an invite link's token (&invite=) goes with the entry, and its refusals have their text", async () => {
    const invite = "iv1.k1.payload.sig";
    const refusals = [
      [{ status: 409, body: { error: "InviteSpent", message: "spent" } }, "InviteSpent", /used as many times/],
      [{ status: 410, body: { error: "InviteExpired", message: "expired" } }, "InviteExpired", /expired/],
      [{ status: 410, body: { error: "InviteWithdrawn", message: "withdrawn" } }, "InviteWithdrawn", /withdrawn/],
      [{ status: 401, body: { error: "TokenInvalid", message: "x", fields: { invite: "is not valid (forged)" } } },
        "InviteInvalid", /not valid for this waiting room/],
    ];
    for (const [refusal, code, text] of refusals) {
      const fake = new FakeFetch(clock, { "/api/v1/queue/enter": [refusal] });
      const view = page({ room: ROOM, key: "pk_test_1" });
      view.location.search = `?lang=en&invite=${encodeURIComponent(invite)}`;
      start(fake, view);
      await clock.advance(0);
      const calls = fake.callsTo("/api/v1/queue/enter");
      assert.equal(calls.length, 1, "a refused invite is not retried with a new session");
      assert.equal(calls[0].body.invite, invite);
      assert.equal(view.get("anteroom").dataset.error, code);
      assert.match(view.get("status-text").textContent, text);
    }
  });

  test("without an invite the entry carries none", async () => {
    const fake = new FakeFetch(clock, { "/api/v1/queue/enter": [answer({ status: "admitted", token: "ab1.t" })] });
    const view = page({ room: ROOM, key: "pk_test_1" });
    start(fake, view);
    await clock.advance(0);
    assert.equal(fake.callsTo("/api/v1/queue/enter")[0].body.invite ?? null, null);
  });

  test("the ETA becomes a range once the pace seen has varied", async () => {
    const at = (position, etaSeconds) => answer({ position, etaSeconds, pollAfterMs: 30_000 });
    const fake = new FakeFetch(clock, {
      "/api/v1/queue/enter": [at(300, 1800)],
      "/api/v1/queue/poll": [at(295, 1770), at(290, 1740), at(288, 1728), at(285, 1710), at(280, 1680), at(275, 1650)],
    });
    const view = page({ room: ROOM, key: "pk_test_1" });
    start(fake, view);
    await clock.advance(0);
    assert.equal(view.get("eta").textContent, "about 30 minutes");
    assert.equal(view.get("ahead").textContent, "299 people ahead of you");
    await clock.advance(90_000);
    assert.equal(view.get("eta").textContent, "about 29 minutes", "one minute seen: no range yet");
    await clock.advance(60_000);
    // 10 a minute, then 5: 280 ahead at 5 to 10 a minute.
    assert.equal(view.get("eta").textContent, "about 28–56 minutes");
  });
});
