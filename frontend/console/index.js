// The operator console: the rooms list and a room's page, refreshed every few seconds.
import "uplot/dist/uPlot.min.css";
import "./console.css";
import { call, problem } from "./api.js";
import { AuditTable } from "./audit.js";
import { InvitesPanel } from "./invites.js";
import { KeysPanel } from "./keys.js";
import { RoomCharts } from "./charts.js";
import { contrastRatio, count, languageName, mailSummary, releasedBy, safetyNetSummary, when, zone } from "./format.js";
import { placed, span, summary } from "./schedule.js";
import { mountBypass } from "./bypass.js";
import { MODE_WORDS, el, labelled, modeWords, showProblems } from "./fields.js";
import { mountCreateRoom, mountDeleteRoom } from "./room-form.js";
import { mountRevoke } from "./revoke.js";
import { mountSafetyNet, mountSettings } from "./settings.js";

const REFRESH_MS = 5000;
/** @type {Record<string, string>} what each queueing mode does, as the confirmation says it */
const MODES = {
  fifo: "visitors are admitted in arrival order, at the rate.",
  random: "each admission is drawn at random among those waiting, at the rate.",
  passthrough: "everyone is admitted at once (within capacity), still counted.",
  reject: "no new entries; newcomers are shown the closed message.",
};
const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const scopes = (main.dataset.scopes || "").split(" ");

/**
 * A section of the page, placed after `before` (or at the end of main), with its heading.
 * @param {string} id
 * @param {string} title
 * @param {Element | null} before
 * @returns {HTMLElement} the section's body, for a form to fill
 */
function section(id, title, before) {
  const body = el("div", { id: `${id}-body` });
  const node = el("section", { id, "aria-labelledby": `${id}-h` }, [el("h2", { id: `${id}-h` }, [title]), body]);
  if (before) before.after(node);
  else main.append(node);
  return body;
}

/** @param {string} id @returns {HTMLElement} */
function byId(id) {
  return /** @type {HTMLElement} */ (document.getElementById(id));
}

// -- rooms -----------------------------------------------------------------------------------

async function showRooms() {
  const status = byId("rooms-status");
  const table = byId("rooms");
  const list = await call("GET", "/queues");
  if (list.status !== 200) {
    status.textContent = problem(list);
    return;
  }
  const rows = [];
  for (const room of list.body.queues) {
    const detail = await call("GET", `/queues/${room.id}`);
    const stats = detail.status === 200 ? detail.body.stats : {};
    const link = el("a", { href: `/console/rooms/${room.id}` }, [`${room.name} (${room.slug})`]);
    rows.push(
      el("tr", { "data-room": room.id }, [
        el("th", { scope: "row" }, [link]),
        el("td", { "data-status": room.status }, [room.status]),
        el("td", {}, [count(stats.waiting)]),
        el("td", {}, [count(stats.held)]),
        el("td", {}, [count(stats.active)]),
        el("td", {}, [count(room.ratePerMinute)]),
      ]),
    );
  }
  table.querySelector("tbody")?.replaceChildren(...rows);
  table.hidden = rows.length === 0;
  status.textContent = rows.length ? `${rows.length} room${rows.length > 1 ? "s" : ""}.` : "No rooms yet.";
}

// -- one room --------------------------------------------------------------------------------

class RoomPage {
  /** @param {string} id */
  constructor(id) {
    this.id = id;
    this.charts = new RoomCharts(byId("charts"));
    /** @type {any} */
    this.room = null;
    this.dialog = /** @type {HTMLDialogElement} */ (byId("confirm"));
    this.canWrite = scopes.includes("queues:write");
    this.audit = scopes.includes("audit:read")
      ? new AuditTable(byId("audit-section"), { me: main.dataset.key || "", room: id })
      : null;
    this.actionsKey = "";
    /** @type {HTMLElement[] | null} */
    this.forms = null;
    /** @type {HTMLElement | null} */
    this.buttons = null;
    /** @type {HTMLElement} */
    this.openAt = el("form");
    /** @type {Record<string, HTMLInputElement>} */
    this.inputs = {};
    // The room's clock as the page was served: the first series already asks for the chosen span.
    this.roomNow = Number(main.dataset.now) || 0;
    /** How far the room's clock runs ahead of real time (0 unless moved for a rehearsal). */
    this.clockAheadMs = 0;
    /** @type {(() => void)[]} fill the text and theme forms from the room, unless being edited */
    this.fillers = [];
    byId("range").addEventListener("change", () => {
      this.charts.reset();
      this.refresh();
    });
  }

  /** @returns {string} the series query of the chosen span, up to the room's present */
  range() {
    const span = Number(/** @type {HTMLSelectElement} */ (byId("range")).value) || 900000;
    // `to` is left to the server (the room's clock now); `from` by the last clock we saw.
    return this.roomNow ? `from=${this.roomNow + 1 - span}` : "";
  }

  async refresh() {
    const [detail, series, events] = await Promise.all([
      call("GET", `/queues/${this.id}`),
      call("GET", `/queues/${this.id}/series?${this.range()}`),
      call("GET", `/queues/${this.id}/events`),
    ]);
    if (detail.status !== 200) {
      byId("room-status").textContent = problem(detail);
      return;
    }
    this.room = detail.body;
    this.showFigures(detail.body);
    this.showLine(detail.body.line || [], detail.body.status);
    if (series.status === 200) {
      this.roomNow = series.body.now; // the room's clock, which the next range is read against
      this.charts.update(series.body);
    }
    if (events.status === 200) this.showSchedule(events.body);
    this.showActions();
    if (this.audit) await this.audit.refresh();
  }

  /**
   * The room's events on a timeline (a bar per event, now marked) and as a list.
   * @param {{now: number, clockAheadMs: number, activeEvent: string | null, events: import("./schedule.js").RoomEvent[]}} list
   */
  showSchedule(list) {
    this.clockAheadMs = list.clockAheadMs || 0;
    const [from, to] = span(list.events, list.now);
    // Positions through the CSSOM: the console's CSP allows no style attribute.
    const bars = placed(list.events, from, to).map(({ event, left, width }) => {
      const bar = el("span", { class: `event ${event.state}`, "data-event": event.id, title: summary(event) });
      bar.style.left = `${left.toFixed(2)}%`;
      bar.style.width = `${width.toFixed(2)}%`;
      return bar;
    });
    const marker = el("span", { class: "now", title: "now" });
    marker.style.left = `${(((list.now - from) / (to - from)) * 100).toFixed(2)}%`;
    byId("timeline").replaceChildren(...bars, marker);
    byId("timeline-span").textContent = `${when(from)} to ${when(to)} (${zone()})`;
    const items = list.events.map((event) => {
      const item = el("li", { "data-event": event.id, "data-state": event.state }, [summary(event)]);
      if (this.canWrite && event.state !== "ended") {
        const cancel = el("button", { type: "button", class: "quiet" }, [event.state === "running" ? "End now" : "Cancel"]);
        cancel.addEventListener("click", () =>
          this.confirmThen(
            event.state === "running"
              ? "End this event now: the room's own settings apply again at once."
              : "Cancel this event: it will not run.",
            undefined, undefined, "DELETE", `/queues/${this.id}/events/${event.id}`,
          ));
        item.append(" ", cancel);
      }
      return item;
    });
    if (!items.length) items.push(el("li", {}, ["No events scheduled."]));
    byId("events").replaceChildren(...items);
    if (this.canWrite && !byId("event-form").childElementCount) byId("event-form").replaceChildren(this.eventForm());
  }

  /** A form to schedule an event: its window and the settings it overrides. */
  eventForm() {
    /** @param {string} id @param {string} label @param {Record<string, string>} attrs */
    const field = (id, label, attrs) => {
      const input = /** @type {HTMLInputElement} */ (el("input", { id, ...attrs }));
      return { input, nodes: [el("label", { for: id }, [label]), input] };
    };
    const starts = field("event-starts", `Starts (${zone()})`, { type: "datetime-local", required: "" });
    const ends = field("event-ends", `Ends (${zone()})`, { type: "datetime-local", required: "" });
    const prequeue = field("event-prequeue", "Its own pre-queue opens (optional: places drawn at the start)", { type: "datetime-local" });
    const rate = field("event-rate", "Rate during it (per minute; empty: the room's)", { type: "number", min: "1" });
    const capacity = field("event-capacity", "Capacity during it (empty: the room's)", { type: "number", min: "1" });
    const mode = /** @type {HTMLSelectElement} */ (el("select", { id: "event-mode" }, [
      el("option", { value: "" }, ["The room's mode"]),
      ...["fifo", "passthrough", "reject"].map((m) => el("option", { value: m }, [modeWords(m)])),
    ]));
    const form = el("form", { class: "stack", id: "schedule-event" }, [
      ...starts.nodes, ...ends.nodes, ...prequeue.nodes, ...rate.nodes, ...capacity.nodes,
      el("label", { for: "event-mode" }, ["Mode during it"]), mode,
      el("button", { type: "submit" }, ["Schedule event"]),
    ]);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      // The typed wall time, moved onto the room's clock by the server's own reading of how far
      // that clock is ahead (0 in production): neither the page's last reading of the room's
      // clock (up to a refresh old) nor the operator's own clock may shift what was typed.
      const skew = this.clockAheadMs;
      const startsAt = new Date(starts.input.value).getTime() + skew;
      const endsAt = new Date(ends.input.value).getTime() + skew;
      /** @type {Record<string, any>} */
      const overrides = {};
      if (rate.input.value) overrides.ratePerMinute = Number(rate.input.value);
      if (capacity.input.value) overrides.capacity = Number(capacity.input.value);
      if (mode.value) overrides.mode = mode.value;
      /** @type {Record<string, any>} */
      const body = { startsAt, endsAt, overrides };
      if (prequeue.input.value) body.preQueueOpensAt = new Date(prequeue.input.value).getTime() + skew;
      const changes = [
        overrides.ratePerMinute ? `${count(overrides.ratePerMinute)} admitted a minute` : "",
        overrides.capacity ? `at most ${count(overrides.capacity)} active at once` : "",
        overrides.mode ? modeWords(overrides.mode).toLowerCase() : "",
      ].filter(Boolean);
      this.confirmThen(
        `Schedule an event from ${when(startsAt - skew)} to ${when(endsAt - skew)} (${zone()}): ${changes.length ? changes.join(", ") : "nothing changes"} while it runs.`,
        body, undefined, "POST", `/queues/${this.id}/events`,
      );
    });
    return form;
  }

  /** @param {any} room */
  showFigures(room) {
    byId("room-title").textContent = `${room.name} (${room.slug})`;
    document.title = `${room.name} · Anteroom console`;
    main.dataset.status = room.status;
    const stats = room.stats;
    /** @type {[string, string][]} */
    const figures = [
      ["Status", room.status],
      ...(room.safetyNet ? [["Safety net", safetyNetSummary(room.safetyNet)]] : []),
      ...(room.opensAt
        ? [[room.opensAt > (this.roomNow || Date.now()) ? "Opens" : "Opened", `${when(room.opensAt)} (${zone()})`]]
        : []),
      ["Waiting", count(stats.waiting)],
      ["Held", count(stats.held)],
      ["Active", count(stats.active) + (room.capacity ? ` of ${count(room.capacity)}` : "")],
      ["Admitted last minute", `${count(stats.admittedLastMinute)} (rate ${count(room.inForce?.ratePerMinute ?? room.ratePerMinute)} / min${room.inForce?.event ? ", the running event's" : ""})`],
      ["Admitted in all", count(stats.dealtTotal)],
      ["Hold score", String(room.holdScore)],
      ["Mode", modeWords(room.mode)],
      ["Session renewal", room.sessionRenewal === false ? "not renewable: admissions end at their expiry" : "renewable while active"],
      ...(room.notify || room.turnMail?.sent || room.turnMail?.failed ? [["Turn e-mails", mailSummary(room.turnMail)]] : []),
      // how many; the rules themselves, by what they match (never a secret), are under "Bypass rules"
      ["Bypass rules", count((room.bypass || []).length)],
    ];
    byId("figures").replaceChildren(
      ...figures.flatMap(([k, v]) => [el("dt", {}, [k]), el("dd", { "data-figure": k }, [v])]),
    );
  }

  /**
   * @param {any[]} line
   * @param {string} status the room's: a room that is not open nor paused has no line yet
   */
  showLine(line, status) {
    const rows = line.map((e) =>
      el("tr", {}, [
        el("td", {}, [String(e.position)]),
        el("td", {}, [String(e.ticket)]),
        el("td", {}, [e.visitor]),
        el("td", {}, [String(e.score)]),
      ]),
    );
    const empty = status === "open" || status === "paused" ? "Nobody is waiting." : "The room is not open: its line forms when it opens.";
    if (!rows.length) rows.push(el("tr", {}, [el("td", { colspan: "4" }, [empty])]));
    byId("line").querySelector("tbody")?.replaceChildren(...rows);
  }

  // -- actions -------------------------------------------------------------------------------

  showActions() {
    const host = byId("actions");
    if (!this.canWrite) {
      host.replaceChildren(el("p", {}, ["This key may only read (it lacks queues:write)."]));
      return;
    }
    const room = this.room;
    if (!this.forms) {
      // Built once: a refresh must never replace a field the operator is typing in.
      this.buttons = el("div", { class: "row" });
      this.openAt = this.openAtForm();
      /** @type {Record<string, HTMLInputElement>} */
      this.inputs = {};
      this.forms = [
        this.numberForm("ratePerMinute", "Rate (admissions per minute)", 1, (v) =>
          `Change the rate from ${this.room.ratePerMinute} to ${v} per minute. It applies to the whole line at once, without a burst.`),
        this.numberForm("capacity", "Capacity (most active visitors, 0 for no limit)", 0, (v) =>
          `Change the capacity from ${this.room.capacity || "no limit"} to ${v || "no limit"}.`),
        this.holdForm(),
        this.modeForm(),
      ];
      host.replaceChildren(this.buttons, this.openAt, ...this.forms);
      byId("texts").replaceChildren(
        this.textForm("notice", "Notice", "Shown above the figures on every waiting page, and read out once."),
        this.textForm("closedMessage", "Closed message", "Shown instead of \"not open\" once the room has closed."),
        this.themeForm(),
      );
      // The room's other settings, its safety net and bypass rules after the actions (each
      // placed right after them, so in reverse), its deletion at the end of the page.
      const after = byId("actions-section");
      mountBypass(this, section("bypass-section", "Bypass rules", after));
      mountSafetyNet(this, section("net-section", "Safety net", after));
      mountSettings(this, section("settings-section", "Settings", after));
      mountDeleteRoom(this, section("delete-section", "Delete this room", null));
    }
    for (const fill of this.fillers) fill();
    this.openAt.hidden = room.status !== "idle";
    for (const [field, input] of Object.entries(this.inputs)) {
      const value = String(room[field] || 0);
      if (document.activeElement !== input && input.dataset.shown !== value) {
        input.value = value; // changed elsewhere (or by us): show it, unless being edited
        input.dataset.shown = value;
        input.dispatchEvent(new Event("input"));
      }
    }
    if (this.actionsKey === room.status) return;
    this.actionsKey = room.status;
    /** @type {HTMLElement[]} */
    const buttons = [];
    /** @param {string} label @param {string} text @param {object} body @param {string} [cls] */
    const action = (label, text, body, cls = "") => {
      const b = el("button", { type: "button", class: cls, "data-action": label }, [label]);
      b.addEventListener("click", () => this.confirmThen(text, body));
      buttons.push(b);
    };
    if (room.status === "idle") {
      action("Open now", "Open the room now: visitors who arrive are lined up and admitted at the rate.", { action: "open" });
    }
    if (room.status === "paused") {
      action("Resume", "Resume the room: admissions start again at the configured rate.", { action: "open" });
    }
    if (room.status === "open") {
      action("Pause", "Pause the room: nobody is admitted until you resume; visitors keep their places.", { action: "pause" });
    }
    if (room.status !== "idle") {
      action("Close", "Close the room: EVERY waiting spot expires and admitted visitors are no longer refreshed. This cannot be undone.", { action: "close" }, "danger");
    }
    this.buttons?.replaceChildren(...buttons);
  }

  openAtForm() {
    const input = /** @type {HTMLInputElement} */ (el("input", { type: "datetime-local", id: "opens-at", required: "" }));
    const form = el("form", { class: "stack" }, [
      el("label", { for: "opens-at" }, [`Open at (${zone()})`]),
      input,
      el("button", { type: "submit" }, ["Schedule opening"]),
    ]);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const at = new Date(input.value).getTime();
      if (!Number.isFinite(at)) return;
      this.confirmThen(`Open the room at ${when(at)} (${zone()}). Visitors arriving before then are entered in a fair draw.`, { action: "open", opensAt: at });
    });
    return form;
  }

  /**
   * @param {string} field
   * @param {string} label
   * @param {number} min
   * @param {(v: number) => string} text
   */
  numberForm(field, label, min, text) {
    const id = `field-${field}`;
    const input = /** @type {HTMLInputElement} */ (el("input", { type: "number", id, min: String(min), inputmode: "numeric", required: "" }));
    this.inputs[field] = input;
    // The API checks the value (novalidate): its refusal is shown under the field, in its words.
    const { nodes } = labelled(input, label);
    const rest = el("p", { class: "hint" });
    const form = el("form", { class: "stack", "data-field": field, novalidate: "" }, [
      ...nodes,
      rest,
      el("button", { type: "submit" }, ["Change"]),
    ]);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const value = Number(input.value);
      // The API's "no limit" capacity is null; 0 is how the form says it.
      this.confirmThen(text(value), { [field]: field === "capacity" && value === 0 ? null : value },
        (reply) => showProblems({ [field]: input }, reply, rest));
    });
    return form;
  }

  modeForm() {
    const select = /** @type {HTMLSelectElement} */ (el("select", { id: "field-mode" },
      Object.keys(MODES).map((mode) => el("option", { value: mode }, [MODE_WORDS[mode]]))));
    const form = el("form", { class: "stack", "data-field": "mode" }, [
      el("label", { for: "field-mode" }, ["Queueing mode"]),
      select,
      el("button", { type: "submit" }, ["Change"]),
    ]);
    this.fillers.push(() => {
      // changed elsewhere (or by us): show it, unless the operator is choosing
      if (document.activeElement !== select && select.dataset.shown !== this.room.mode) {
        select.value = select.dataset.shown = this.room.mode;
      }
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const next = select.value;
      this.confirmThen(`Change the mode from ${modeWords(this.room.mode)} to ${modeWords(next)}: ${MODES[next]} Nobody already waiting loses or changes their place.`, { mode: next });
    });
    return form;
  }

  holdForm() {
    const input = /** @type {HTMLInputElement} */ (el("input", { type: "number", id: "field-holdScore", min: "1", max: "100", required: "" }));
    this.inputs.holdScore = input;
    const preview = el("p", { id: "hold-preview", "aria-live": "polite", class: "hint" });
    const form = el("form", { class: "stack", "data-field": "holdScore" }, [
      el("label", { for: "field-holdScore" }, ["Hold score (sessions scoring at or above it are held)"]),
      input,
      preview,
      el("button", { type: "submit" }, ["Change"]),
    ]);
    /** @type {Record<string, number>} */
    let held = {};
    const say = () => {
      const current = this.room.holdScore;
      const next = Number(input.value);
      const released = next > current ? releasedBy(held, next) - releasedBy(held, current) : 0;
      preview.textContent = next > current
        ? `Raising it to ${next} releases ${count(released)} held visitor${released === 1 ? "" : "s"} into the line, in their original places.`
        : next < current ? `Lowering it to ${next} holds waiting visitors scoring ${next} or more.` : "";
    };
    const load = () =>
      call("GET", `/queues/${this.id}/held`).then((r) => {
        if (r.status === 200) held = r.body.byScore;
        say();
      });
    load();
    input.addEventListener("input", say);
    input.addEventListener("focus", load); // fresh counts when the operator comes to change it
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const next = Number(input.value);
      say();
      this.confirmThen(`Change the hold score from ${this.room.holdScore} to ${next}. ${preview.textContent}`, { holdScore: next });
    });
    return form;
  }


  /**
   * A text for visitors (`notice`, `closedMessage`), per language or one plain text for all.
   * @param {string} field
   * @param {string} label
   * @param {string} hint
   */
  textForm(field, label, hint) {
    const languages = (main.dataset.languages || "en").split(" ").filter(Boolean);
    const select = /** @type {HTMLSelectElement} */ (el("select", { id: `${field}-lang` }, [
      el("option", { value: "" }, ["Every language (but those set apart)"]),
      ...languages.map((code) => el("option", { value: code }, [languageName(code)])),
    ]));
    const area = /** @type {HTMLTextAreaElement} */ (el("textarea", { id: `${field}-text`, maxlength: "500", dir: "auto" }));
    const save = el("button", { type: "submit" }, ["Save"]);
    const withdraw = el("button", { type: "button", class: "quiet" }, ["Withdraw"]);
    const form = el("form", { class: "stack", "data-field": field }, [
      el("label", { for: `${field}-lang` }, [`${label} language`]),
      select,
      el("label", { for: `${field}-text` }, [label]),
      area,
      el("p", { class: "hint" }, [hint]),
      el("div", { class: "row" }, [save, withdraw]),
    ]);
    const lower = label.toLowerCase();
    const show = () => {
      const value = this.room?.[field];
      const texts = value && typeof value === "object" ? value : null;
      area.value = select.value === "" ? (texts ? texts["*"] ?? "" : value ?? "")
        : texts ? texts[select.value] ?? "" : "";
      area.dataset.edited = "";
    };
    select.addEventListener("change", show);
    area.addEventListener("input", () => { area.dataset.edited = "1"; });
    this.fillers.push(() => {
      if (document.activeElement !== area && !area.dataset.edited) show();
    });
    const saved = (/** @type {{status: number}} */ reply) => {
      if (reply.status === 200) show(); // a refused text stays in the field, to be corrected
    };
    withdraw.addEventListener("click", () =>
      this.confirmThen(`Withdraw the ${lower} in every language: visitors no longer see it.`, { [field]: null }, saved));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const lang = select.value;
      const text = area.value.trim() ? area.value : "";
      const current = this.room[field];
      /** @type {any} */
      let next;
      let said;
      // Texts by language keep one for every other language under "*": setting one language
      // never takes the text away from the others.
      const texts = current && typeof current === "object" ? { ...current }
        : typeof current === "string" && current ? { "*": current } : {};
      const apart = Object.keys(texts).filter((k) => k !== "*").map(languageName);
      if (lang === "") {
        if (text) texts["*"] = text;
        else delete texts["*"];
        said = text
          ? `Show the ${lower} "${text}" in every language${apart.length ? ` but ${apart.join(", ")}, which keep their own` : ""}.`
          : `Withdraw the ${lower}${apart.length ? ` for every language but ${apart.join(", ")}` : ""}.`;
      } else {
        if (text) texts[lang] = text;
        else delete texts[lang];
        const others = texts["*"] ? `; every other language keeps "${texts["*"]}"` : "; no other language shows one";
        said = text ? `Set the ${lower} in ${languageName(lang)} to "${text}"${others}.`
          : `Remove the ${lower} in ${languageName(lang)}${texts["*"] ? `: it shows "${texts["*"]}" as every other language does` : ""}.`;
      }
      const keys = Object.keys(texts);
      next = !keys.length ? null : keys.length === 1 && keys[0] === "*" ? texts["*"] : texts;
      this.confirmThen(`${said} Waiting visitors see it at their next poll.`, { [field]: next }, saved);
    });
    return form;
  }

  /** The hosted page's theme: colours (with their contrast), logo and title; a PATCH replaces it whole. */
  themeForm() {
    const input = (/** @type {string} */ id, /** @type {string} */ type) =>
      /** @type {HTMLInputElement} */ (el("input", { id, type }));
    const accent = input("theme-accent", "color");
    const background = input("theme-background", "color");
    const logo = input("theme-logo", "url");
    const title = input("theme-title", "text");
    const check = el("p", { id: "theme-contrast", class: "hint", "aria-live": "polite" });
    const outcome = el("p", { id: "theme-outcome", role: "alert" });
    const remove = el("button", { type: "button", class: "quiet" }, ["Remove theme"]);
    const form = el("form", { class: "stack", "data-field": "theme" }, [
      el("label", { for: "theme-accent" }, ["Accent colour (buttons, links)"]),
      accent,
      el("label", { for: "theme-background" }, ["Background colour"]),
      background,
      check,
      el("label", { for: "theme-logo" }, ["Logo URL (https, optional)"]),
      logo,
      el("label", { for: "theme-title" }, ["Title (optional, instead of the room's name)"]),
      title,
      outcome,
      el("div", { class: "row" }, [el("button", { type: "submit" }, ["Save theme"]), remove]),
    ]);
    const say = () => {
      const ratio = contrastRatio(accent.value, background.value);
      check.textContent = `Accent on background: ${ratio.toFixed(2)}:1` +
        (ratio >= 4.5 ? " (readable)." : " (at least 4.5:1 is needed: the server will refuse it).");
      check.classList.toggle("error", ratio < 4.5);
    };
    const fields = [accent, background, logo, title];
    const show = () => {
      const theme = this.room?.theme || {};
      accent.value = theme.accentColor || "#2a5bd7";
      background.value = theme.backgroundColor || "#ffffff";
      logo.value = theme.logoUrl || "";
      title.value = theme.title || "";
      form.dataset.edited = "";
      say();
    };
    for (const field of fields) field.addEventListener("input", () => { form.dataset.edited = "1"; say(); });
    this.fillers.push(() => {
      if (!fields.includes(/** @type {any} */ (document.activeElement)) && !form.dataset.edited) show();
    });
    /** @param {{status: number}} reply */
    const told = (reply) => {
      outcome.textContent = reply.status === 200 ? "" : problem(/** @type {any} */ (reply));
      outcome.className = reply.status === 200 ? "" : "error";
      if (reply.status === 200) show();
    };
    remove.addEventListener("click", () =>
      this.confirmThen("Remove the theme: the page goes back to its own colours, without logo or title.", { theme: null }, told));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const theme = {
        accentColor: accent.value,
        backgroundColor: background.value,
        ...(logo.value.trim() ? { logoUrl: logo.value.trim() } : {}),
        ...(title.value.trim() ? { title: title.value.trim() } : {}),
      };
      const ratio = contrastRatio(accent.value, background.value).toFixed(2);
      this.confirmThen(
        `Replace the theme: accent ${theme.accentColor} on background ${theme.backgroundColor} (${ratio}:1)` +
          `${theme.logoUrl ? `, logo ${theme.logoUrl}` : ", no logo"}${theme.title ? `, title "${theme.title}"` : ", no title"}.`,
        { theme },
        told,
      );
    });
    return form;
  }

  /**
   * Ask first; then send the change and say what happened.
   * @param {string} text
   * @param {object} body
   * @param {(reply: {status: number}) => void} [after] called with the answer, once the page shows it
   * @param {string} [method] the room's PATCH unless told
   * @param {string} [path]
   */
  confirmThen(text, body, after, method = "PATCH", path = `/queues/${this.id}`) {
    byId("confirm-text").textContent = text;
    this.dialog.returnValue = "";
    const done = async () => {
      this.dialog.removeEventListener("close", done);
      if (this.dialog.returnValue !== "ok") return;
      const status = byId("room-status");
      status.textContent = "Saving…";
      const reply = await call(method, path, body);
      await this.refresh(); // the page shows the room as changed before it says so
      after?.(reply);
      status.textContent = reply.status < 300 ? "Done." : problem(reply);
      status.focus(); // the control that was used may have been redrawn: focus stays on the page
    };
    this.dialog.addEventListener("close", done);
    this.dialog.showModal();
    byId("confirm-cancel").focus();
  }
}

async function loop(/** @type {() => Promise<void>} */ step) {
  try {
    await step();
  } catch (error) {
    const status = document.querySelector("[role=status]");
    if (status) status.textContent = "Could not refresh; retrying.";
  }
  setTimeout(() => loop(step), REFRESH_MS);
}

if (main.dataset.page === "rooms") {
  if (scopes.includes("queues:write")) {
    const list = document.querySelector(".table-wrap");
    mountRevoke(section("revoke-section", "Revoke a visitor or a session", list));
    mountCreateRoom(section("create-section", "Create a room", list));
  }
  const auditHost = document.getElementById("audit-section");
  const audit = auditHost ? new AuditTable(auditHost, { me: main.dataset.key || "" }) : null;
  const keysHost = document.getElementById("keys-section");
  const keys = keysHost
    ? new KeysPanel(keysHost, { me: main.dataset.key || "", scopes, dialog: /** @type {HTMLDialogElement} */ (byId("confirm")) })
    : null;
  loop(async () => {
    await showRooms();
    await keys?.refresh();
    await audit?.refresh();
  });
}
if (main.dataset.page === "room" && main.dataset.room) {
  const page = new RoomPage(main.dataset.room);
  const invites = new InvitesPanel(byId("invites-section"), {
    roomId: main.dataset.room,
    canWrite: scopes.includes("queues:write"),
    publicKey: main.dataset.publicKey || "",
    dialog: /** @type {HTMLDialogElement} */ (byId("confirm")),
    room: () => page.room,
    clockAheadMs: () => page.clockAheadMs,
  });
  loop(async () => {
    await page.refresh();
    await invites.refresh();
  });
}
