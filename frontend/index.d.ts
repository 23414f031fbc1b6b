/**
 * Anteroom's browser agent.
 *
 * @example
 * ```js
 * import { enterQueue, AnteroomError } from "anteroom";
 *
 * const controller = new AbortController();
 * try {
 *   const answer = await enterQueue("spring-drop", {
 *     apiKey: "pk_live_123",
 *     baseUrl: "https://queue.example.com",
 *     signal: controller.signal,
 *     onUpdate(update) {
 *       if (update.status === "error") console.log(`retrying at ${new Date(update.retryAt)}`);
 *       else console.log(update.status, update.position, update.etaSeconds);
 *     },
 *   });
 *   if (answer.status === "admitted") location.assign(`/checkout?abq=${encodeURIComponent(answer.token)}`);
 *   else console.log("The room is not open.");
 * } catch (error) {
 *   if (error instanceof AnteroomError) console.log(error.code, error.status);
 *   else throw error; // the signal's reason, after controller.abort()
 * }
 * ```
 *
 * As a classic script: `<script src="https://queue.example.com/static/anteroom.js"></script>`
 * then `window.anteroom.enterQueue(...)`.
 */

/** What the server answers about one visitor's place in one room. */
export interface QueueAnswer {
  status: "idle" | "waiting" | "held" | "admitted";
  /** The room's slug. */
  room: string;
  roomName: string;
  /** Where the hosted page sends admitted visitors. */
  redirectUrl: string | null;
  /** Ticket number (not a credential). Absent for `idle`. */
  ticket?: number | null;
  /** 1 + the eligible spots ahead; null while held, and in a random room's draw. */
  position: number | null;
  /**
   * Only in a room in mode random, while waiting: the chance of admission in the next minute
   * (0..1) instead of a place (`position` and `etaSeconds` are null).
   */
  odds?: number | null;
  /** Honest estimate of the wait; null while paused, held, or when nothing honest can be said. */
  etaSeconds: number | null;
  /** Epoch ms the room opens (a pre-queue while in the future), or null. */
  opensAt: number | null;
  /** When to ask again; the agent follows it. */
  pollAfterMs?: number | null;
  /** The `qt1…` ticket token the agent polls with (kept in localStorage). */
  queueToken?: string | null;
  /** The `ab1…` admission token, once `admitted`. */
  token?: string | null;
  /** The room's own status: "open", "paused", "idle". */
  roomStatus?: string;
  /**
   * True on updates the agent makes between polls: the last answer's place and ETA moved on at
   * the room's pace (`position / etaSeconds` a second, whole places, never past the first).
   * The next poll's answer corrects it. Never on the answer `enterQueue` resolves with.
   */
  estimate?: boolean;
  [field: string]: unknown;
}

/**
 * Passed to `onUpdate` while a call is being retried, so a page can say "trying again at…".
 * The agent keeps its place in line meanwhile.
 */
export interface ErrorUpdate {
  status: "error";
  /** The server's error code (`Unavailable`, `RateLimited`, `QueueFull`, `Busy`, …) or `NetworkError`, `BadResponse`, `Http502`… */
  error: string;
  message: string;
  /** Epoch ms of the next attempt. */
  retryAt: number;
}

export type QueueUpdate = QueueAnswer | ErrorUpdate;

/** Injectable time, so tests need not sleep. Defaults to Date.now and the global timers. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

export interface EnterQueueOptions {
  /** The environment's public key, `pk_…`. */
  apiKey: string;
  /** Origin (and path prefix) of the Anteroom server, e.g. `https://queue.example.com`. Default `""`: same origin. */
  baseUrl?: string;
  /**
   * Called with every new answer, in this tab and in every other tab of the browser waiting in
   * the same room, and with an `ErrorUpdate` before each retry.
   */
  onUpdate?: (update: QueueUpdate) => void;
  /** Stops waiting: timers cleared, the request in flight aborted, the tab lock released; the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** Default: the real clock. */
  clock?: Clock;
  /** Uniform in [0, 1), for the backoff jitter. Default `Math.random`. */
  random?: () => number;
  /** Between polls, move the place at the room's pace (updates with `estimate: true`). Default true. */
  estimates?: boolean;
  /** An invite link's token (`iv1.…`, the hosted page's `&invite=`): the entry takes its lane. */
  invite?: string | null;
}

/**
 * Takes a place in the line of room `slug` and resolves once it is over:
 * with the `admitted` answer (its `token` is the admission), or at once with the `idle` answer
 * when the room is not open.
 *
 * - Without a live stored session, arrives in two calls: `arrive` (a challenge; proof of work in
 *   Web Workers, else in small slices on the main thread, the floor's puzzles timed to fit the
 *   rest to the device), then `queue/join` (the session and the spot at once). With one, enters
 *   in one call; resumes a stored ticket instead of entering.
 * - Polls at the server's `pollAfterMs` (1–2 s near the front, up to minutes far back); in
 *   between, calls `onUpdate` with the place moved at the room's pace (`estimate: true`) each
 *   time it moves by a place, at most once a second.
 * - Network errors, unreadable answers and 5xx are retried with backoff: the n-th failure in a
 *   row (n = 0 first) waits `c/2 + random()·c/2` ms, `c = min(60000, 1000·2^n)`; never less
 *   than a `Retry-After` the server gave.
 * - 429 (`RateLimited`, `QueueFull`, `Busy`) waits exactly `Retry-After` seconds and repeats the
 *   same call: the place in line is kept.
 * - 410 `TicketGone`: enters again. 401 on entry: arrives again (arrive, then join).
 * - Rejects with an `AnteroomError` on 400, other 401s, 403 (`QueueDenied`, `SessionRevoked`,
 *   `AddressRequired`, `RoomClosed` — a room taking no new entries, with its `closedMessage`)
 *   and 404 `RoomNotFound`; with an `invite`, 409 `InviteSpent`, 410 `InviteExpired` or
 *   `InviteWithdrawn` (its operator withdrew it), or
 *   `InviteInvalid` (a forged or malformed one, or one of another room: the server's answer
 *   naming the field `invite`).
 * - Tabs of one browser share the session and the spot: one tab (the holder of the Web Lock
 *   `anteroom:<slug>`) talks to the server, the others hear it on the BroadcastChannel
 *   `anteroom:<slug>` and take over when it closes.
 *
 * @throws {TypeError} synchronously, naming the bad option.
 *
 * @example
 * ```js
 * const { token } = await enterQueue("spring-drop", { apiKey: "pk_live_123" });
 * ```
 */
export function enterQueue(slug: string, options: EnterQueueOptions): Promise<QueueAnswer>;

/** Why the agent gave up. */
export class AnteroomError extends Error {
  constructor(message: string, details: { code: string; status?: number; retryAfter?: number | null; closedMessage?: string | Record<string, string> | null; cause?: unknown });
  name: "AnteroomError";
  /** The server's error code (`QueueDenied`, `RoomNotFound`, `BadRequest`, …), or `BadResponse`, `BadChallenge`. */
  code: string;
  /** HTTP status; 0 when no answer arrived. */
  status: number;
  /** Seconds, when the server named a wait. */
  retryAfter: number | null;
  /** `RoomClosed`: the room's closed message (text, or texts by language); otherwise null. */
  closedMessage: string | Record<string, string> | null;
}
