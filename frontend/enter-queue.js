import { createApi } from "./api.js";
import { AnteroomError } from "./errors.js";
import { FINAL_STATUSES, lead, notify } from "./journey.js";
import { SLUG, checkClock, isAbortSignal, normalizeBaseUrl } from "./options.js";
import { openSolver } from "./pow.js";
import { collectSignals } from "./signals.js";
import { createRoomStore } from "./storage.js";
import { joinTabs } from "./tabs.js";
import { realClock } from "./timers.js";
import { sleepOrWake } from "./wake.js";

export { retryDelay } from "./journey.js";


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
  checkClock(options.clock);
  if (options.invite != null && typeof options.invite !== "string") throw new TypeError("`invite` must be a string.");
  options.random ??= Math.random;
  options.estimates ??= true;
  if (typeof options.estimates !== "boolean") throw new TypeError("`estimates` must be true or false.");
  if (typeof options.random !== "function") throw new TypeError("`random` must be a function.");
  return options;
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
      .then(() => lead({ slug, options, store, api, emit, signal: stop.signal, openSolver, collectSignals, wait: sleepOrWake }))
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
