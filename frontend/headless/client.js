import { createApi } from "../api.js";
import { AnteroomError } from "../errors.js";
import { lead, notify } from "../journey.js";
import { SLUG, checkClock, isAbortSignal, normalizeBaseUrl } from "../options.js";
import { realClock } from "../timers.js";
import { openHeadlessSolver } from "./solver.js";
import { checkStorage, createHeadlessStore, memoryStorage } from "./storage.js";

// The calls only an app makes (the browser agent leaves a page, it does not leave the line).
const LEAVE = "/api/v1/queue/leave";
const REFRESH = "/api/v1/admission/refresh";
// An admission this close to its expiry is not offered any more: the edge would refuse it on the way.
const ADMISSION_MARGIN_MS = 5000;

/**
 * The headless client: the browser agent's journey (journey.js: arrive, join, poll at the
 * server's pace, back off, enter again after a 410) with no window, document, localStorage,
 * Worker, BroadcastChannel or Web Lock. See index.d.ts for the contract.
 *
 * @param {import("./index.js").ClientOptions} input
 * @returns {import("./index.js").AnteroomClient}
 */
export function createClient(input) {
  const options = normalizeClientOptions(input);
  const { clock, storage } = options;
  const api = createApi(options);
  /** @type {Set<(update: any, room: string) => void>} */
  const listeners = new Set();
  /** @type {Map<string, ReturnType<typeof createHeadlessStore>>} */
  const stores = new Map();
  /** @type {Map<string, {promise: Promise<any>, stop: AbortController, callers: number}>} */
  const journeys = new Map();

  /** @param {string} room */
  const storeOf = (room) => {
    checkRoom(room);
    let store = stores.get(room);
    if (!store) stores.set(room, (store = createHeadlessStore(storage, options.baseUrl, room)));
    return store;
  };

  /** @param {string} room @param {any} update */
  const broadcast = (room, update) => {
    for (const listener of listeners) notify((u) => listener(u, room), update);
  };

  /**
   * One journey per room, shared by every caller (two API calls refused at once queue once);
   * it stops when the last caller waiting on it aborts.
   * @param {string} room
   * @param {string | null | undefined} invite
   */
  const journey = (room, invite) => {
    const running = journeys.get(room);
    if (running && !running.stop.signal.aborted) return running;
    const stop = new AbortController();
    const store = storeOf(room);
    const emit = (/** @type {any} */ update) => broadcast(room, update);
    const promise = lead({
      slug: room,
      options: { ...options, invite },
      store,
      api,
      emit,
      signal: stop.signal,
      openSolver: ({ signal }) => openHeadlessSolver({ signal, clock, sha256: options.sha256 }),
      // Only what the app says of the device (no navigator to read here); absent facts count against nothing.
      collectSignals: () => ({ ...options.signals }),
    }).finally(() => journeys.delete(room));
    const entry = { promise, stop, callers: 0 };
    journeys.set(room, entry);
    return entry;
  };

  /**
   * @param {string} room
   * @returns {Promise<any | null>} the admitted answer kept for `room`, while it is good
   */
  async function admission(room) {
    const record = await storeOf(room).read();
    if (!record.admitted) return null;
    const expires = record.admissionExpiresAt;
    if (expires !== null && expires - ADMISSION_MARGIN_MS <= clock.now()) {
      await storeOf(room).update({ admitted: null, admissionExpiresAt: null });
      return null;
    }
    return { ...record.admitted, expiresAt: expires };
  }

  return {
    /**
     * @param {string} room
     * @param {{signal?: AbortSignal, invite?: string | null, onUpdate?: (update: any) => void}} [call]
     */
    async enter(room, call = {}) {
      const { signal, invite, onUpdate } = checkCall(call);
      signal?.throwIfAborted();
      if (invite != null && typeof invite !== "string") throw new TypeError("`invite` must be a string.");
      const kept = await admission(room);
      signal?.throwIfAborted();
      if (kept) {
        notify(onUpdate, kept);
        return kept;
      }
      const entry = journey(room, invite);
      entry.callers += 1;
      /** @type {(update: any, from: string) => void} */
      const listener = (update, from) => from === room && onUpdate?.(update);
      listeners.add(listener);
      /** @type {() => void} */
      let onAbort = () => {};
      const aborted = new Promise((_, reject) => {
        onAbort = () => reject(signal?.reason);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
      try {
        const answer = await Promise.race([entry.promise, aborted]);
        return answer.status === "admitted" ? (await admission(room)) ?? answer : answer;
      } finally {
        listeners.delete(listener);
        signal?.removeEventListener("abort", onAbort);
        entry.callers -= 1;
        if (entry.callers === 0 && signal?.aborted) entry.stop.abort(signal.reason);
      }
    },

    admission,

    /** @param {string} room @param {string} [token] only if it is still this one */
    async forgetAdmission(room, token) {
      const record = await storeOf(room).read();
      if (record.admitted && (token === undefined || record.admitted.token === token)) {
        await storeOf(room).update({ admitted: null, admissionExpiresAt: null });
      }
    },

    /** @param {string} room @param {string} token a renewed admission the edge handed back */
    async keepAdmission(room, token) {
      if (typeof token !== "string" || !token) return;
      const record = await storeOf(room).read();
      const admitted = { ...(record.admitted ?? { status: "admitted", room }), token };
      await storeOf(room).update({}, admitted);
    },

    /** @param {string} room @param {{signal?: AbortSignal}} [call] */
    async leave(room, call = {}) {
      const { signal } = checkCall(call);
      journeys.get(room)?.stop.abort(new AnteroomError("Left the line.", { code: "Left" }));
      const store = storeOf(room);
      const record = await store.read();
      if (record.queueToken) {
        try {
          await api.post(LEAVE, { ticket: record.queueToken }, signal);
        } catch (error) {
          // The spot is gone already, or its ticket is refused: either way it is not ours any more.
          if (!(error instanceof AnteroomError) || !(error.status === 410 || error.status === 401)) throw error;
        }
      }
      await store.update({ queueToken: null, admitted: null, admissionExpiresAt: null });
    },

    /** @param {string} room @param {{signal?: AbortSignal}} [call] */
    async refresh(room, call = {}) {
      const { signal } = checkCall(call);
      const kept = await admission(room);
      if (!kept) throw new AnteroomError("No admission is kept for this room.", { code: "NoAdmission" });
      const answer = await api.post(REFRESH, { token: kept.token }, signal);
      if (answer?.status === "admitted" && typeof answer.token === "string") await storeOf(room).update({}, answer);
      broadcast(room, answer);
      return answer;
    },

    /** @param {string} room */
    async forget(room) {
      journeys.get(room)?.stop.abort(new AnteroomError("Forgotten.", { code: "Forgotten" }));
      await storeOf(room).clear();
    },

    /** @param {(update: any, room: string) => void} listener */
    subscribe(listener) {
      if (typeof listener !== "function") throw new TypeError("`listener` must be a function.");
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },

    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
  };
}

/** @param {unknown} room */
function checkRoom(room) {
  if (typeof room !== "string" || !SLUG.test(room)) {
    throw new TypeError("`room` must be a room slug: 3 to 64 characters of a-z, 0-9 and -.");
  }
}

/** @param {any} call */
function checkCall(call) {
  if (call === null || typeof call !== "object") throw new TypeError("The call's options must be an object.");
  if (call.signal !== undefined && !isAbortSignal(call.signal)) throw new TypeError("`signal` must be an AbortSignal.");
  if (call.onUpdate !== undefined && typeof call.onUpdate !== "function") throw new TypeError("`onUpdate` must be a function.");
  return call;
}

/**
 * Copies and defaults the options; a bad one throws a TypeError that names it.
 * @param {any} input
 */
function normalizeClientOptions(input) {
  if (input === null || typeof input !== "object") {
    throw new TypeError("`options` must be an object holding at least `apiKey` and `baseUrl`.");
  }
  const options = { ...input };
  if (typeof options.apiKey !== "string" || !options.apiKey.startsWith("pk_")) {
    throw new TypeError("`apiKey` must be the environment's public key, a string starting with pk_.");
  }
  // No page to be relative to: the server's address is absolute.
  if (typeof options.baseUrl !== "string" || !/^https?:\/\//.test(options.baseUrl)) {
    throw new TypeError("`baseUrl` must be the absolute http(s) URL of the Anteroom server.");
  }
  options.baseUrl = normalizeBaseUrl(options.baseUrl);
  options.storage ??= memoryStorage();
  checkStorage(options.storage, "storage");
  options.fetch ??= (/** @type {any[]} */ ...args) => globalThis.fetch(.../** @type {[any]} */ (args));
  if (typeof options.fetch !== "function") throw new TypeError("`fetch` must be a function.");
  options.clock ??= realClock;
  checkClock(options.clock);
  options.sha256 ??= null;
  if (options.sha256 !== null && typeof options.sha256 !== "function") throw new TypeError("`sha256` must be a function of bytes to their digest.");
  options.random ??= Math.random;
  if (typeof options.random !== "function") throw new TypeError("`random` must be a function.");
  options.estimates ??= true;
  if (typeof options.estimates !== "boolean") throw new TypeError("`estimates` must be true or false.");
  options.signals ??= {};
  if (typeof options.signals !== "object" || options.signals === null) throw new TypeError("`signals` must be an object.");
  return options;
}
