import { SLUG } from "../options.js";

export const ADMISSION_HEADER = "Anteroom-Admission";
// Methods a server must be able to take twice (RFC 9110 §9.2.2): only these are repeated unasked.
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);

/**
 * Wraps `fetch` so the app's own API calls queue through: when the edge in front of the app
 * answers 429 `QueueRequired` (JSON, naming the room), the client takes a place in that room's
 * line (or polls the spot or holds the admission it kept), waits as the server says, and repeats
 * the original call once with the admission in `Anteroom-Admission`. Only idempotent calls are
 * repeated unless `retryNonIdempotent` says otherwise; any other answer, and the repeated call's
 * answer whatever it is, goes back to the app as it came. See index.d.ts.
 *
 * @param {typeof fetch} fetchImpl
 * @param {import("./index.js").AnteroomClient} client
 * @param {import("./index.js").QueueThroughOptions} [options]
 * @returns {typeof fetch}
 */
export function queueThrough(fetchImpl, client, options = {}) {
  if (typeof fetchImpl !== "function") throw new TypeError("`fetch` must be a function.");
  if (typeof client?.enter !== "function" || typeof client?.admission !== "function") {
    throw new TypeError("`client` must be a client from createClient().");
  }
  if (options === null || typeof options !== "object") throw new TypeError("`options` must be an object.");
  const retryNonIdempotent = options.retryNonIdempotent ?? false;
  if (typeof retryNonIdempotent !== "boolean") throw new TypeError("`retryNonIdempotent` must be true or false.");
  if (options.onUpdate !== undefined && typeof options.onUpdate !== "function") throw new TypeError("`onUpdate` must be a function.");
  /** The room each origin last named in a QueueRequired: its kept admission rides on later calls there. */
  const roomOf = new Map();

  /** @param {RequestInfo | URL} input @param {RequestInit} [init] */
  return async function queuedFetch(input, init = {}) {
    const request = typeof Request === "function" && input instanceof Request ? input : null;
    const method = String(init.method ?? request?.method ?? "GET").toUpperCase();
    const signal = init.signal ?? request?.signal ?? undefined;
    const origin = originOf(request ? request.url : String(input));
    const repeatable = (IDEMPOTENT.has(method) || retryNonIdempotent) && !isStream(init.body) && !request?.bodyUsed;
    // A Request's body can be read once: the copy for the repeat is taken before the first try.
    const spare = repeatable && request ? request.clone() : null;

    const knownRoom = roomOf.get(origin);
    const kept = knownRoom ? await client.admission(knownRoom) : null;
    const firstHeaders = kept ? withAdmission(init, request, kept.token) : null;
    const first = await fetchImpl(input, firstHeaders ? { ...init, headers: firstHeaders } : init);
    await keepRenewed(first, knownRoom);

    const refusal = await queueRequired(first);
    if (!refusal) return first;
    const room = refusal.room;
    roomOf.set(origin, room);
    // The admission just shown was refused (expired, revoked, another room's): not offered again.
    if (kept) await client.forgetAdmission(knownRoom, kept.token);
    if (!repeatable) return first;

    const answer = await client.enter(room, { signal, onUpdate: options.onUpdate });
    if (answer?.status !== "admitted" || typeof answer.token !== "string") return first;
    const retried = await fetchImpl(spare ?? input, { ...init, headers: withAdmission(init, request, answer.token) });
    await keepRenewed(retried, room);
    if (await queueRequired(retried)) await client.forgetAdmission(room, answer.token);
    return retried;
  };

  /** @param {Response} response @param {string | undefined} room */
  async function keepRenewed(response, room) {
    const renewed = response.headers?.get?.(ADMISSION_HEADER);
    if (renewed && room && typeof client.keepAdmission === "function") await client.keepAdmission(room, renewed);
  }
}

/**
 * The edge's 429 QueueRequired, read from a copy (the app still gets the body), or null.
 * @param {Response} response
 * @returns {Promise<{room: string} | null>}
 */
async function queueRequired(response) {
  if (response.status !== 429) return null;
  let body;
  try {
    body = await response.clone().json();
  } catch {
    return null;
  }
  const queued = body?.error === "QueueRequired" && typeof body.room === "string" && SLUG.test(body.room);
  return queued ? { room: body.room } : null;
}

/**
 * The call's headers (init's, else the Request's) with the admission set.
 * @param {RequestInit} init
 * @param {Request | null} request
 * @param {string} token
 */
function withAdmission(init, request, token) {
  const headers = new Headers(init.headers ?? request?.headers ?? undefined);
  headers.set(ADMISSION_HEADER, token);
  return headers;
}

/** @param {string} url */
function originOf(url) {
  try {
    return new URL(url).origin;
  } catch {
    return "";
  }
}

/** @param {unknown} body a stream can be sent once */
function isStream(body) {
  return typeof body === "object" && body !== null && typeof (/** @type {any} */ (body).getReader) === "function";
}
