/**
 * SHA-256 in plain JavaScript, and the proof-of-work search built on it.
 *
 * `sha256Kit`, `wasmKit` and `fastestKit` must stay self-contained (no reference to anything
 * outside their bodies, no syntax a bundler would lower into a shared helper): pow-worker.js ships
 * their source text to a Web Worker.
 */
import { SHA256_WASM } from "./sha256-wasm.js";

/**
 * @typedef {object} Sha256Kit
 * @property {(bytes: Uint8Array) => Uint8Array} digest the 32-byte SHA-256 of `bytes`
 * @property {(challenge: string, difficulty: number, from: number, count: number) => number} findSolution
 *   the first n in [from, from + count) such that SHA-256(challenge + ":" + n) starts with
 *   `difficulty` zero bits, or -1
 */

/** @returns {Sha256Kit} */
export function sha256Kit() {
  const K = new Int32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ]);
  const INITIAL = new Int32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const W = new Int32Array(64);

  // Mixes the 64-byte block of `bytes` at `offset` into `state` (8 words).
  function compress(state, bytes, offset) {
    for (let i = 0; i < 16; i++) {
      const j = offset + i * 4;
      W[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const x = W[i - 15];
      const y = W[i - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let a = state[0], b = state[1], c = state[2], d = state[3];
    let e = state[4], f = state[5], g = state[6], h = state[7];
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0;
      d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    state[0] = (state[0] + a) | 0; state[1] = (state[1] + b) | 0;
    state[2] = (state[2] + c) | 0; state[3] = (state[3] + d) | 0;
    state[4] = (state[4] + e) | 0; state[5] = (state[5] + f) | 0;
    state[6] = (state[6] + g) | 0; state[7] = (state[7] + h) | 0;
  }

  // Writes the padding (0x80, zeros, bit length) for a message of `totalLength` bytes whose last
  // `used` bytes already sit at the start of `block`; returns how many bytes of `block` to hash.
  function pad(block, used, totalLength) {
    block[used] = 0x80;
    const end = used + 9 <= 64 ? 64 : 128;
    block.fill(0, used + 1, end - 8);
    const bits = totalLength * 8;
    const high = Math.floor(bits / 0x100000000);
    const low = bits >>> 0;
    block[end - 8] = high >>> 24; block[end - 7] = high >>> 16;
    block[end - 6] = high >>> 8; block[end - 5] = high;
    block[end - 4] = low >>> 24; block[end - 3] = low >>> 16;
    block[end - 2] = low >>> 8; block[end - 1] = low;
    return end;
  }

  function digest(bytes) {
    const state = INITIAL.slice();
    const full = bytes.length - (bytes.length % 64);
    for (let offset = 0; offset < full; offset += 64) compress(state, bytes, offset);
    const block = new Uint8Array(128);
    block.set(bytes.subarray(full));
    const end = pad(block, bytes.length - full, bytes.length);
    for (let offset = 0; offset < end; offset += 64) compress(state, block, offset);
    const out = new Uint8Array(32);
    for (let i = 0; i < 8; i++) {
      out[i * 4] = state[i] >>> 24; out[i * 4 + 1] = state[i] >>> 16;
      out[i * 4 + 2] = state[i] >>> 8; out[i * 4 + 3] = state[i];
    }
    return out;
  }

  function hasZeroBits(state, bits) {
    for (let i = 0; bits > 0; i++, bits -= 32) {
      if (i === 8) return true;
      const word = state[i] >>> 0;
      if (bits >= 32 ? word !== 0 : word >>> (32 - bits) !== 0) return false;
    }
    return true;
  }

  // The blocks of challenge + ":" that no solution changes are hashed once ("midstate"); each
  // candidate then costs one or two compressions.
  let cachedChallenge = null;
  let prefixLength = 0;
  let midstate = null;
  let tail = null;
  const block = new Uint8Array(128);
  const state = new Int32Array(8);

  function findSolution(challenge, difficulty, from, count) {
    if (challenge !== cachedChallenge) {
      const prefix = new TextEncoder().encode(challenge + ":");
      const full = prefix.length - (prefix.length % 64);
      midstate = INITIAL.slice();
      for (let offset = 0; offset < full; offset += 64) compress(midstate, prefix, offset);
      tail = prefix.slice(full);
      prefixLength = prefix.length;
      cachedChallenge = challenge;
    }
    for (let n = from; n < from + count; n++) {
      const digits = String(n);
      block.set(tail);
      let used = tail.length;
      for (let i = 0; i < digits.length; i++) block[used++] = digits.charCodeAt(i);
      const end = pad(block, used, prefixLength + digits.length);
      state.set(midstate);
      compress(state, block, 0);
      if (end === 128) compress(state, block, 64);
      if (hasZeroBits(state, difficulty)) return n;
    }
    return -1;
  }

  return { digest, findSolution };
}

/**
 * The search of `sha256Kit` in WebAssembly (sha256.wat): the same answers, faster
 * (bench/pow.py's hash_rates). Throws where WebAssembly is missing or refused (a CSP without
 * 'wasm-unsafe-eval'). Prefixes too long for its memory, and counters past 2^31, go to `js`.
 * @param {string} wasmBase64 the module (sha256-wasm.js)
 * @param {Sha256Kit} js
 * @returns {Sha256Kit & {kind: string}}
 */
export function wasmKit(wasmBase64, js) {
  const binary = atob(wasmBase64);
  const code = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) code[i] = binary.charCodeAt(i);
  // Synchronous: the module is small (a few KB), which browsers allow even on the main thread.
  const exports = new WebAssembly.Instance(new WebAssembly.Module(code), {}).exports;
  const memory = new Uint8Array(exports.memory.buffer);
  const PREFIX_AT = 1024;
  let cachedChallenge = null;
  let tail = 0;
  let total = 0;
  function findSolution(challenge, difficulty, from, count) {
    if (challenge !== cachedChallenge) {
      const prefix = new TextEncoder().encode(challenge + ":");
      cachedChallenge = null;
      if (PREFIX_AT + prefix.length > memory.length) return js.findSolution(challenge, difficulty, from, count);
      memory.set(prefix, PREFIX_AT);
      tail = exports.init(prefix.length);
      total = prefix.length;
      cachedChallenge = challenge;
    }
    if (from + count > 0x7fffffff) return js.findSolution(challenge, difficulty, from, count);
    return exports.search(tail, total, difficulty, from, count);
  }
  return { digest: js.digest, findSolution, kind: "wasm" };
}

/**
 * The fastest search this context allows: WebAssembly when given and allowed, else the JS one.
 * @param {string} wasmBase64 the module, or "" for the JS search
 * @param {() => Sha256Kit} makeJs sha256Kit
 * @param {typeof wasmKit} makeWasm wasmKit
 * @returns {Sha256Kit & {kind: string}}
 */
export function fastestKit(wasmBase64, makeJs, makeWasm) {
  const js = makeJs();
  if (wasmBase64) {
    try {
      return makeWasm(wasmBase64, js);
    } catch {
      // No WebAssembly here, or a CSP refusing it: the JS search answers the same.
    }
  }
  return { ...js, kind: "js" };
}

/** @type {Sha256Kit | undefined} */
let sharedKit;
/** @type {Sha256Kit | undefined} */
let sharedSearch;

/**
 * SHA-256 of a string (as UTF-8) or of bytes.
 * @param {string | Uint8Array} input
 * @returns {Uint8Array}
 */
export function sha256(input) {
  sharedKit ??= sha256Kit();
  return sharedKit.digest(typeof input === "string" ? new TextEncoder().encode(input) : input);
}

/** @returns {Sha256Kit & {kind?: string}} the search the main thread shares (the fastest) */
export function mainThreadKit() {
  sharedSearch ??= fastestKit(SHA256_WASM, sha256Kit, wasmKit);
  return sharedSearch;
}
