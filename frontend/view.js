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
 * @returns {string | null} null when nothing honest can be said
 */
export function etaText(etaSeconds) {
  if (typeof etaSeconds !== "number" || !Number.isFinite(etaSeconds) || etaSeconds < 0) return null;
  if (etaSeconds < 60) return "less than a minute";
  const minutes = Math.round(etaSeconds / 60);
  return minutes === 1 ? "about 1 minute" : `about ${minutes} minutes`;
}

/**
 * @param {number} ms time left
 * @returns {string} hh:mm:ss (hours may pass 24)
 */
export function countdownText(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const two = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${two(Math.floor(total / 3600))}:${two(Math.floor(total / 60) % 60)}:${two(total % 60)}`;
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
 */
export function statusText(state, update, roomName) {
  const room = roomName || "the waiting room";
  switch (state) {
    case "connecting":
      return `Joining the line for ${room}…`;
    case "prequeue":
      return "You're in. The line opens soon; your place will be drawn at random among everyone here before the start.";
    case "waiting":
      return typeof update?.position === "number"
        ? `You're number ${update.position} in line. Keep this page open; you'll be taken in automatically.`
        : "You're in line. Keep this page open; you'll be taken in automatically.";
    case "paused":
      return "The line is paused for the moment. You keep your place.";
    case "held":
      return "Your place is kept while we check your connection. Keep this page open.";
    case "idle":
      return `${room} is not open right now.`;
    case "admitted":
      return "It's your turn! Taking you in…";
    case "error":
      if (!update?.retryAt) return errorText(update?.error);
      if (update.error === "QueueFull") return "The line is full right now. We'll try again shortly.";
      return "We're having trouble reaching the waiting room. You keep your place; we'll try again shortly.";
  }
  return "";
}

/** @param {string | undefined} code */
function errorText(code) {
  switch (code) {
    case "RoomNotFound":
      return "This waiting room does not exist.";
    case "QueueDenied":
      return "We could not place you in this line.";
    case "SessionRevoked":
      return "Your place in line was withdrawn.";
    case "AddressRequired":
      return "This line needs to see your network address, and it could not.";
    default:
      return "Something went wrong. Please reload the page to try again.";
  }
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
