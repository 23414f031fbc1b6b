import { storageKey } from "../storage.js";

/**
 * Where the headless client keeps what must outlive the app's process, per room, under
 * `anteroom:<baseUrl>:<room>` (the browser agent's key): the session, the ticket (a resumed
 * client polls its kept spot rather than entering again) and the admission with its expiry.
 *
 * A storage is anything with getItem / setItem / removeItem of strings, each answering at once
 * or with a promise: `memoryStorage()`, React Native's AsyncStorage (through
 * `asyncStorage(AsyncStorage)`), a file, a database. A storage that fails is not fatal: the
 * client keeps going with what it holds in memory, as the browser agent does without
 * localStorage.
 */

/**
 * @typedef {object} KeyValueStorage
 * @property {(key: string) => string | null | undefined | Promise<string | null | undefined>} getItem
 * @property {(key: string, value: string) => unknown} setItem
 * @property {(key: string) => unknown} removeItem
 */

/**
 * @typedef {object} HeadlessRecord
 * @property {string | null} sessionToken
 * @property {number | null} sessionExpiresAt epoch ms, null when unknown
 * @property {string | null} queueToken the ticket's token, polled on resume
 * @property {Record<string, unknown> | null} admitted the admitted answer (its `token` is the admission)
 * @property {number | null} admissionExpiresAt epoch ms, null when unknown
 */

/** @returns {KeyValueStorage} a storage in this process's memory (the default) */
export function memoryStorage() {
  /** @type {Map<string, string>} */
  const items = new Map();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, String(value)),
    removeItem: (key) => void items.delete(key),
  };
}

/**
 * An AsyncStorage-shaped store (async getItem / setItem / removeItem, as React Native's
 * `@react-native-async-storage/async-storage`, Capacitor Preferences behind three arrows, or
 * `localforage`), checked once here so a wrong object fails at start, naming what it lacks.
 * @param {any} store
 * @returns {KeyValueStorage}
 */
export function asyncStorage(store) {
  checkStorage(store, "asyncStorage(store)");
  return {
    getItem: async (key) => store.getItem(key),
    setItem: async (key, value) => store.setItem(key, value),
    removeItem: async (key) => store.removeItem(key),
  };
}

/**
 * @param {any} store
 * @param {string} name how the caller named it, for the error
 */
export function checkStorage(store, name) {
  const methods = ["getItem", "setItem", "removeItem"];
  const missing = methods.filter((method) => typeof store?.[method] !== "function");
  if (missing.length) throw new TypeError(`\`${name}\` must have getItem, setItem and removeItem; it lacks ${missing.join(", ")}.`);
}

const EMPTY = { sessionToken: null, sessionExpiresAt: null, queueToken: null, admitted: null, admissionExpiresAt: null };

/**
 * The record of one room in `storage`, read once and then held in memory: writes go through to
 * the storage (awaited, so a write is kept before the next call is made), reads after the first
 * come from memory. A storage that throws or rejects is logged nowhere and skipped.
 * @param {KeyValueStorage} storage
 * @param {string} baseUrl
 * @param {string} room
 */
export function createHeadlessStore(storage, baseUrl, room) {
  const key = storageKey(baseUrl, room);
  /** @type {HeadlessRecord | null} */
  let held = null;

  /** @returns {Promise<HeadlessRecord>} */
  async function read() {
    if (held) return { ...held };
    let text = null;
    try {
      text = await storage.getItem(key);
    } catch {
      text = null;
    }
    held = parseRecord(text);
    return { ...held };
  }

  /** @param {Partial<HeadlessRecord>} changes @param {any} [answer] the final answer, if any */
  async function update(changes, answer) {
    const next = { ...(await read()), ...changes };
    if (answer?.status === "admitted" && typeof answer.token === "string") {
      const { queueToken, ...kept } = answer;
      next.admitted = kept;
      next.admissionExpiresAt = tokenExpiry(answer.token);
    }
    held = next;
    await write();
  }

  async function write() {
    try {
      await storage.setItem(key, JSON.stringify(held));
    } catch {
      // Quota, a storage refused mid-way: keep going on what is held in memory.
    }
  }

  async function clear() {
    held = { ...EMPTY };
    try {
      await storage.removeItem(key);
    } catch {
      // Nothing to clear where nothing can be stored.
    }
  }

  return { key, read, update, clear };
}

/**
 * @param {unknown} text
 * @returns {HeadlessRecord}
 */
function parseRecord(text) {
  let value = {};
  try {
    value = (typeof text === "string" && JSON.parse(text)) || {};
  } catch {
    value = {};
  }
  const string = (/** @type {unknown} */ v) => (typeof v === "string" ? v : null);
  const number = (/** @type {unknown} */ v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  const admitted = value.admitted && typeof value.admitted === "object" && typeof value.admitted.token === "string" ? value.admitted : null;
  return {
    sessionToken: string(value.sessionToken),
    sessionExpiresAt: number(value.sessionExpiresAt),
    queueToken: string(value.queueToken),
    admitted,
    admissionExpiresAt: admitted ? number(value.admissionExpiresAt) : null,
  };
}

/**
 * When an admission token (`ab1.<kid>.<payload>.<signature>`) says it expires, epoch ms, read
 * without checking its signature (the edge checks it; this only says when to stop offering it).
 * @param {string} token
 * @returns {number | null}
 */
export function tokenExpiry(token) {
  const payload = token.split(".")[2];
  if (!payload) return null;
  try {
    const exp = JSON.parse(base64UrlText(payload)).exp;
    return typeof exp === "number" && Number.isFinite(exp) ? exp * 1000 : null;
  } catch {
    return null;
  }
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * base64url to text, with no atob, Buffer or TextDecoder (not every runtime has them).
 * @param {string} input
 */
function base64UrlText(input) {
  const bytes = [];
  let bits = 0;
  let value = 0;
  for (const char of input.replace(/=+$/, "")) {
    const digit = ALPHABET.indexOf(char === "+" ? "-" : char === "/" ? "_" : char);
    if (digit < 0) throw new SyntaxError("not base64url");
    value = (value << 6) | digit;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((value >> bits) & 0xff);
    }
  }
  // The payload is JSON in ASCII (the server escapes the rest), so bytes are characters.
  return String.fromCharCode(...bytes);
}
