/**
 * Anteroom's headless client: the browser agent's queue logic for runtimes without a DOM
 * (React Native and Expo, Capacitor, Node, service workers). No window, document, localStorage,
 * Worker or BroadcastChannel is read.
 *
 * @example
 * ```js
 * import AsyncStorage from "@react-native-async-storage/async-storage";
 * import { asyncStorage, createClient, queueThrough } from "anteroom/headless";
 *
 * const anteroom = createClient({
 *   apiKey: "pk_live_123",
 *   baseUrl: "https://queue.example.com",
 *   storage: asyncStorage(AsyncStorage),
 * });
 * anteroom.subscribe((update) => {
 *   if (update.status === "waiting") showPlace(update.position, update.etaSeconds);
 * });
 * // The app's own API calls queue through the edge's 429 QueueRequired:
 * const api = queueThrough(fetch, anteroom);
 * const cart = await api("https://shop.example.com/api/cart"); // queues if told to, then repeats once
 * ```
 */
import type { AnteroomError, Clock, ErrorUpdate, QueueAnswer, QueueUpdate } from "../index.js";

export type { Clock, ErrorUpdate, QueueAnswer, QueueUpdate };
export { AnteroomError };

/** Strings by key; each method may answer at once or with a promise. */
export interface KeyValueStorage {
  getItem(key: string): string | null | undefined | Promise<string | null | undefined>;
  setItem(key: string, value: string): unknown;
  removeItem(key: string): unknown;
}

/** A storage in this process's memory: what a client uses when given none (nothing survives a restart). */
export function memoryStorage(): KeyValueStorage;

/**
 * An AsyncStorage-shaped store (React Native's AsyncStorage, localforage, Capacitor Preferences
 * behind three arrows). Throws a TypeError naming what it lacks.
 */
export function asyncStorage(store: {
  getItem(key: string): Promise<string | null | undefined>;
  setItem(key: string, value: string): Promise<unknown>;
  removeItem(key: string): Promise<unknown>;
}): KeyValueStorage;

/**
 * SHA-256 of `bytes`, at once or with a promise: Node's
 * `(b) => createHash("sha256").update(b).digest()`, `(b) => crypto.subtle.digest("SHA-256", b)`,
 * a React Native native module. Called once per candidate of the proof of work.
 */
export type Sha256Function = (bytes: Uint8Array) => Uint8Array | ArrayBuffer | Promise<Uint8Array | ArrayBuffer>;

export interface ClientOptions {
  /** The environment's public key, `pk_…`. */
  apiKey: string;
  /** Absolute http(s) URL of the Anteroom server, e.g. `https://queue.example.com`. */
  baseUrl: string;
  /**
   * Where the session, the ticket and the admission are kept per room, under
   * `anteroom:<baseUrl>:<room>`, so a restarted app polls its kept spot (or holds its kept
   * admission) rather than entering again. Default: `memoryStorage()`. A storage that fails is
   * not fatal: the client goes on in memory.
   */
  storage?: KeyValueStorage;
  /** The runtime's SHA-256. Default: the bundled search (WebAssembly where available, else JS), usually faster than a digest call per candidate. */
  sha256?: Sha256Function | null;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** Default: the real clock. */
  clock?: Clock;
  /** Uniform in [0, 1), for the backoff jitter. Default `Math.random`. */
  random?: () => number;
  /** Between polls, move the place at the room's pace (updates with `estimate: true`). Default true. */
  estimates?: boolean;
  /**
   * What the app knows of the device, sent with the arrival as the browser agent's signals are,
   * e.g. `{ languages: 2 }` (the device's preferred languages). Default `{}`: nothing is claimed.
   */
  signals?: { webdriver?: boolean; languages?: number; hardwareConcurrency?: number; timezone?: string };
}

export interface CallOptions {
  /** Stops this call: timers cleared, the request in flight aborted; it rejects with `signal.reason`. */
  signal?: AbortSignal;
}

export interface EnterOptions extends CallOptions {
  /** An invite link's token (`iv1.…`): the entry takes its lane. */
  invite?: string | null;
  /** Called with every update of this room while this call waits. */
  onUpdate?: (update: QueueUpdate) => void;
}

/** The admitted answer kept for a room, with its expiry (epoch ms, read from the token; null when unknown). */
export type KeptAdmission = QueueAnswer & { status: "admitted"; token: string; expiresAt: number | null };

export interface AnteroomClient {
  /**
   * Takes a place in `room`'s line and waits to be let in, as `enterQueue` does in a browser
   * (arrive → proof of work → join, poll at `pollAfterMs`, back off with jitter on errors, wait
   * exactly `Retry-After` on 429, enter again after 410): resolves with the admitted answer, or
   * with the `idle` answer when the room is not open. A kept admission that is still good
   * resolves at once with no call; a kept ticket is polled rather than entering again.
   * Calls for the same room at once share one journey, which stops when the last of them aborts.
   * Rejects with an `AnteroomError` as `enterQueue` does (`RoomClosed`, `QueueDenied`, …).
   */
  enter(room: string, options?: EnterOptions): Promise<QueueAnswer>;
  /** The admission kept for `room` while it is good (not within 5 s of its expiry), else null. */
  admission(room: string): Promise<KeptAdmission | null>;
  /** Drops the kept admission (only if it is still `token`, when given): the edge refused it. */
  forgetAdmission(room: string, token?: string): Promise<void>;
  /** Keeps a renewed admission the edge handed back in `Anteroom-Admission`. */
  keepAdmission(room: string, token: string): Promise<void>;
  /** Renews the kept admission (`/admission/refresh`); rejects with `NoAdmission` when none is kept. */
  refresh(room: string, options?: CallOptions): Promise<QueueAnswer>;
  /** Gives the spot back (`/queue/leave`), stops a journey under way (it rejects with code `Left`) and forgets the ticket and admission. */
  leave(room: string, options?: CallOptions): Promise<void>;
  /** Forgets everything kept for `room` (session, ticket, admission). */
  forget(room: string): Promise<void>;
  /** Every update of every room, as `onUpdate` gets them; returns the unsubscribe. */
  subscribe(listener: (update: QueueUpdate, room: string) => void): () => void;
  readonly baseUrl: string;
  readonly apiKey: string;
}

/** @throws {TypeError} naming the bad option. */
export function createClient(options: ClientOptions): AnteroomClient;

export interface QueueThroughOptions {
  /** Repeat POST, PATCH (and any method not idempotent) too. Default false: their 429 goes back to the app. */
  retryNonIdempotent?: boolean;
  /** Called with the updates of the line while a call waits in it. */
  onUpdate?: (update: QueueUpdate) => void;
}

/** `"Anteroom-Admission"`: the header the admission rides in. */
export const ADMISSION_HEADER: "Anteroom-Admission";

/**
 * Wraps `fetch` for the app's own API calls behind Anteroom's edge: on a 429 whose JSON body is
 * `{"error": "QueueRequired", "room": …}`, queues in that room with `client` (or uses the
 * admission it keeps), waits as the server says, and repeats the call ONCE with the admission in
 * `Anteroom-Admission`; whatever that answers goes back to the app. Only idempotent methods (GET,
 * HEAD, OPTIONS, PUT, DELETE, TRACE) are repeated unless `retryNonIdempotent`; a body sent as a
 * stream is never repeated. Later calls to the same origin carry the kept admission from the
 * start, and a renewed one the edge hands back is kept. Rejects with the signal's reason when the
 * call's `signal` aborts while it waits, and with an `AnteroomError` when the line refuses it.
 */
export function queueThrough(fetch: typeof globalThis.fetch, client: AnteroomClient, options?: QueueThroughOptions): typeof globalThis.fetch;
