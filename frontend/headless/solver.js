import { checkPuzzles } from "../pow.js";
import { mainThreadKit } from "../sha256.js";
import { sleep } from "../timers.js";

/**
 * The proof of work where there are no Web Workers: on the calling thread, in slices that yield
 * to the event loop (the app's UI and network keep going), with
 *
 * - the app's SHA-256 when it gives one (`sha256(bytes)` answering the 32-byte digest as a
 *   Uint8Array or ArrayBuffer, at once or with a promise: Node's `crypto`, `crypto.subtle`, a
 *   React Native native module), or
 * - the agent's own search (WebAssembly where the runtime has it, else plain JS), which hashes
 *   only the counter's block per candidate and is the faster choice wherever a digest call
 *   crosses a bridge.
 *
 * It returns the agent's Solver (pow.js), so `solveFitted` times the floor's puzzles and fits
 * the rest to this device exactly as in a browser.
 */

// Candidates per slice before yielding: a few ms with the bundled search.
export const SLICE = 2000;

/**
 * @typedef {(bytes: Uint8Array) => Uint8Array | ArrayBuffer | Promise<Uint8Array | ArrayBuffer>} Sha256Function
 */

/**
 * @param {{signal?: AbortSignal, clock: import("../timers.js").Clock, sha256?: Sha256Function | null, slice?: number}} options
 * @returns {import("../pow.js").Solver}
 */
export function openHeadlessSolver({ signal, clock, sha256 = null, slice = SLICE }) {
  const search = sha256 ? digestSearch(sha256) : bundledSearch();

  /** @param {import("../pow.js").Puzzle[]} puzzles */
  const solve = async (puzzles) => {
    checkPuzzles(puzzles);
    signal?.throwIfAborted();
    const started = clock.now();
    const solutions = [];
    for (const puzzle of puzzles) {
      for (let from = 0; ; from += slice) {
        signal?.throwIfAborted();
        const found = await search(puzzle.prefix, puzzle.difficulty, from, slice);
        if (found >= 0) {
          solutions.push(String(found));
          break;
        }
        await sleep(0, { clock, signal });
      }
    }
    return { solutions, hashes: solutions.reduce((sum, s) => sum + Number(s) + 1, 0), elapsedMs: clock.now() - started };
  };
  return { solve, close() {} };
}

/** @returns {(prefix: string, difficulty: number, from: number, count: number) => number} */
function bundledSearch() {
  const kit = mainThreadKit();
  return (prefix, difficulty, from, count) => kit.findSolution(prefix, difficulty, from, count);
}

/**
 * @param {Sha256Function} sha256
 * @returns {(prefix: string, difficulty: number, from: number, count: number) => Promise<number>}
 */
function digestSearch(sha256) {
  const encoder = new TextEncoder();
  return async (prefix, difficulty, from, count) => {
    const head = encoder.encode(`${prefix}:`);
    for (let n = from; n < from + count; n++) {
      const digits = String(n);
      const bytes = new Uint8Array(head.length + digits.length);
      bytes.set(head);
      for (let i = 0; i < digits.length; i++) bytes[head.length + i] = digits.charCodeAt(i);
      let digest = sha256(bytes);
      // A sync digest is not awaited: a microtask per hash would cost more than the hash.
      if (digest && typeof (/** @type {any} */ (digest).then) === "function") digest = await digest;
      if (hasZeroBits(toBytes(digest), difficulty)) return n;
    }
    return -1;
  };
}

/** @param {unknown} digest */
function toBytes(digest) {
  if (digest instanceof Uint8Array) return digest;
  if (digest instanceof ArrayBuffer) return new Uint8Array(digest);
  if (ArrayBuffer.isView(digest)) return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
  throw new TypeError("`sha256` must answer the digest as a Uint8Array or an ArrayBuffer.");
}

/**
 * True when the first `bits` bits of `bytes` are zero.
 * @param {Uint8Array} bytes
 * @param {number} bits
 */
export function hasZeroBits(bytes, bits) {
  if (bytes.length < 32) throw new TypeError("`sha256` must answer 32 bytes.");
  let i = 0;
  for (; bits >= 8; bits -= 8) if (bytes[i++] !== 0) return false;
  return bits === 0 || bytes[i] >> (8 - bits) === 0;
}
