import { createApi, PATHS } from "./api.js";
import { backoffDelay } from "./backoff.js";
import { AnteroomError } from "./errors.js";
import { estimateAt, estimateTick } from "./estimate.js";
import { openSolver, solveFitted } from "./pow.js";
import { collectSignals } from "./signals.js";
import { createRoomStore } from "./storage.js";
import { joinTabs } from "./tabs.js";
import { realClock } from "./timers.js";
import { sleepOrWake } from "./wake.js";

const SLUG = /^[a-z0-9-]{3,64}$/;
const FINAL_STATUSES = new Set(["admitted", "idle"]);
// A session this close to its expiry is renewed before entering rather than refused on entry.
const SESSION_MARGIN_MS = 30_000;
// Used when an answer carries no usable pollAfterMs; the floor guards against a hot loop.
const DEFAULT_POLL_MS = 5000;
const MIN_POLL_MS = 250;
// Recoveries (re-enter, re-identify) in a row without a good answer before giving up.
const MAX_RECOVERIES = 3;
// Puzzles a challenge may be split into (the server's most): a short tail for the solve time.
const MAX_PUZZLES = 16;

/**
 * Takes a place in the room's line and waits to be let in. See index.d.ts for the contract.
 *
 * @param {string} slug
 * @param {import("./index.js").EnterQueueOptions} options
 * @returns {Promise<import("./index.js").QueueAnswer>}
 */
export function enterQueue(slug, options) {
  const settings = normalizeOptions(slug, options);
  if (settings.signal?.aborted) return Promise.reject(settings.signal.reason);
  return run(slug, settings);
}

/**
 * Copies and defaults the options; a bad one throws a TypeError that names it.
 * @param {unknown} slug
 * @param {any} input
 */
function normalizeOptions(slug, input) {
  if (typeof slug !== "string" || !SLUG.test(slug)) {
    throw new TypeError("`slug` must be a room slug: 3 to 64 characters of a-z, 0-9 and -.");
  }
  if (input === null || typeof input !== "object") {
    throw new TypeError("`options` must be an object holding at least `apiKey`.");
  }
  const options = { ...input };
  if (typeof options.apiKey !== "string" || !options.apiKey.startsWith("pk_")) {
    throw new TypeError("`apiKey` must be the environment's public key, a string starting with pk_.");
  }
  options.baseUrl ??= "";
  options.baseUrl = normalizeBaseUrl(options.baseUrl);
  if (options.onUpdate !== undefined && typeof options.onUpdate !== "function") {
    throw new TypeError("`onUpdate` must be a function.");
  }
  if (options.signal !== undefined && !isAbortSignal(options.signal)) {
    throw new TypeError("`signal` must be an AbortSignal.");
  }
  options.fetch ??= (/** @type {any[]} */ ...args) => globalThis.fetch(.../** @type {[any]} */ (args));
  if (typeof options.fetch !== "function") throw new TypeError("`fetch` must be a function.");
  options.clock ??= realClock;
  const clock = options.clock;
  const clockMethods = ["now", "setTimeout", "clearTimeout"];
  if (typeof clock !== "object" || !clockMethods.every((name) => typeof clock[name] === "function")) {
    throw new TypeError("`clock` must be an object with now(), setTimeout() and clearTimeout().");
  }
  if (options.invite != null && typeof options.invite !== "string") throw new TypeError("`invite` must be a string.");
  options.random ??= Math.random;
  options.estimates ??= true;
  if (typeof options.estimates !== "boolean") throw new TypeError("`estimates` must be true or false.");
  if (typeof options.random !== "function") throw new TypeError("`random` must be a function.");
  return options;
}

/** @param {unknown} baseUrl "" (same origin), a path, or an absolute http(s) URL; no trailing slash */
function normalizeBaseUrl(baseUrl) {
  if (typeof baseUrl !== "string") throw new TypeError("`baseUrl` must be a string URL.");
  if (baseUrl === "" || baseUrl.startsWith("/")) return baseUrl.replace(/\/+$/, "");
  let url;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError("`baseUrl` must be an absolute http(s) URL, a path, or \"\".");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError("`baseUrl` must be an http(s) URL.");
  }
  return baseUrl.replace(/\/+$/, "");
}

/** @param {any} value */
function isAbortSignal(value) {
  return typeof value === "object" && value !== null && typeof value.aborted === "boolean" &&
    typeof value.addEventListener === "function" && typeof value.throwIfAborted === "function";
}

/**
 * How long to wait before repeating a failed call, or null when it must not be repeated.
 * 429: exactly Retry-After (no jitter; the spot is kept). Network errors, unreadable answers and
 * 5xx: exponential backoff (backoff.js), but never less than a Retry-After the server gave.
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
  if (error.code === "NetworkError" || error.code === "BadResponse" || error.status >= 500) {
    return Math.max(backoffDelay(failures, random), explicit ?? 0);
  }
  return null;
}

/**
 * @param {string} slug
 * @param {ReturnType<typeof normalizeOptions>} options
 * @returns {Promise<any>}
 */
function run(slug, options) {
  const { clock, signal } = options;
  const store = createRoomStore(options.baseUrl, slug);
  const api = createApi(options);
  // Ends every wait and request of this call, whichever way it ends.
  const stop = new AbortController();
  /** @type {any} */
  let lastUpdate = null;

  return new Promise((resolve, reject) => {
    let settled = false;
    /** @param {() => void} settle */
    const finish = (settle) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      stop.abort(signal?.reason);
      tabs.close();
      settle();
    };
    const onAbort = () => finish(() => reject(signal?.reason));

    /** @param {any} message */
    const onMessage = (message) => {
      if (tabs.isLeader()) {
        if (message.type === "hello" && lastUpdate) tabs.publish({ type: "update", update: lastUpdate });
        return;
      }
      if (message.type === "update") {
        notify(options.onUpdate, message.update);
        if (FINAL_STATUSES.has(message.update?.status)) finish(() => resolve(message.update));
      } else if (message.type === "failed") {
        const { message: text, ...details } = message.error;
        finish(() => reject(new AnteroomError(text, details)));
      }
    };

    const tabs = joinTabs(`anteroom:${slug}`, { clock, onMessage });
    signal?.addEventListener("abort", onAbort, { once: true });

    /** @param {any} update */
    const emit = (update) => {
      lastUpdate = update;
      notify(options.onUpdate, update);
      tabs.publish({ type: "update", update });
    };

    tabs.publish({ type: "hello" });
    tabs.leadership
      .then(() => lead({ slug, options, store, api, emit, signal: stop.signal }))
      .then(
        (answer) => finish(() => resolve(answer)),
        (error) => {
          if (error instanceof AnteroomError) {
            const { message, code, status, retryAfter, closedMessage } = error;
            tabs.publish({ type: "failed", error: { message, code, status, retryAfter, closedMessage } });
          }
          finish(() => reject(error));
        },
      );
  });
}

/**
 * What the leading tab does: arrive (two calls to a ticket) when it holds no live session, enter
 * with one it holds, or resume with the stored ticket; then poll at the server's pace until
 * admitted (or the room is idle).
 *
 * @param {{
 *   slug: string,
 *   options: any,
 *   store: ReturnType<typeof createRoomStore>,
 *   api: ReturnType<typeof createApi>,
 *   emit: (update: any) => void,
 *   signal: AbortSignal,
 * }} context
 */
async function lead({ slug, options, store, api, emit, signal }) {
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
        while (clock.now() < retryAt) await sleepOrWake(retryAt - clock.now(), { clock, signal });
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
    store.update({ sessionToken: session.sessionToken, sessionExpiresAt: toEpochMs(session.expiresAt) });
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
    const record = store.read();
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
        store.update({ queueToken: null });
        continue;
      }
      if (!record.queueToken && (error.code === "TokenExpired" || error.code === "TokenInvalid")) {
        // An expired session still proves who we were (previousSession keeps the visitor id);
        // an invalid one proves nothing.
        recover(error);
        const forget = error.code === "TokenExpired" ? { sessionExpiresAt: 0 } : { sessionToken: null, sessionExpiresAt: null };
        store.update(forget);
        continue;
      }
      if (error.code === "SessionRevoked") store.clear();
      throw error;
    }
    if (answer === null || typeof answer !== "object" || typeof answer.status !== "string") {
      throw new AnteroomError("The waiting room sent an unreadable answer.", { code: "BadResponse", status: 200 });
    }
    recoveries = 0;
    if (FINAL_STATUSES.has(answer.status)) store.update({ queueToken: null });
    else if (typeof answer.queueToken === "string") store.update({ queueToken: answer.queueToken });
    emit(answer);
    if (FINAL_STATUSES.has(answer.status)) return answer;
    const pollAfter = Number.isFinite(answer.pollAfterMs) ? answer.pollAfterMs : DEFAULT_POLL_MS;
    await waitMovingEstimates(answer, Math.max(MIN_POLL_MS, pollAfter), { clock, signal, emit, estimates: options.estimates });
  }
}

/**
 * Waits `ms` until the next poll; meanwhile, unless `estimates` is false, emits the answer moved
 * at the room's pace (estimate.js) each time the place it shows changes. The poll stays due at
 * the same moment whatever the estimates do, by the wall clock: after a sleep (timers stopped)
 * the page polls as soon as it wakes if the poll is overdue, so a spot still kept is polled
 * again rather than lost to the rest of an interval the sleep did not count.
 * @param {any} answer the last answer
 * @param {number} ms
 * @param {{clock: import("./timers.js").Clock, signal: AbortSignal, emit: (update: any) => void, estimates: boolean}} context
 */
async function waitMovingEstimates(answer, ms, { clock, signal, emit, estimates }) {
  const receivedAt = clock.now();
  const pollAt = receivedAt + ms;
  let shown = answer.position;
  for (;;) {
    const left = pollAt - clock.now();
    if (left <= 0) return;
    const tick = estimates ? estimateTick(answer, clock.now()) : null;
    // Woken (shown again, back online), the clock says whether the poll is due (wake.js).
    await sleepOrWake(tick === null ? left : Math.min(left, tick), { clock, signal });
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
function notify(onUpdate, update) {
  if (!onUpdate) return;
  try {
    onUpdate(update);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}
