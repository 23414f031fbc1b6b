/**
 * @typedef {object} Clock
 * @property {() => number} now epoch milliseconds
 * @property {(callback: () => void, ms: number) => unknown} setTimeout
 * @property {(id: unknown) => void} clearTimeout
 */

/**
 * The real clock. Wrapped in arrows so the globals are called with their own `this` (browsers
 * throw "Illegal invocation" otherwise) and looked up at call time (tests replace them).
 * @type {Clock}
 */
export const realClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (id) => globalThis.clearTimeout(/** @type {any} */ (id)),
};

/**
 * Resolves after `ms` on `clock`; rejects with the signal's reason if it aborts first. The timer
 * and the abort listener are both removed whichever way the wait ends.
 * @param {number} ms
 * @param {{clock: Clock, signal?: AbortSignal}} options
 * @returns {Promise<void>}
 */
export function sleep(ms, { clock, signal }) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(id);
      reject(signal?.reason);
    };
    const id = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
