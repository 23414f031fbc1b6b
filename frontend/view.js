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

/**
 * @param {number | null | undefined} etaSeconds
 * @param {import("./i18n.js").Translator} tr
 * @returns {string | null} null when nothing honest can be said
 */
export function etaText(etaSeconds, tr) {
  if (typeof etaSeconds !== "number" || !Number.isFinite(etaSeconds) || etaSeconds < 0) return null;
  if (etaSeconds < 60) return tr.text("eta.soon");
  const minutes = Math.round(etaSeconds / 60);
  return tr.count("eta.minutes", minutes);
}

/**
 * @param {number} ms time left
 * @param {import("./i18n.js").Translator} tr
 * @returns {string} hh:mm:ss in the locale's digits (hours may pass 24)
 */
export function countdownText(ms, tr) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const two = (/** @type {number} */ n) => tr.number(n, { minimumIntegerDigits: 2, useGrouping: false });
  return `${two(Math.floor(total / 3600))}:${two(Math.floor(total / 60) % 60)}:${two(total % 60)}`;
}

/**
 * "N people ahead of you", by the language's plural rules; null without a position.
 * @param {number | null} position
 * @param {import("./i18n.js").Translator} tr
 */
export function aheadText(position, tr) {
  return typeof position === "number" && position >= 1 ? tr.count("ahead", position - 1) : null;
}

/**
 * Share of the way from the first position seen to the front, in [0, 1].
 * @param {number} startPosition
 * @param {number} position
 */
export function progressValue(startPosition, position) {
  const span = startPosition - 1 || 1;
  return Math.min(1, Math.max(0, (startPosition - position) / span));
}

/**
 * A screen-reader announcement is due on every change of state, and for a position once it has
 * moved by a tenth since the last one announced (every step within the last five).
 * @param {{state: string, position: number | null} | null} last what was announced last
 * @param {{state: string, position: number | null}} next
 */
export function shouldAnnounce(last, next) {
  if (!last || last.state !== next.state) return true;
  if (next.position === null || last.position === null) return next.position !== last.position;
  if (next.position === last.position) return false;
  return next.position <= 5 || Math.abs(last.position - next.position) >= Math.ceil(last.position / 10);
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
      return typeof update?.position === "number"
        ? tr.text("status.waiting", { position: update.position })
        : tr.text("status.waitingNoPosition");
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

const KNOWN_ERRORS = ["RoomNotFound", "QueueDenied", "SessionRevoked", "AddressRequired"];

/** @param {string | undefined} code @param {import("./i18n.js").Translator} tr */
function errorText(code, tr) {
  return tr.text(code && KNOWN_ERRORS.includes(code) ? `error.${code}` : "error.generic");
}

/**
 * An operator's text for the line (a room's `notice` or `closedMessage`) in the page's
 * language: plain text as is; texts by language: the page's, else English, else the first.
 * @param {unknown} value
 * @param {string} lang
 * @returns {string | null}
 */
export function localText(value, lang) {
  if (typeof value === "string") return value || null;
  if (!value || typeof value !== "object") return null;
  const texts = /** @type {Record<string, unknown>} */ (value);
  const chosen = texts[lang] ?? texts.en ?? Object.values(texts)[0];
  return typeof chosen === "string" && chosen ? chosen : null;
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
