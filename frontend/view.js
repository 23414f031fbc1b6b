import { FRONT } from "./callback.js";

/**
 * What the hosted page shows, as pure functions of the queue updates (hosted-page.js puts
 * them into the DOM).
 */

/** @typedef {"connecting"|"prequeue"|"waiting"|"paused"|"held"|"idle"|"error"|"admitted"} PageState */

/**
 * @param {any} update a queue answer or an error update
 * @param {number} now epoch ms
 * @returns {PageState}
 */
export function pageState(update, now) {
  if (!update) return "connecting";
  switch (update.status) {
    case "waiting":
      if (update.roomStatus === "paused") return "paused";
      return typeof update.opensAt === "number" && update.opensAt > now ? "prequeue" : "waiting";
    case "held":
    case "idle":
    case "admitted":
    case "error":
      return update.status;
    default:
      return "connecting";
  }
}

/** Spans shorter than this say little about the pace of the line. */
export const RATE_SPAN_MS = 60_000;
/** Paces this far apart (fastest / slowest) make the ETA a range. */
export const RATE_VARIATION = 1.25;

/**
 * The line's pace as this page saw it: positions gained per ms over successive spans of at
 * least RATE_SPAN_MS, from `samples` of `{at, position}` taken while waiting.
 * @param {{at: number, position: number}[]} samples oldest first
 * @returns {number[]}
 */
export function observedRates(samples) {
  const rates = [];
  let from = samples[0];
  for (const sample of samples.slice(1)) {
    if (sample.at - from.at < RATE_SPAN_MS) continue;
    rates.push(Math.max(0, from.position - sample.position) / (sample.at - from.at));
    from = sample;
  }
  return rates;
}

/**
 * A range around the server's ETA when the pace varied: from the fastest pace seen to the
 * slowest that still moved; null when it was steady or too little was seen.
 * @param {number | null | undefined} etaSeconds the server's estimate
 * @param {number | null} position
 * @param {number[]} rates from observedRates
 * @returns {{low: number, high: number} | null} seconds
 */
export function etaRange(etaSeconds, position, rates) {
  if (typeof etaSeconds !== "number" || typeof position !== "number" || rates.length < 2) return null;
  const moving = rates.filter((rate) => rate > 0);
  if (moving.length < 2) return null;
  const fastest = Math.max(...moving);
  const slowest = Math.min(...moving);
  if (fastest < slowest * RATE_VARIATION) return null;
  const low = Math.min(etaSeconds, position / fastest / 1000);
  const high = Math.max(etaSeconds, position / slowest / 1000);
  return { low, high };
}

/**
 * @param {number | null | undefined} etaSeconds
 * @param {import("./i18n.js").Translator} tr
 * @param {{low: number, high: number} | null} [range] from etaRange
 * @returns {string | null} null when nothing honest can be said
 */
export function etaText(etaSeconds, tr, range = null) {
  if (typeof etaSeconds !== "number" || !Number.isFinite(etaSeconds) || etaSeconds < 0) return null;
  if (range && range.low >= 60 && range.high < 90 * 60) {
    const low = Math.round(range.low / 60);
    const high = Math.round(range.high / 60);
    if (high > low) return tr.count("eta.range", high, { low, high });
  }
  if (etaSeconds < 60) return tr.text("eta.soon");
  const minutes = Math.round(etaSeconds / 60);
  if (minutes >= 90) {
    const hours = Math.round((minutes / 60) * 2) / 2; // to the half hour: it is an estimate
    return tr.count("eta.hours", hours);
  }
  return tr.count("eta.minutes", minutes);
}

/**
 * @param {number} ms time left
 * @param {import("./i18n.js").Translator} tr
 * @returns {string} mm:ss, or h:mm:ss from an hour on (hours may pass 24), in the locale's digits
 */
export function countdownText(ms, tr) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const two = (/** @type {number} */ n) => tr.number(n, { minimumIntegerDigits: 2, useGrouping: false });
  const hours = Math.floor(total / 3600);
  const rest = `${two(Math.floor(total / 60) % 60)}:${two(total % 60)}`;
  return hours ? `${tr.number(hours, { useGrouping: false })}:${rest}` : rest;
}

/**
 * "N people ahead of you", by the language's plural rules; null without a position, and at
 * the front, where the status already says "Almost there" (never "0 people ahead of you").
 * @param {number | null} position
 * @param {import("./i18n.js").Translator} tr
 */
export function aheadText(position, tr) {
  return typeof position === "number" && position >= 2 ? tr.count("ahead", position - 1) : null;
}

/**
 * A random room's odds (the chance of admission in the next minute, 0..1) in words: odds.2
 * "about a 1 in {n} chance", odds.1 likely within the minute (1 in 1), odds.0 nobody let in
 * now; null without odds. (Keys kept short: the hosted page's bundle has a gzip budget.)
 * @param {unknown} odds
 * @param {import("./i18n.js").Translator} tr
 */
export function oddsText(odds, tr) {
  if (typeof odds !== "number") return null;
  const n = Math.round(1 / odds);
  return tr.text(`odds.${odds > 0 ? Math.min(n, 2) : 0}`, { n });
}

/**
 * Share of the way from the first position seen to the front, in [0, 1].
 * @param {number} startPosition
 * @param {number} position
 */
export function progressValue(startPosition, position) {
  if (position <= 1) return 1; // at the front, however this tab first saw the line
  const span = startPosition - 1 || 1;
  return Math.min(1, Math.max(0, (startPosition - position) / span));
}

/** A position is announced at most this often (state changes and the last five: always). */
export const ANNOUNCE_MIN_MS = 30_000;

/**
 * A screen-reader announcement is due on every change of state, and for a position once it has
 * moved by a tenth since the last one announced and ANNOUNCE_MIN_MS have passed (every step
 * within the last five).
 * @param {{state: string, position: number | null, at?: number} | null} last what was announced last
 * @param {{state: string, position: number | null, at?: number}} next
 */
export function shouldAnnounce(last, next) {
  if (!last || last.state !== next.state) return true;
  if (next.position === null || last.position === null) return next.position !== last.position;
  if (next.position === last.position) return false;
  if (next.position <= 5) return true;
  const recent = typeof last.at === "number" && typeof next.at === "number" && next.at - last.at < ANNOUNCE_MIN_MS;
  return !recent && Math.abs(last.position - next.position) >= Math.ceil(last.position / 10);
}

/**
 * One sentence per state, for #status-text and the announcements.
 * @param {PageState} state
 * @param {any} update
 * @param {string} roomName
 * @param {import("./i18n.js").Translator} tr
 */
export function statusText(state, update, roomName, tr) {
  const room = roomName || tr.text("page.eyebrow");
  switch (state) {
    case "connecting":
      return tr.text("status.connecting", { room });
    case "prequeue":
      return tr.text("status.prequeue");
    case "waiting":
      if (typeof update?.position !== "number") return tr.text("status.waitingNoPosition");
      return tr.text(update.position <= FRONT ? "status.front" : "status.waiting", {
        position: update.position,
      });
    case "paused":
      return tr.text("status.paused");
    case "held":
      return tr.text("status.held");
    case "idle":
      return tr.text("status.idle", { room });
    case "admitted":
      return tr.text("status.admitted");
    case "error":
      if (!update?.retryAt) return errorText(update?.error, tr);
      if (update.error === "QueueFull") return tr.text("status.queueFull");
      return tr.text("status.unreachable");
  }
  return "";
}

/**
 * The catalog's text for error `code` (`error.<code>`), else the generic one: a missing key
 * reads as itself.
 * @param {string | undefined} code @param {import("./i18n.js").Translator} tr
 */
function errorText(code, tr) {
  const key = `error.${code}`;
  const text = tr.text(key);
  return text === key ? tr.text("error.generic") : text;
}

/**
 * An operator's text for the line (a room's `notice` or `closedMessage`) in the page's
 * language: plain text as is; texts by language: the page's, else the one for every other
 * language (`*`), else English, else the first.
 * @param {unknown} value
 * @param {string} lang
 * @returns {string | null}
 */
export function localText(value, lang) {
  return localTextWithLanguage(value, lang)?.text ?? null;
}

/**
 * localText, and the language its text is in (null for plain text, whose language is unknown),
 * so the page can mark it (`lang`) when it is not the page's own.
 * @param {unknown} value
 * @param {string} lang
 * @returns {{text: string, lang: string | null} | null}
 */
export function localTextWithLanguage(value, lang) {
  if (typeof value === "string") return value ? { text: value, lang: null } : null;
  if (!value || typeof value !== "object") return null;
  const texts = /** @type {Record<string, unknown>} */ (value);
  // The page's language, else the text for every other language ("*", its language unknown),
  // else English, else the first.
  const code = lang in texts ? lang : "*" in texts ? "*" : "en" in texts ? "en" : Object.keys(texts)[0];
  const chosen = texts[code];
  return typeof chosen === "string" && chosen ? { text: chosen, lang: code === "*" ? null : code } : null;
}

/**
 * `url` with `abq=<token>` added to its query, before any #fragment.
 * @param {string} url
 * @param {string} token
 */
export function withAdmission(url, token) {
  const hash = url.indexOf("#");
  const base = hash === -1 ? url : url.slice(0, hash);
  const fragment = hash === -1 ? "" : url.slice(hash);
  const separator = !base.includes("?") ? "?" : base.endsWith("?") || base.endsWith("&") ? "" : "&";
  return `${base}${separator}abq=${encodeURIComponent(token)}${fragment}`;
}

/**
 * The "proof of your place" download of a draw receipt (`rc1.<kid>.<payload>.<signature>`, on
 * a pre-queue entrant's answers after the draw): a data: URL of the receipt's text and a file
 * name with the room and the drawn rank, or null when there is none this page can read.
 * @param {unknown} receipt
 * @param {string} room
 * @returns {{href: string, filename: string} | null}
 */
export function receiptDownload(receipt, room) {
  if (typeof receipt !== "string") return null;
  const parts = receipt.split(".");
  if (parts.length !== 4 || parts[0] !== "rc1") return null;
  let rank;
  try {
    const base64 = parts[2].replace(/-/g, "+").replace(/_/g, "/");
    rank = JSON.parse(atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4))).rank;
  } catch {
    return null;
  }
  if (!Number.isInteger(rank) || rank < 1) return null;
  // The slug is the room's own ([a-z0-9-]); anything else stays out of a file name.
  const name = room.replace(/[^A-Za-z0-9_-]/g, "") || "room";
  return {
    href: `data:text/plain;charset=utf-8,${encodeURIComponent(`${receipt}\n`)}`,
    filename: `receipt-${name}-${rank}.txt`,
  };
}
