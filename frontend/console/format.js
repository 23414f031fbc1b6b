// Pure helpers of the console: numbers and times as an operator reads them, chart summaries.
import { modeWords } from "./fields.js";

/**
 * @param {number | null | undefined} n
 * @returns {string}
 */
export function count(n) {
  return n === null || n === undefined ? "–" : new Intl.NumberFormat("en").format(n);
}

/**
 * A time in the operator's own time zone.
 * @param {number} ms epoch ms
 * @param {string} [timeZone] for tests; the browser's by default
 * @returns {string}
 */
export function when(ms, timeZone) {
  return new Intl.DateTimeFormat("en-GB", {
    dateStyle: "medium",
    timeStyle: "short",
    hourCycle: "h23", // one clock everywhere: the console never says am or pm
    timeZone,
  }).format(new Date(ms));
}

/**
 * The time of day, 24-hour ("14:05"), in the operator's time zone.
 * @param {number} ms epoch ms
 * @param {string} [timeZone] for tests; the browser's by default
 * @returns {string}
 */
export function clock(ms, timeZone) {
  return new Intl.DateTimeFormat("en-GB", { hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone })
    .format(new Date(ms));
}

/**
 * A chart axis's label: the time of day, with the day when the chart spans more than one.
 * @param {number} ms epoch ms
 * @param {number} spanMs what the chart shows
 * @param {string} [timeZone]
 * @returns {string}
 */
export function axisTime(ms, spanMs, timeZone) {
  if (spanMs <= 86400000) return clock(ms, timeZone);
  const day = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", timeZone }).format(new Date(ms));
  return `${day} ${clock(ms, timeZone)}`;
}

/**
 * "French (fr)": a page language by its name, in English, with its code; "*" is the text kept
 * for every language without one of its own.
 * @param {string} code
 * @returns {string}
 */
export function languageName(code) {
  if (code === "*") return "every other language";
  let name = code;
  try {
    name = new Intl.DisplayNames(["en"], { type: "language" }).of(code) || code;
  } catch {
    // not a language tag, or an engine without Intl.DisplayNames: the code alone
  }
  return name === code ? code : `${name} (${code})`;
}

/**
 * The safety net as the room's figures say it: its state, since when, and its thresholds.
 * @param {{state: string, since: number | null, activeSessions: number,
 *   arrivalsPerMinute: number, coolDownSec: number}} net
 * @param {string} [timeZone] for tests; the browser's by default
 * @returns {string}
 */
export function safetyNetSummary(net, timeZone) {
  const since = net.since ? ` since ${when(net.since, timeZone)}` : "";
  return (
    `${net.state}${since} (queues from ${count(net.activeSessions)} active or ` +
    `${count(net.arrivalsPerMinute)} arrivals / min; calm after ${count(net.coolDownSec)} s quiet)`
  );
}

/**
 * A room's turn e-mails in words: parked, sent, failed tries and the last failure.
 * @param {{parked: number, sent: number, failed: number, givenUp: number, lastFailure: {at: number, what: string} | null} | undefined} mail
 * @param {string} [timeZone]
 */
export function mailSummary(mail, timeZone) {
  if (!mail) return "none yet";
  const tries = mail.failed === 1 ? "try" : "tries";
  const given = mail.givenUp ? `, ${count(mail.givenUp)} given up` : "";
  const last = mail.lastFailure ? `; last failure ${mail.lastFailure.what} at ${when(mail.lastFailure.at, timeZone)}` : "";
  return `${count(mail.parked)} waiting for their turn, ${count(mail.sent)} sent, ${count(mail.failed)} failed ${tries}${given}${last}`;
}

/** @returns {string} the browser's time zone name */
export function zone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
}

/**
 * The last non-null value of a series, or null.
 * @param {(number | null)[]} values
 * @returns {number | null}
 */
export function last(values) {
  for (let i = values.length - 1; i >= 0; i -= 1) if (values[i] !== null) return values[i];
  return null;
}

/**
 * Sum of the non-null values of the last `n` points.
 * @param {(number | null)[]} values
 * @param {number} n
 * @returns {number}
 */
export function recentSum(values, n) {
  return values.slice(-n).reduce((a, b) => a + (b || 0), 0);
}

/**
 * Per-window counts as per-minute rates (null stays null).
 * @param {(number | null)[]} values
 * @param {number} stepMs
 * @returns {(number | null)[]}
 */
export function perMinute(values, stepMs) {
  return values.map((v) => (v === null ? null : Math.round((v * 60000) / stepMs)));
}

/**
 * How many held visitors a holdScore of `next` releases: those scoring below it.
 * @param {Record<string, number>} byScore held spots per score
 * @param {number} next
 * @returns {number}
 */
export function releasedBy(byScore, next) {
  return Object.entries(byScore).reduce((n, [score, c]) => n + (Number(score) < next ? c : 0), 0);
}

/**
 * The sentence a screen reader hears for the line chart.
 * @param {{waiting: (number|null)[], held: (number|null)[], step: number}} s
 * @returns {string}
 */
export function lineSummary(s) {
  const now = last(s.waiting);
  if (now === null) return "No samples yet in this span.";
  const back = Math.max(0, s.waiting.length - Math.round(300000 / s.step) - 1);
  const before = s.waiting.slice(0, back + 1).reverse().find((v) => v !== null);
  const change = before === undefined || before === null ? "" : trend(now - before, "in the last 5 minutes");
  return `${count(now)} waiting${change}, ${count(last(s.held))} held.`;
}

/**
 * @param {number} delta
 * @param {string} span
 * @returns {string}
 */
function trend(delta, span) {
  if (delta === 0) return ` (unchanged ${span})`;
  return ` (${delta > 0 ? "up" : "down"} ${count(Math.abs(delta))} ${span})`;
}

/**
 * WCAG 2 contrast ratio of two `#rrggbb` colours (1 to 21), as the server's theme check
 * computes it (queue/rooms/room_config.py), so the form can say the figure before it is sent.
 * @param {string} one
 * @param {string} other
 */
export function contrastRatio(one, other) {
  const luminance = (/** @type {string} */ hex) => {
    const [r, g, b] = [1, 3, 5].map((i) => {
      const c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [a, b] = [luminance(one), luminance(other)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}

// -- the audit log, in words ----------------------------------------------------------------------

/** @type {Record<string, string>} a room's fields as the console's forms name them */
const FIELDS = {
  name: "Name", slug: "Address (slug)", status: "Status", mode: "Mode",
  ratePerMinute: "Rate (per minute)", capacity: "Capacity", holdScore: "Hold score",
  opensAt: "Opens", notice: "Notice", closedMessage: "Closed message", theme: "Theme",
  redirectUrl: "Shop address", sessionRenewal: "Session renewal", publicFairness: "Public fairness report",
  bypass: "Bypass rules", safetyNet: "Safety net", "safetyNet.state": "Safety net",
  "safetyNet.since": "Safety net since", draw: "Draw", drawBeacon: "Draw beacon", preQueueMinutes: "Pre-queue",
  admissionTtlSec: "Admission life (seconds)", bindIp: "Admissions tied to the network",
  noScriptScore: "Score without JavaScript", maxWaiting: "Longest line",
  abandonAfterSec: "Place given up after (seconds)", gracePeriodSec: "Grace for a quiet visitor (seconds)",
  pollBudgetPerSecond: "Check-ins a second", notify: "E-mail at their turn",
  returnWindowSec: "Return link honoured (seconds)", failMode: "If storage is unreachable",
  "safetyNet.activeSessions": "Safety net: active visitors", "safetyNet.arrivalsPerMinute": "Safety net: arrivals a minute",
  "safetyNet.coolDownSec": "Safety net: quiet time (seconds)", "drawBeacon.url": "Beacon's address",
  "drawBeacon.genesisTime": "Beacon's first round", "drawBeacon.period": "Seconds between rounds",
  vid: "Visitor", jti: "Session", reason: "Reason",
};

/** @type {Record<string, string>} */
const ACTION_WORDS = {
  open: "Opened", pause: "Paused", close: "Closed", reroll: "Redrew the opening",
};

/** @param {string} name a field's API name: its label, or its words ("maxWait" → "Max wait") */
export function fieldLabel(name) {
  if (FIELDS[name]) return FIELDS[name];
  if (name.startsWith("events.")) return "Event";
  const words = name.replace(/[._]/g, " ").replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * A value as the operator reads it.
 * @param {string} name the field it belongs to
 * @param {any} value
 * @param {string} [timeZone]
 * @returns {string}
 */
function valueWords(name, value, timeZone) {
  if (value === null || value === undefined || value === "") return name === "capacity" ? "no limit" : "none";
  if (typeof value === "boolean") return value ? "on" : "off";
  if (typeof value === "number") {
    // epoch ms fields end in At or are the net's "since"
    return /At$|since$/.test(name) ? when(value, timeZone) : count(value);
  }
  if (name === "mode") return modeWords(value);
  if (typeof value === "string") return name === "notice" || name === "closedMessage" ? `"${value}"` : value;
  if (Array.isArray(value)) return `${count(value.length)} ${name === "bypass" ? "rule" : "item"}${value.length === 1 ? "" : "s"}`;
  if (name === "notice" || name === "closedMessage") {
    // texts by language: the one for every language first
    const keys = Object.keys(value).sort((a, b) => (a === "*" ? -1 : b === "*" ? 1 : a.localeCompare(b)));
    return keys.map((k) => `${languageName(k)}: "${value[k]}"`).join("; ");
  }
  if (name === "draw") return value.seed ? "drawn" : "committed, not yet drawn";
  if (name.startsWith("events.")) {
    const overrides = Object.entries(value.overrides || {}).map(([k, v]) => `${fieldLabel(k).toLowerCase()} ${valueWords(k, v, timeZone)}`);
    return `${when(value.startsAt, timeZone)} to ${clock(value.endsAt, timeZone)}${overrides.length ? ` (${overrides.join(", ")})` : ""}`;
  }
  return Object.entries(value).map(([k, v]) => `${fieldLabel(k).toLowerCase()} ${valueWords(k, v, timeZone)}`).join(", ");
}

/** @type {Record<string, string>} what each scope lets a key do, in words */
export const SCOPE_WORDS = {
  "queues:read": "read rooms",
  "queues:write": "change rooms",
  "audit:read": "read the audit log",
  "keys:write": "manage keys",
};

/**
 * A scope in words ("read rooms"); an unknown one as it is.
 * @param {string} scope
 * @returns {string}
 */
export function scopeWords(scope) {
  return SCOPE_WORDS[scope] || scope;
}

/**
 * One audit entry as a row of the console's table: when, who, which room, what, and each
 * change as "Label: before → after" in words.
 * @param {any} e an event of GET /audit
 * @param {{names: Record<string, string>, me: string, timeZone?: string}} context room names by
 *   id, the signed-in key's id
 * @returns {{id: string, when: string, who: string, room: string, roomId: string, what: string, changes: string[]}}
 */
export function auditRow(e, { names, me, timeZone }) {
  const who = e.keyId === "safety-net" ? "the safety net" : `key ${e.keyId}${e.keyId === me ? " (you)" : ""}`;
  const room = e.queue ? names[e.queue.id] || e.queue.slug : e.type.startsWith("key.") ? "the environment" : "every room";
  const changes = Object.entries(e.changes || {})
    .filter(([, c]) => JSON.stringify(c.before) !== JSON.stringify(c.after))
    .map(([k, c]) => `${fieldLabel(k)}: ${valueWords(k, c.before, timeZone)} → ${valueWords(k, c.after, timeZone)}`);
  let what = "Changed settings";
  if (e.type === "queue.created") what = "Created the room";
  else if (e.type === "queue.deleted") what = "Deleted the room";
  else if (e.type === "queue.invites") {
    what = "Issued invites";
    const i = e.invites || {};
    changes.push(`${count(i.count)} invite${i.count === 1 ? "" : "s"} for the ${i.lane} lane, ${count(i.uses)} use${i.uses === 1 ? "" : "s"} each, until ${when(i.expiresAt, timeZone)}`);
  } else if (e.type === "queue.invite.withdrawn") {
    what = "Withdrew an invite";
    const i = e.invite || {};
    changes.push(`Invite ${i.id} (${i.lane} lane, ${count(i.uses)} use${i.uses === 1 ? "" : "s"}): new visitors are refused it`);
  } else if (e.type === "key.created") {
    what = "Created a key";
    const k = e.key || {};
    changes.push(`Key ${k.id}, may ${(k.scopes || []).map(scopeWords).join(", ")}`);
  } else if (e.type === "key.revoked") {
    what = "Revoked a key";
    changes.push(`Key ${(e.key || {}).id}: its secret and public key no longer work`);
  } else if (e.type === "session.revoked") {
    const s = e.session || {};
    what = s.vid ? "Revoked a visitor" : "Revoked a session";
    changes.push(`${s.vid ? `Visitor ${s.vid}` : `Session ${s.jti}`}${e.reason ? `, because: ${e.reason}` : ""}`);
  } else if (e.action) {
    what = ACTION_WORDS[e.action.name] || e.action.name;
    if (e.action.opensAt) what = "Scheduled the opening";
  } else if (Object.keys(e.changes || {}).some((k) => k.startsWith("safetyNet."))) what = "Safety net switched";
  else if (Object.keys(e.changes || {}).some((k) => k.startsWith("events."))) {
    const c = Object.values(e.changes)[0];
    what = !c.before ? "Scheduled an event" : !c.after ? "Cancelled an event" : "Changed an event";
  }
  return { id: e.id, when: when(e.at, timeZone), who, room, roomId: e.queue?.id || "", what, changes };
}

/**
 * What the series says of those who went without being served: spots that left the line before
 * their turn (and, of them, how long half had waited at most) and admissions never used, in
 * the span shown.
 * @param {{abandonedWaits?: (number[] | null)[], waitBuckets: string[], unusedAdmissions?: (number | null)[]}} s
 * @returns {string}
 */
export function departuresSummary(s) {
  const buckets = s.waitBuckets;
  const totals = buckets.map(() => 0);
  for (const window of s.abandonedWaits || []) {
    if (window) window.forEach((n, i) => (totals[i] += n));
  }
  const left = totals.reduce((a, b) => a + b, 0);
  const unused = (s.unusedAdmissions || []).reduce((a, b) => a + (b || 0), 0);
  const admissions = `${count(unused)} admission${unused === 1 ? "" : "s"} ran out unused (no renewal seen).`;
  if (left === 0) return `Nobody left the line before their turn in this span; ${admissions}`;
  let seen = 0;
  let half = buckets[buckets.length - 1];
  for (let i = 0; i < buckets.length; i++) {
    seen += totals[i];
    if (seen * 2 >= left) {
      half = buckets[i];
      break;
    }
  }
  const wait = half === "inf" || half === "+Inf" ? `over ${buckets[buckets.length - 2]} s` : `up to ${half} s`;
  return `${count(left)} left the line before their turn in this span (half had waited ${wait}); ${admissions}`;
}

/**
 * Per-window totals of a per-bucket histogram column (null stays null).
 * @param {(number[] | null)[]} windows
 * @returns {(number | null)[]}
 */
export function windowTotals(windows) {
  return windows.map((w) => (w ? w.reduce((a, b) => a + b, 0) : null));
}
