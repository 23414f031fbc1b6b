import { AnteroomError } from "./errors.js";
import { mainThreadKit } from "./sha256.js";
import { workerSource } from "./pow-worker.js";
import { realClock, sleep } from "./timers.js";

// A worker that has not said "ready" by then is taken as refused (some browsers fail silently).
export const WORKER_START_TIMEOUT_MS = 5000;

// Hashes per main-thread slice before yielding, so the page stays responsive (~a few ms each).
export const MAIN_THREAD_SLICE = 2000;

// Workers at most, whatever the device claims: each costs a thread and a copy of the solver.
export const MAX_WORKERS = 8;

/**
 * @typedef {{prefix: string, difficulty: number}} Puzzle
 * @typedef {{solutions: string[], hashes: number, elapsedMs: number}} Solved
 * @typedef {{signal?: AbortSignal, clock?: import("./timers.js").Clock, useWorker?: boolean,
 *   workers?: number}} SolveOptions
 */

/**
 * Solves every puzzle: finds, for each, a decimal `s` such that SHA-256(prefix + ":" + s) starts
 * with `difficulty` zero bits. The puzzles are shared out among Web Workers (one per core,
 * `navigator.hardwareConcurrency`, made from a Blob URL); where workers or Blob URLs are missing
 * or refused (CSP, old browser), they are solved on the main thread in small slices.
 *
 * @param {Puzzle[]} puzzles
 * @param {SolveOptions} [options]
 * @returns {Promise<Solved>} the solutions in order, the hashes computed and the time it took
 */
export async function solvePuzzles(puzzles, options = {}) {
  options = { ...options };
  options.clock ??= realClock;
  options.useWorker ??= true;
  // One worker per core the device reports (hardwareConcurrency), two if it says nothing.
  options.workers ??= globalThis.navigator?.hardwareConcurrency || 2;
  const usable = puzzles?.length > 0 && puzzles.every(
    (p) => typeof p?.prefix === "string" && Number.isInteger(p.difficulty) && p.difficulty >= 0 && p.difficulty <= 64,
  );
  if (!usable) throw unusable();
  options.signal?.throwIfAborted();
  const started = options.clock.now();
  /** @type {(string | null)[]} */
  const solutions = puzzles.map(() => null);
  if (options.useWorker) {
    try {
      const workers = Math.max(1, Math.min(options.workers, puzzles.length, MAX_WORKERS));
      await solveInWorkers(puzzles, solutions, workers, options.signal, options.clock);
    } catch (error) {
      options.signal?.throwIfAborted();
      // Any other failure (no Worker, CSP refused the blob:, worker crashed): do it here.
    }
  }
  for (let i = 0; i < puzzles.length; i++) {
    if (solutions[i] === null) solutions[i] = await solveOnMainThread(puzzles[i], options.signal, options.clock);
  }
  const done = /** @type {string[]} */ (solutions);
  return {
    solutions: done,
    hashes: done.reduce((sum, s) => sum + Number(s) + 1, 0),
    elapsedMs: options.clock.now() - started,
  };
}

/**
 * The legacy single puzzle: SHA-256(challenge + ":" + solution) with `difficulty` zero bits.
 *
 * @param {string} challenge
 * @param {number} difficulty leading zero bits, 0–64
 * @param {SolveOptions} [options]
 * @returns {Promise<string>} the solution, a decimal string
 */
export async function solveChallenge(challenge, difficulty, options = {}) {
  if (typeof challenge !== "string") throw unusable();
  const solved = await solvePuzzles([{ prefix: challenge, difficulty }], options);
  return solved.solutions[0];
}

const unusable = () => new AnteroomError("The server sent an unusable challenge.", { code: "BadChallenge" });

/**
 * Fills `solutions` using `count` workers fed one puzzle at a time; rejects on any failure
 * (the caller solves what is left on the main thread).
 *
 * @param {Puzzle[]} puzzles
 * @param {(string | null)[]} solutions
 * @param {number} count
 * @param {AbortSignal | undefined} signal
 * @param {import("./timers.js").Clock} clock
 * @returns {Promise<void>}
 */
function solveInWorkers(puzzles, solutions, count, signal, clock) {
  return new Promise((resolve, reject) => {
    if (typeof Worker !== "function" || typeof Blob !== "function" || !URL.createObjectURL) {
      reject(Error("no Worker"));
      return;
    }
    const url = URL.createObjectURL(new Blob([workerSource()], { type: "text/javascript" }));
    /** @type {Worker[]} */
    const workers = [];
    let next = 0;
    let left = puzzles.length;
    let ready = 0;
    const watchdog = clock.setTimeout(() => fail(new Error("worker did not start")), WORKER_START_TIMEOUT_MS);
    const finish = () => {
      clock.clearTimeout(watchdog);
      signal?.removeEventListener("abort", onAbort);
      for (const worker of workers) worker.terminate();
      URL.revokeObjectURL(url);
    };
    /** @param {unknown} why */
    const fail = (why) => {
      finish();
      reject(why);
    };
    const onAbort = () => fail(signal?.reason);
    /** @param {Worker} worker */
    const feed = (worker) => {
      if (next >= puzzles.length) return;
      const index = next++;
      worker.postMessage({ prefix: puzzles[index].prefix, difficulty: puzzles[index].difficulty, index });
    };
    try {
      for (let i = 0; i < count; i++) {
        const worker = new Worker(url);
        workers.push(worker);
        worker.onmessage = (event) => {
          if (event.data.ready) {
            ready += 1;
            if (ready === count) clock.clearTimeout(watchdog);
            return;
          }
          solutions[event.data.index] = String(event.data.solution);
          left -= 1;
          if (left === 0) {
            finish();
            resolve();
          } else {
            feed(worker);
          }
        };
        worker.onerror = (event) => {
          event.preventDefault?.();
          fail(new Error("worker failed"));
        };
      }
    } catch (error) {
      fail(error);
      return;
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    for (const worker of workers) feed(worker);
  });
}

/**
 * @param {Puzzle} puzzle
 * @param {AbortSignal | undefined} signal
 * @param {import("./timers.js").Clock} clock
 * @returns {Promise<string>}
 */
async function solveOnMainThread(puzzle, signal, clock) {
  const kit = mainThreadKit();
  for (let from = 0; ; from += MAIN_THREAD_SLICE) {
    signal?.throwIfAborted();
    const found = kit.findSolution(puzzle.prefix, puzzle.difficulty, from, MAIN_THREAD_SLICE);
    if (found >= 0) return String(found);
    await sleep(0, { clock, signal });
  }
}
