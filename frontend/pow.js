import { AnteroomError } from "./errors.js";
import { mainThreadKit } from "./sha256.js";
import { workerSource } from "./pow-worker.js";
import { realClock, sleep } from "./timers.js";

// A worker that has not said "ready" by then is taken as refused (some browsers fail silently).
export const WORKER_START_TIMEOUT_MS = 5000;

// Hashes per main-thread slice before yielding, so the page stays responsive (~a few ms each).
export const MAIN_THREAD_SLICE = 2000;

/**
 * Finds `solution` such that SHA-256(challenge + ":" + solution) starts with `difficulty` zero
 * bits. Runs in a Web Worker made from a Blob URL; where workers or Blob URLs are missing or
 * refused (CSP, old browser), it runs on the main thread in small slices.
 *
 * @param {string} challenge
 * @param {number} difficulty leading zero bits, 0–64
 * @param {{signal?: AbortSignal, clock?: import("./timers.js").Clock, useWorker?: boolean}} [options]
 * @returns {Promise<string>} the solution, a decimal string
 */
export async function solveChallenge(challenge, difficulty, options = {}) {
  options = { ...options };
  options.clock ??= realClock;
  options.useWorker ??= true;
  if (typeof challenge !== "string" || !Number.isInteger(difficulty) || difficulty < 0 || difficulty > 64) {
    throw new AnteroomError("The server sent an unusable challenge.", { code: "BadChallenge" });
  }
  options.signal?.throwIfAborted();
  if (options.useWorker) {
    try {
      return await solveInWorker(challenge, difficulty, options.signal, options.clock);
    } catch (error) {
      options.signal?.throwIfAborted();
      // Any other failure (no Worker, CSP refused the blob:, worker crashed): do it here.
    }
  }
  return solveOnMainThread(challenge, difficulty, options.signal, options.clock);
}

/**
 * @param {string} challenge
 * @param {number} difficulty
 * @param {AbortSignal | undefined} signal
 * @param {import("./timers.js").Clock} clock
 * @returns {Promise<string>}
 */
function solveInWorker(challenge, difficulty, signal, clock) {
  return new Promise((resolve, reject) => {
    if (typeof Worker !== "function" || typeof Blob !== "function" || !URL.createObjectURL) {
      reject(new Error("no Worker"));
      return;
    }
    const url = URL.createObjectURL(new Blob([workerSource()], { type: "text/javascript" }));
    /** @type {Worker} */
    let worker;
    const watchdog = clock.setTimeout(() => {
      finish();
      reject(new Error("worker did not start"));
    }, WORKER_START_TIMEOUT_MS);
    const finish = () => {
      clock.clearTimeout(watchdog);
      signal?.removeEventListener("abort", onAbort);
      worker?.terminate();
      URL.revokeObjectURL(url);
    };
    const onAbort = () => {
      finish();
      reject(signal?.reason);
    };
    try {
      worker = new Worker(url);
    } catch (error) {
      finish();
      reject(error);
      return;
    }
    worker.onmessage = (event) => {
      if (event.data.ready) {
        clock.clearTimeout(watchdog);
        return;
      }
      finish();
      resolve(String(event.data.solution));
    };
    worker.onerror = (event) => {
      event.preventDefault?.();
      finish();
      reject(new Error("worker failed"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.postMessage({ challenge, difficulty });
  });
}

/**
 * @param {string} challenge
 * @param {number} difficulty
 * @param {AbortSignal | undefined} signal
 * @param {import("./timers.js").Clock} clock
 * @returns {Promise<string>}
 */
async function solveOnMainThread(challenge, difficulty, signal, clock) {
  const kit = mainThreadKit();
  for (let from = 0; ; from += MAIN_THREAD_SLICE) {
    signal?.throwIfAborted();
    const found = kit.findSolution(challenge, difficulty, from, MAIN_THREAD_SLICE);
    if (found >= 0) return String(found);
    await sleep(0, { clock, signal });
  }
}
