// A room's settings on its page (those the actions above do not already change: rate, capacity,
// hold score and mode are there), grouped, each labelled in words with its units and bounds;
// the confirmation says each change before → after in words; a refusal is shown by its field.
// And the safety net: set, changed or cleared, explained in words.
import { bounds, el, labelled, limits, modeWords, number, showProblems } from "./fields.js";
import { when, zone } from "./format.js";

/**
 * What a room's page gives the forms: the room as last read, the confirmation dialog (which
 * sends the PATCH and refreshes the page before calling `after`), and the refresh hooks.
 * @typedef {{room: any, fillers: (() => void)[],
 *   confirmThen: (text: string, body: object, after?: (reply: any) => void, method?: string, path?: string) => void}} Page
 */

/**
 * @typedef {{api: string, type: "number" | "text" | "url" | "bool" | "select" | "engines" | "agents", label: string,
 *   unit?: string, hint?: string, empty?: string, on?: string, off?: string,
 *   options?: Record<string, string>}} Setting
 */

/** @type {[string, Setting[]][]} */
const GROUPS = [
  ["The room", [
    { api: "name", type: "text", label: "Name", hint: "Shown to visitors on the waiting page; 1 to 200 characters." },
    { api: "redirectUrl", type: "url", label: "Where admitted visitors are sent", hint: "The shop's address: https (plain http only to this machine: localhost, 127.0.0.1)." },
  ]],
  ["Admissions", [
    { api: "admissionTtlSec", type: "number", unit: "seconds", label: "How long an admission lasts" },
    { api: "sessionRenewal", type: "bool", label: "Renew the admission of a visitor who stays active", on: "renewed while the visitor is active", off: "not renewed: admissions end at their expiry" },
    { api: "bindIp", type: "bool", label: "Tie each admission to the network the visitor entered from", on: "tied to the entering network", off: "not tied to a network" },
    { api: "noScriptScore", type: "number", unit: "score", label: "Score of a visitor without JavaScript", empty: "just below the hold score (they queue)", hint: "Empty: just below the hold score, so they queue; at or above the hold score, they are held." },
  ]],
  ["The line", [
    { api: "maxWaiting", type: "number", unit: "visitors", label: "Longest line (newcomers beyond it are told it is full)" },
    { api: "abandonAfterSec", type: "number", unit: "seconds", label: "A waiting place is given up after this long without a check-in" },
    { api: "gracePeriodSec", type: "number", unit: "seconds", label: "Extra time a quiet visitor's place is kept (a phone asleep)" },
    { api: "pollBudgetPerSecond", type: "number", unit: "check-ins a second", label: "Check-ins a second the line may make beyond its front" },
  ]],
  ["Telling visitors when it is their turn", [
    { api: "notify", type: "bool", label: "Let a waiting visitor leave an e-mail address and be told at their turn", on: "offered: a visitor may leave an address", off: "not offered" },
    { api: "returnWindowSec", type: "number", unit: "seconds", label: "How long the e-mail's return link admits them, from their turn" },
  ]],
  ["If the service cannot reach its storage", [
    { api: "failMode", type: "select", label: "Visitors who come meanwhile", options: {
      closed: "Closed: asked to try again shortly; nobody is admitted",
      open: "Open: admitted without a line, as each server counts them",
    } },
  ]],
  ["Search engines' crawlers", [
    { api: "crawlers", type: "engines", label: "Crawlers proved by DNS to be a search engine's", options: {
      queue: "Queued: the waiting page asks them to come back later (it is never indexed)",
      pass: "Every engine's: sent on to the site without a place in line, uncounted",
      some: "Only the engines ticked: sent on to the site, uncounted",
    } },
  ]],
  ["Signed agents (Web Bot Auth)", [
    { api: "agents", type: "agents", label: "Policy per agent's key directory host, one a line: host then queue, lane or refuse (* for any verified agent)", hint: "Empty: no signature is checked and agents are visitors like anyone. queue: a place in line without proof of work; lane: admitted through the agents' own lane at its rate, never in the visitors' line nor their rate; refuse: 403. A signature that does not hold is refused." },
    { api: "agentLaneRatePerMinute", type: "number", unit: "admissions a minute", label: "Rate of the agents' lane (apart from the room's rate)" },
  ]],
  ["Fairness", [
    { api: "publicFairness", type: "bool", label: "Publish the opening's fairness report to visitors", on: "published", off: "not published" },
  ]],
];

/** @type {Record<string, string>} the search engines the crawlers setting names, in words */
const ENGINES = { google: "Google", bing: "Bing", apple: "Apple", yandex: "Yandex", baidu: "Baidu" };

/** @param {Setting} s @param {any} v @returns {string} a value as the confirmation says it */
function valueWords(s, v) {
  if (s.type === "bool") return v ? s.on || "on" : s.off || "off";
  if (s.type === "engines") {
    if (Array.isArray(v)) return `verified crawlers of ${v.map((e) => ENGINES[e] || e).join(", ")} go through`;
    return v === "pass" ? "every engine's verified crawlers go through" : "crawlers queued";
  }
  if (s.type === "agents") {
    const rules = Object.entries(v || {});
    if (!rules.length) return "no signature checked";
    const words = /** @type {Record<string, string>} */ ({ queue: "queued", lane: "through the agents' lane", refuse: "refused" });
    return rules.map(([host, policy]) => `${host === "*" ? "any verified agent" : host} ${words[policy] || policy}`).join(", ");
  }
  if (s.type === "select") return (s.options || {})[v] || String(v);
  if (v === null || v === undefined || v === "") return s.empty || "none";
  if (s.type === "number") return typeof v === "number" ? `${number(v)} ${s.unit}` : `"${v}"`;
  return `"${v}"`;
}

/** @param {any} b @returns {string} the draw's beacon in words */
function beaconWords(b) {
  if (!b) return "no beacon";
  const first = typeof b.genesisTime === "number" ? when(b.genesisTime * 1000) : String(b.genesisTime);
  return `${b.url}, first round at ${first} (${zone()}), a round every ${b.period} seconds`;
}

/**
 * The settings form, in `host`; refreshed from the room unless being edited.
 * @param {Page} page
 * @param {HTMLElement} host
 */
export function mountSettings(page, host) {
  const bound = limits();
  /** @type {Record<string, HTMLElement>} */
  const inputs = {};
  /** @type {Record<string, () => any>} */
  const read = {};
  /** @type {Record<string, (v: any) => void>} */
  const write = {};
  const fieldsets = GROUPS.map(([legend, settings]) => {
    const nodes = settings.flatMap((s) => {
      const id = `setting-${s.api}`;
      if (s.type === "bool") {
        const box = /** @type {HTMLInputElement} */ (el("input", { type: "checkbox", id }));
        const { nodes: parts } = labelled(box, s.label);
        inputs[s.api] = box;
        read[s.api] = () => box.checked;
        write[s.api] = (v) => { box.checked = Boolean(v); };
        return [el("div", { class: "check" }, [parts[1], parts[0]]), parts[2]];
      }
      if (s.type === "engines") {
        const select = /** @type {HTMLSelectElement} */ (el("select", { id },
          Object.entries(s.options || {}).map(([value, words]) => el("option", { value }, [words]))));
        const boxes = Object.entries(ENGINES).map(([name, words]) => {
          const box = /** @type {HTMLInputElement} */ (el("input", { type: "checkbox", id: `${id}-${name}`, value: name }));
          return { name, box, node: el("div", { class: "check" }, [box, el("label", { for: box.id }, [words])]) };
        });
        const which = el("fieldset", { id: `${id}-engines` }, [el("legend", {}, ["Engines whose crawlers go through"]), ...boxes.map((b) => b.node)]);
        const show = () => { which.hidden = select.value !== "some"; };
        select.addEventListener("change", show);
        inputs[s.api] = select;
        read[s.api] = () => {
          if (select.value !== "some") return select.value;
          return boxes.filter((b) => b.box.checked).map((b) => b.name);
        };
        write[s.api] = (v) => {
          const list = Array.isArray(v) ? v : [];
          select.value = Array.isArray(v) ? "some" : v || "queue";
          for (const b of boxes) b.box.checked = list.includes(b.name);
          show();
        };
        return [...labelled(select, s.label, "A claim in the User-Agent proves nothing: the address's reverse DNS must be the engine's, and that name must point back to it.").nodes, which];
      }
      if (s.type === "agents") {
        const area = /** @type {HTMLTextAreaElement} */ (el("textarea", { id, rows: "3", spellcheck: "false" }));
        inputs[s.api] = area;
        // A line the API would refuse is sent as typed, so the refusal names it.
        read[s.api] = () => Object.fromEntries(area.value.split("\n").map((line) => line.trim().split(/\s+/)).filter((p) => p[0]).map((p) => [p[0], p.slice(1).join(" ")]));
        write[s.api] = (v) => { area.value = Object.entries(v || {}).map(([host, policy]) => `${host} ${policy}`).join("\n"); };
        return labelled(area, s.label, s.hint).nodes;
      }
      if (s.type === "select") {
        const select = /** @type {HTMLSelectElement} */ (el("select", { id },
          Object.entries(s.options || {}).map(([value, words]) => el("option", { value }, [words]))));
        inputs[s.api] = select;
        read[s.api] = () => select.value;
        write[s.api] = (v) => { select.value = v; };
        return labelled(select, s.label).nodes;
      }
      const attrs = s.type === "number" ? { type: "number", inputmode: "numeric" } : { type: s.type };
      const input = /** @type {HTMLInputElement} */ (el("input", { id, ...attrs }));
      if (s.type === "number" && bound[s.api]) {
        input.min = String(bound[s.api].lo);
        input.max = String(bound[s.api].hi);
      }
      inputs[s.api] = input;
      read[s.api] = () => {
        if (s.type !== "number") return input.value.trim();
        if (input.value === "") return null; // "no value": the API says if one is needed
        return Number(input.value);
      };
      write[s.api] = (v) => { input.value = v === null || v === undefined ? "" : String(v); };
      const hint = [bounds(bound[s.api], s.type === "number" ? s.unit || "" : ""), s.hint || ""].filter(Boolean).join(" ");
      return labelled(input, s.label, hint).nodes;
    });
    return el("fieldset", {}, [el("legend", {}, [legend]), ...nodes]);
  });
  // The draw's public beacon: three parts, or none.
  const beacon = {
    url: /** @type {HTMLInputElement} */ (el("input", { id: "setting-beacon-url", type: "url" })),
    genesisTime: /** @type {HTMLInputElement} */ (el("input", { id: "setting-beacon-genesis", type: "number", inputmode: "numeric", min: "0" })),
    period: /** @type {HTMLInputElement} */ (el("input", { id: "setting-beacon-period", type: "number", inputmode: "numeric", min: "1", max: "3600" })),
  };
  inputs["drawBeacon.url"] = inputs.drawBeacon = beacon.url;
  inputs["drawBeacon.genesisTime"] = beacon.genesisTime;
  inputs["drawBeacon.period"] = beacon.period;
  fieldsets[fieldsets.length - 1].append(
    el("p", { class: "hint" }, ["A public randomness beacon the draw of each opening scheduled from now on takes (leave the address empty for none)."]),
    ...labelled(beacon.url, "Beacon's address", "https, a public host (drand's HTTP API).").nodes,
    ...labelled(beacon.genesisTime, "Beacon's first round", "Seconds since 1970, as the beacon's /info says it.").nodes,
    ...labelled(beacon.period, "Seconds between two rounds", "From 1 to 3,600.").nodes,
  );
  read.drawBeacon = () => {
    if (!beacon.url.value.trim() && !beacon.genesisTime.value && !beacon.period.value) return null;
    const num = (/** @type {HTMLInputElement} */ i) => (i.value === "" ? null : Number(i.value));
    return { url: beacon.url.value.trim(), genesisTime: num(beacon.genesisTime), period: num(beacon.period) };
  };
  write.drawBeacon = (b) => {
    beacon.url.value = b?.url || "";
    beacon.genesisTime.value = b ? String(b.genesisTime) : "";
    beacon.period.value = b ? String(b.period) : "";
  };

  const outcome = el("p", { id: "settings-outcome", role: "alert" });
  const form = el("form", { class: "settings", id: "settings-form", novalidate: "" }, [
    ...fieldsets,
    outcome,
    el("button", { type: "submit" }, ["Review and save"]),
  ]);
  const all = [...GROUPS.flatMap(([, settings]) => settings.map((s) => s.api)), "drawBeacon"];
  /** @type {Record<string, Setting>} */
  const byApi = Object.fromEntries(GROUPS.flatMap(([, settings]) => settings.map((s) => [s.api, s])));
  const fill = () => {
    for (const api of all) write[api](page.room[api]);
    form.dataset.edited = "";
  };
  form.addEventListener("input", () => { form.dataset.edited = "1"; });
  page.fillers.push(() => {
    if (!form.dataset.edited && !form.contains(document.activeElement)) fill();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    /** @type {Record<string, any>} */
    const body = {};
    const said = [];
    for (const api of all) {
      const next = read[api]();
      const before = page.room[api];
      if (JSON.stringify(next) === JSON.stringify(before ?? null)) continue;
      body[api] = next;
      if (api === "drawBeacon") said.push(`The draw's beacon: ${beaconWords(before)} → ${beaconWords(next)}`);
      else said.push(`${byApi[api].label}: ${valueWords(byApi[api], before)} → ${valueWords(byApi[api], next)}`);
    }
    showProblems(inputs, { status: 200, body: null }, outcome);
    if (!said.length) {
      outcome.textContent = "Nothing to save: every setting is as the room has it.";
      return;
    }
    page.confirmThen(
      `Change ${said.length === 1 ? "this setting" : `these ${said.length} settings`}: ${said.join("; ")}. Visitors meet it at their next check-in.`,
      body,
      (reply) => {
        if (showProblems(inputs, reply, outcome)) {
          fill();
          outcome.textContent = "Saved.";
        }
      },
    );
  });
  host.replaceChildren(form);
}

/** @type {[string, string, string][]} the safety net's thresholds: name, label, unit */
const NET = [
  ["activeSessions", "Start queueing when this many visitors are active at once", "visitors"],
  ["arrivalsPerMinute", "Or when this many arrive in a minute", "arrivals a minute"],
  ["coolDownSec", "Calm again after this long with an empty line and both below", "seconds"],
];

/** @param {any} net @returns {string} */
function netWords(net) {
  return `queueing from ${number(net.activeSessions)} active visitors or ${number(net.arrivalsPerMinute)} arrivals a minute, calm again after ${number(net.coolDownSec)} seconds quiet`;
}

/**
 * The safety net's form, in `host`.
 * @param {Page} page
 * @param {HTMLElement} host
 */
export function mountSafetyNet(page, host) {
  const bound = limits();
  /** @type {Record<string, HTMLElement>} */
  const inputs = {};
  const nodes = NET.flatMap(([name, label, unit]) => {
    const input = el("input", { id: `net-${name}`, type: "number", inputmode: "numeric" });
    const limit = bound[`safetyNet.${name}`];
    if (limit) {
      input.setAttribute("min", String(limit.lo));
      input.setAttribute("max", String(limit.hi));
    }
    inputs[`safetyNet.${name}`] = input;
    return labelled(/** @type {HTMLInputElement} */ (input), label, bounds(limit, unit)).nodes;
  });
  inputs.safetyNet = inputs["safetyNet.activeSessions"];
  const state = el("p", { id: "net-state" });
  const outcome = el("p", { id: "net-outcome", role: "alert" });
  const clear = el("button", { type: "button", class: "quiet", id: "net-clear" }, ["Turn the safety net off"]);
  const form = el("form", { class: "stack", id: "safety-net-form", novalidate: "" }, [
    el("p", { class: "hint" }, [
      "With a safety net the room queues only when the site needs it: while calm it lets everyone in at once (within capacity); " +
      "it starts queueing in its own mode as soon as either threshold is reached, and is calm again once its line has been empty " +
      "and both measures below their thresholds for the quiet time. Nobody admitted or waiting loses anything at a switch.",
    ]),
    state,
    ...nodes,
    outcome,
    el("div", { class: "row" }, [el("button", { type: "submit" }, ["Save safety net"]), clear]),
  ]);
  const value = (/** @type {string} */ name) => {
    const raw = /** @type {HTMLInputElement} */ (inputs[`safetyNet.${name}`]).value;
    return raw === "" ? null : Number(raw);
  };
  const fill = () => {
    const net = page.room.safetyNet;
    for (const [name] of NET) {
      /** @type {HTMLInputElement} */ (inputs[`safetyNet.${name}`]).value = net ? String(net[name]) : "";
    }
    form.dataset.edited = "";
  };
  const say = () => {
    const net = page.room.safetyNet;
    state.textContent = net
      ? `On: the room is ${net.state === "calm" ? "calm (letting everyone in)" : "queueing"}${net.since ? ` since ${when(net.since)} (${zone()})` : ""}; ${netWords(net)}.`
      : `Off: the room queues in its own mode (${modeWords(page.room.mode)}) at all times.`;
    clear.hidden = !net;
  };
  form.addEventListener("input", () => { form.dataset.edited = "1"; });
  page.fillers.push(() => {
    say();
    if (!form.dataset.edited && !form.contains(document.activeElement)) fill();
  });
  const after = (/** @type {any} */ reply) => {
    if (showProblems(inputs, reply, outcome)) {
      fill();
      say();
      outcome.textContent = "Saved.";
    }
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = Object.fromEntries(NET.map(([name]) => [name, value(name)]));
    const net = page.room.safetyNet;
    const text = net
      ? `Change the safety net from ${netWords(net)} to ${netWords(next)}.`
      : `Turn the safety net on: the room lets everyone in at once while calm, ${netWords(next)}; it queues in its own mode (${modeWords(page.room.mode)}).`;
    page.confirmThen(text, { safetyNet: next }, after);
  });
  clear.addEventListener("click", () =>
    page.confirmThen(
      `Turn the safety net off: the room queues in its own mode (${modeWords(page.room.mode)}) at all times, from now.`,
      { safetyNet: null }, after,
    ));
  host.replaceChildren(form);
}
