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
 * @typedef {{signal?: AbortSignal, clock?: import("./timers.js").Clock, workers?: number, search?: "wasm" | "js"}} SolveOptions
 *   `search`: the workers' SHA-256 search, WebAssembly where the page allows it (the default) or JS
 * @typedef {{solve: (puzzles: Puzzle[]) => Promise<Solved>, close: () => void}} Solver
 */

/**
 * Starts a solver: Web Workers (one per core, `navigator.hardwareConcurrency`, made from a Blob
 * URL) that stay up for several sets of puzzles, so they start once, while the challenge is
 * still on its way, and the timing of a set counts the search, not their start. Where workers
 * or Blob URLs are missing or refused (CSP, old browser), or one fails, the puzzles left are
 * solved on the main thread in small slices. Each searches with WebAssembly where the page allows
 * it (CSP 'wasm-unsafe-eval'), else in plain JS. `close()` ends the workers.
 *
 * `solve(puzzles)` finds, for each puzzle, a decimal `s` such that SHA-256(prefix + ":" + s)
 * starts with `difficulty` zero bits: the solutions in order, the hashes computed (each search
 * starts at 0) and the time it took.
 *
 * @param {SolveOptions} [options]
 * @returns {Solver}
 */
export function openSolver(options = {}) {
  const { signal, clock = realClock } = options;
  const count = Math.min(options.workers ?? cores(), MAX_WORKERS);
  /** @type {Worker[]} */
  const workers = [];
  let url = "";
  /** @type {((data: any) => void) | null} */
  let onSolution = null;
  /** @type {((error: unknown) => void) | null} */
  let onFailure = null;
  /** @type {Promise<boolean>} true once every worker is ready, false if workers are out */
  const ready = new Promise((resolve) => {
    if (typeof Worker !== "function" || typeof Blob !== "function" || !URL.createObjectURL) {
      resolve(false);
      return;
    }
    let started = 0;
    const watchdog = clock.setTimeout(() => resolve(false), WORKER_START_TIMEOUT_MS);
    try {
      url = URL.createObjectURL(new Blob([workerSource(options.search)], { type: "text/javascript" }));
      for (let i = 0; i < count; i++) {
        const worker = new Worker(url);
        workers.push(worker);
        worker.onmessage = (event) => {
          if (!event.data.ready) onSolution?.({ worker, ...event.data });
          else if (++started === count) {
            clock.clearTimeout(watchdog);
            resolve(true);
          }
        };
        worker.onerror = (event) => {
          event.preventDefault?.();
          resolve(false);
          onFailure?.(event);
        };
      }
    } catch {
      resolve(false);
    }
  });
  const close = () => {
    for (const worker of workers) worker.terminate();
    workers.length = 0;
    if (url) URL.revokeObjectURL(url);
  };

  /** @param {Puzzle[]} puzzles @param {(string | null)[]} solutions */
  const inWorkers = (puzzles, solutions) =>
    new Promise((resolve, reject) => {
      let next = 0;
      let left = puzzles.length;
      /** @param {Worker} worker */
      const feed = (worker) => {
        if (next < puzzles.length) worker.postMessage({ ...puzzles[next], index: next++ });
      };
      onFailure = reject;
      onSolution = ({ worker, index, solution }) => {
        solutions[index] = String(solution);
        if (--left === 0) resolve(undefined);
        else feed(worker);
      };
      workers.forEach(feed);
    });

  /** @param {Puzzle[]} puzzles @returns {Promise<Solved>} */
  const solve = async (puzzles) => {
    checkPuzzles(puzzles);
    signal?.throwIfAborted();
    const threads = await ready;
    const started = clock.now();
    /** @type {(string | null)[]} */
    const solutions = puzzles.map(() => null);
    if (threads && workers.length) {
      const aborted = new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason), { once: true }));
      try {
        await Promise.race([inWorkers(puzzles, solutions), aborted]);
      } catch {
        signal?.throwIfAborted();
        close(); // A worker failed: the rest is done here.
      }
    }
    for (let i = 0; i < puzzles.length; i++) {
      solutions[i] ??= await solveOnMainThread(puzzles[i], signal, clock);
    }
    const done = /** @type {string[]} */ (solutions);
    return { solutions: done, hashes: done.reduce((sum, s) => sum + Number(s) + 1, 0), elapsedMs: clock.now() - started };
  };
  return { solve, close };
}

/**
 * Throws BadChallenge unless `puzzles` is a non-empty list of prefixes with 0–64 bits each.
 * @param {Puzzle[]} puzzles
 */
export function checkPuzzles(puzzles) {
  const usable = puzzles?.length > 0 && puzzles.every((p) => typeof p?.prefix === "string" && p.difficulty >= 0 && p.difficulty <= 64 && p.difficulty % 1 === 0);
  if (!usable) throw new AnteroomError("The server sent an unusable challenge.", { code: "BadChallenge" });
}

/**
 * Solves one set of puzzles with a solver of its own (see openSolver).
 * @param {Puzzle[]} puzzles
 * @param {SolveOptions} [options]
 * @returns {Promise<Solved>}
 */
export async function solvePuzzles(puzzles, options = {}) {
  const solver = openSolver({ ...options, workers: Math.min(options.workers ?? cores(), puzzles?.length || 1) });
  try {
    return await solver.solve(puzzles);
  } finally {
    solver.close();
  }
}

/**
 * The legacy single puzzle: SHA-256(challenge + ":" + solution) with `difficulty` zero bits.
 * @param {string} challenge
 * @param {number} difficulty leading zero bits, 0–64
 * @param {SolveOptions} [options]
 * @returns {Promise<string>} the solution, a decimal string
 */
export async function solveChallenge(challenge, difficulty, options = {}) {
  const solved = await solvePuzzles([{ prefix: challenge, difficulty }], options);
  return solved.solutions[0];
}

/**
 * Solves an arrival's challenge fitted to this device, with no measuring call before it: the
 * first `minPuzzles` (the floor of the work) are solved and timed, which measures the device;
 * then as many more, in order, as keep the whole solve's p95 within `fitMs` (the server's
 * tail factor for this many puzzles). The server accepts any count from `minPuzzles` to all.
 *
 * @param {Solver} solver
 * @param {{puzzles: Puzzle[], minPuzzles?: number, fitMs?: number}} challenge
 * @returns {Promise<string[]>} the solutions, of the first puzzles in order
 */
export async function solveFitted(solver, challenge) {
  // No puzzles: the solver refuses the empty set as an unusable challenge (BadChallenge).
  const puzzles = Array.isArray(challenge?.puzzles) ? challenge.puzzles : [];
  const all = puzzles.length;
  const least = Math.min(all, Math.max(1, Math.floor(Number(challenge.minPuzzles) || all)));
  const first = await solver.solve(puzzles.slice(0, least));
  if (least >= all) return first.solutions;
  const rate = (first.hashes * 1000) / Math.max(1, first.elapsedMs);
  const tail = 1 + 2 / Math.sqrt(all);
  const fits = Math.floor((rate * (Number(challenge.fitMs) || 600)) / 1000 / tail / 2 ** puzzles[0].difficulty);
  const count = Math.min(all, Math.max(least, fits));
  if (count === least) return first.solutions;
  const more = await solver.solve(puzzles.slice(least, count));
  return [...first.solutions, ...more.solutions];
}

/** Cores the device reports (`navigator.hardwareConcurrency`), two if it says nothing. */
const cores = () => globalThis.navigator?.hardwareConcurrency || 2;

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
