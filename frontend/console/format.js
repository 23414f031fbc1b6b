// Pure helpers of the console: numbers and times as an operator reads them, chart summaries.

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
    timeZone,
  }).format(new Date(ms));
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
