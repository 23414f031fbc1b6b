import { PATHS } from "./api.js";
import { backoffDelay } from "./backoff.js";
import { AnteroomError } from "./errors.js";
import { estimateAt, estimateTick } from "./estimate.js";
import { solveFitted } from "./pow.js";
import { sleep } from "./timers.js";

/**
 * One visitor's journey through a room's line, shared by the browser agent (enter-queue.js) and
 * the headless client (headless/): everything that touches the platform (where the record is
 * kept, how the proof of work is solved, what the device says of itself) comes in as a
 * parameter, so this module reads no browser global.
 */

export const FINAL_STATUSES = new Set(["admitted", "idle"]);
// A session this close to its expiry is renewed before entering rather than refused on entry.
const SESSION_MARGIN_MS = 30_000;
// Used when an answer carries no usable pollAfterMs; the floor guards against a hot loop.
const DEFAULT_POLL_MS = 5000;
export const MIN_POLL_MS = 250;
// Recoveries (re-enter, re-identify) in a row without a good answer before giving up.
const MAX_RECOVERIES = 3;
// Puzzles a challenge may be split into (the server's most): a short tail for the solve time.
const MAX_PUZZLES = 16;

/**
 * How long to wait before repeating a failed call, or null when it must not be repeated.
 * 429: exactly Retry-After (no jitter; the spot is kept). Network errors, unreadable answers,
 * 5xx and WrongRegion: exponential backoff (backoff.js), but never less than a Retry-After the
 * server gave.
 *
 * @param {unknown} error
 * @param {number} failures consecutive transient failures so far
 * @param {() => number} random
 * @returns {number | null} milliseconds
 */
export function retryDelay(error, failures, random) {
  if (!(error instanceof AnteroomError)) return null;
  const explicit = error.retryAfter === null ? null : error.retryAfter * 1000;
  if (error.status === 429) return explicit ?? backoffDelay(failures, random);
  // WrongRegion: a load balancer sent the call to another region than the ticket's (a room
  // across regions); the spot is kept there, so the call is repeated, never a new entry.
  if (error.code === "NetworkError" || error.code === "BadResponse" || error.status >= 500 || error.code === "WrongRegion") {
    return Math.max(backoffDelay(failures, random), explicit ?? 0);
  }
  return null;
}

/**
 * @typedef {object} JourneyStore where the visitor's record is kept; each method may answer at
 *   once or with a promise (an app's storage is often asynchronous)
 * @property {() => import("./storage.js").RoomRecord | Promise<import("./storage.js").RoomRecord>} read
 * @property {(changes: Partial<import("./storage.js").RoomRecord>, answer?: any) => unknown} update
 *   `answer`: the final answer the change follows from, when there is one
 * @property {() => unknown} clear
 */

/**
 * @typedef {(ms: number, options: {clock: import("./timers.js").Clock, signal: AbortSignal}) => Promise<void>} Wait
 */

/**
 * What the leading tab (or the headless client) does: arrive (two calls to a ticket) when it holds no live session, enter
 * with one it holds, or resume with the stored ticket; then poll at the server's pace until
 * admitted (or the room is idle).
 *
 * @param {{
 *   slug: string,
 *   options: any,
 *   store: JourneyStore,
 *   api: ReturnType<typeof import("./api.js").createApi>,
 *   emit: (update: any) => void,
 *   signal: AbortSignal,
 *   openSolver: (options: {signal: AbortSignal, clock: import("./timers.js").Clock}) => import("./pow.js").Solver,
 *   collectSignals: () => Record<string, unknown>,
 *   wait?: Wait,
 * }} context `wait`: how a wait is made (default: a timer alone; the browser's ends on waking)
 */
export async function lead({ slug, options, store, api, emit, signal, openSolver, collectSignals, wait = sleep }) {
  const { clock, random } = options;

  /** Runs `call` until it answers, waiting out transient failures (see retryDelay). */
  const retrying = async (/** @type {() => Promise<any>} */ call) => {
    let failures = 0;
    for (;;) {
      signal.throwIfAborted();
      try {
        return await call();
      } catch (error) {
        signal.throwIfAborted();
        const delay = retryDelay(error, failures, random);
        if (delay === null) throw error;
        const failure = /** @type {AnteroomError} */ (error);
        if (!(failure.status === 429 && failure.retryAfter !== null)) failures += 1;
        const retryAt = clock.now() + delay;
        emit({ status: "error", error: failure.code, message: failure.message, retryAt });
        // due by the wall clock: a wake (back online, shown again) after a sleep retries at once
        while (clock.now() < retryAt) await wait(retryAt - clock.now(), { clock, signal });
      }
    }
  };

  /**
   * An arrival in two calls: a challenge this device fits to itself (arrive), then the proof,
   * the session and the spot at once (join). A join retried with the same proof (a timeout, a
   * 503) is answered as the first was: the same session, the same spot.
   */
  const arrive = async (/** @type {string | null} */ previousSession) => {
    const signals = collectSignals();
    // The workers start while the challenge is on its way.
    const solver = openSolver({ signal, clock });
    /** @type {Record<string, unknown>} */
    let body;
    try {
      const ask = { room: slug, maxPuzzles: MAX_PUZZLES, signals };
      const challenge = await retrying(() => api.post(PATHS.arrive, ask, signal));
      body = { room: slug, challenge: challenge.challenge, solutions: await solveFitted(solver, challenge), signals };
    } finally {
      solver.close();
    }
    signal.throwIfAborted();
    if (previousSession) body.previousSession = previousSession;
    if (options.invite != null) body.invite = options.invite;
    const joined = await retrying(() => api.post(PATHS.join, body, signal));
    const session = joined?.session;
    if (typeof session?.sessionToken !== "string") {
      throw new AnteroomError("The waiting room sent no session.", { code: "BadResponse", status: 200 });
    }
    await store.update({ sessionToken: session.sessionToken, sessionExpiresAt: toEpochMs(session.expiresAt) });
    return joined.queue;
  };

  let recoveries = 0;
  /** @param {AnteroomError} error */
  const recover = (error) => {
    recoveries += 1;
    if (recoveries > MAX_RECOVERIES) throw error;
  };

  for (;;) {
    signal.throwIfAborted();
    const record = await store.read();
    let answer;
    try {
      if (record.queueToken) {
        answer = await retrying(() => api.post(PATHS.poll, { ticket: record.queueToken }, signal));
      } else if (isLive(record, clock.now())) {
        // (no invite: undefined is left out of the JSON, null is taken as none)
        const body = { room: slug, sessionToken: record.sessionToken, invite: options.invite };
        answer = await retrying(() => api.post(PATHS.enter, body, signal));
      } else {
        answer = await arrive(record.sessionToken);
      }
    } catch (error) {
      if (!(error instanceof AnteroomError)) throw error;
      if (record.queueToken && (error.code === "TicketGone" || error.status === 401)) {
        // The spot is gone (dropped, expired) or its ticket no longer verifies: take a new one.
        recover(error);
        await store.update({ queueToken: null });
        continue;
      }
      if (!record.queueToken && (error.code === "TokenExpired" || error.code === "TokenInvalid")) {
        // An expired session still proves who we were (previousSession keeps the visitor id);
        // an invalid one proves nothing.
        recover(error);
        const forget = error.code === "TokenExpired" ? { sessionExpiresAt: 0 } : { sessionToken: null, sessionExpiresAt: null };
        await store.update(forget);
        continue;
      }
      if (error.code === "SessionRevoked") await store.clear();
      throw error;
    }
    if (answer === null || typeof answer !== "object" || typeof answer.status !== "string") {
      throw new AnteroomError("The waiting room sent an unreadable answer.", { code: "BadResponse", status: 200 });
    }
    recoveries = 0;
    if (FINAL_STATUSES.has(answer.status)) await store.update({ queueToken: null }, answer);
    else if (typeof answer.queueToken === "string") await store.update({ queueToken: answer.queueToken });
    emit(answer);
    if (FINAL_STATUSES.has(answer.status)) return answer;
    const pollAfter = Number.isFinite(answer.pollAfterMs) ? answer.pollAfterMs : DEFAULT_POLL_MS;
    await waitMovingEstimates(answer, Math.max(MIN_POLL_MS, pollAfter), { clock, signal, emit, estimates: options.estimates, wait });
  }
}

/**
 * Waits `ms` until the next poll; meanwhile, unless `estimates` is false, emits the answer moved
 * at the room's pace (estimate.js) each time the place it shows changes. The poll stays due at
 * the same moment whatever the estimates do, by the wall clock: after a sleep (timers stopped)
 * a `wait` that ends on waking (wake.js) lets the poll go as soon as it is overdue, so a spot
 * still kept is polled again rather than lost to the rest of an interval the sleep did not count.
 * @param {any} answer the last answer
 * @param {number} ms
 * @param {{clock: import("./timers.js").Clock, signal: AbortSignal, emit: (update: any) => void, estimates: boolean, wait: Wait}} context
 */
async function waitMovingEstimates(answer, ms, { clock, signal, emit, estimates, wait }) {
  const receivedAt = clock.now();
  const pollAt = receivedAt + ms;
  let shown = answer.position;
  for (;;) {
    const left = pollAt - clock.now();
    if (left <= 0) return;
    const tick = estimates ? estimateTick(answer, clock.now()) : null;
    await wait(tick === null ? left : Math.min(left, tick), { clock, signal });
    if (tick === null || clock.now() >= pollAt) continue;
    const estimate = estimateAt(answer, receivedAt, clock.now());
    if (estimate && estimate.position !== shown) {
      shown = estimate.position;
      emit(estimate);
    }
  }
}

/**
 * @param {import("./storage.js").RoomRecord} record
 * @param {number} now
 */
function isLive(record, now) {
  if (!record.sessionToken) return false;
  return record.sessionExpiresAt === null || record.sessionExpiresAt - SESSION_MARGIN_MS > now;
}

/**
 * Expiries as epoch ms. The API speaks epoch ms; a number too small for that is read as epoch
 * seconds, an ISO string is parsed.
 * @param {unknown} value
 * @returns {number | null}
 */
function toEpochMs(value) {
  if (typeof value === "number" && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value;
  if (typeof value === "string") {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? null : parsed;
  }
  return null;
}

/**
 * Calls the integrator's onUpdate; an exception there is reported, not allowed to stop the queue.
 * @param {((update: any) => void) | undefined} onUpdate
 * @param {any} update
 */
export function notify(onUpdate, update) {
  if (!onUpdate) return;
  try {
    onUpdate(update);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}
