/**
 * The place and ETA between two polls, moved at the room's pace (issue 19): far back the server
 * asks for a poll only every minute or so, and a visitor should still see the line move. The
 * pace is the last answer's own: `position / etaSeconds` places a second (the ETA is the time the
 * drain needs to reach the spot at the room's rate). An estimate never runs ahead of that pace
 * (whole places only, rounded down), never shows a place before the first, stops moving when
 * nothing was heard for a while, and is marked `estimate: true`; the next poll's answer replaces
 * it.
 */

/** Estimates stop moving once the last answer is this many poll intervals old (lost polls). */
export const STALE_INTERVALS = 2;
/** ...and never later than this after the last answer. */
export const STALE_MIN_MS = 30_000;
/** Answers asking for a poll this soon need no estimate: the polls move the place (the front). */
export const FRONT_POLL_MS = 2000;
/** At most one estimate a second; at least one every this often while it moves. */
export const TICK_MIN_MS = 1000;
export const TICK_MAX_MS = 15_000;

/**
 * The room's pace in places a second by `answer`, or null when it gives none (not waiting, held,
 * paused, before the opening, no ETA) or needs none (the next poll is due within FRONT_POLL_MS).
 * @param {any} answer a queue answer
 * @param {number} now epoch ms on the page's clock
 * @returns {number | null}
 */
export function paceOf(answer, now) {
  if (answer?.status !== "waiting" || answer.roomStatus === "paused") return null;
  if (Number.isFinite(answer.pollAfterMs) && answer.pollAfterMs <= FRONT_POLL_MS) return null;
  if (typeof answer.opensAt === "number" && answer.opensAt > now) return null;
  const { position, etaSeconds } = answer;
  if (!Number.isFinite(position) || position < 1) return null;
  if (!Number.isFinite(etaSeconds) || etaSeconds <= 0) return null;
  return position / etaSeconds;
}

/**
 * What to show at `now` for `answer`, received at `receivedAt`: the answer moved on at its pace,
 * with `estimate: true`; or null when it must not move (see paceOf) or has not moved yet.
 * @param {any} answer
 * @param {number} receivedAt epoch ms
 * @param {number} now epoch ms
 * @returns {any | null}
 */
export function estimateAt(answer, receivedAt, now) {
  const pace = paceOf(answer, now);
  if (pace === null) return null;
  const interval = Number.isFinite(answer.pollAfterMs) ? answer.pollAfterMs : 0;
  const staleAfter = Math.max(STALE_MIN_MS, STALE_INTERVALS * interval);
  const elapsedMs = Math.min(Math.max(0, now - receivedAt), staleAfter);
  const moved = Math.floor((pace * elapsedMs) / 1000);
  if (moved < 1) return null;
  const position = Math.max(1, answer.position - moved);
  const etaSeconds = Math.max(0, Math.ceil(answer.etaSeconds - elapsedMs / 1000));
  return { ...answer, position, etaSeconds, estimate: true };
}

/**
 * How long to wait before the next estimate: the time one place takes at the pace, within
 * TICK_MIN_MS and TICK_MAX_MS; null when the answer gives no pace.
 * @param {any} answer
 * @param {number} now
 * @returns {number | null} ms
 */
export function estimateTick(answer, now) {
  const pace = paceOf(answer, now);
  if (pace === null) return null;
  return Math.min(TICK_MAX_MS, Math.max(TICK_MIN_MS, Math.ceil(1000 / pace)));
}
