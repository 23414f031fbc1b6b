import { AnteroomError } from "./errors.js";

export const PATHS = {
  arrive: "/api/v1/arrive",
  join: "/api/v1/queue/join",
  challenge: "/api/v1/challenge",
  identify: "/api/v1/identify",
  enter: "/api/v1/queue/enter",
  poll: "/api/v1/queue/poll",
};

/**
 * A JSON client for the visitor API. Every call is a POST of `{apiKey, ...body}`; it resolves
 * with the parsed answer, or rejects with an `AnteroomError` carrying the server's `error` code,
 * the HTTP status and `retryAfter` in seconds (the `Retry-After` header, else the body's
 * `retryAfter`). A request that got no answer rejects with code `NetworkError` (status 0); an
 * aborted one with the signal's reason.
 *
 * @param {{baseUrl: string, apiKey: string, fetch: typeof fetch, clock: import("./timers.js").Clock}} options
 */
export function createApi({ baseUrl, apiKey, fetch, clock }) {
  /**
   * @param {string} path
   * @param {object} body
   * @param {AbortSignal} [signal]
   * @returns {Promise<any>}
   */
  async function post(path, body, signal) {
    signal?.throwIfAborted();
    /** @type {Response} */
    let response;
    let text;
    try {
      response = await fetch(baseUrl + path, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ apiKey, ...body }),
        cache: "no-store",
        signal,
      });
      text = await response.text();
    } catch (error) {
      signal?.throwIfAborted();
      throw new AnteroomError("The waiting room could not be reached.", { code: "NetworkError", cause: error });
    }
    const answer = parseJson(text);
    const retryAfter = parseRetryAfter(response.headers.get("Retry-After"), clock.now()) ??
      (typeof answer?.retryAfter === "number" ? answer.retryAfter : null);
    if (response.ok) {
      if (response.status === 204) return null;
      if (answer === undefined || answer === null || typeof answer !== "object") {
        throw new AnteroomError("The waiting room sent an unreadable answer.", {
          code: "BadResponse",
          status: response.status,
        });
      }
      return answer;
    }
    throw new AnteroomError(
      typeof answer?.message === "string" ? answer.message : `The waiting room answered ${response.status}.`,
      {
        // an invite refused (the server names the field): its own code, not the session's
        code: typeof answer?.error === "string" ? (answer.fields?.invite ? "InviteInvalid" : answer.error) : `Http${response.status}`,
        status: response.status,
        retryAfter,
        closedMessage: answer?.closedMessage ?? null,
      },
    );
  }
  return { post };
}

/** @param {string} text */
function parseJson(text) {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `Retry-After` as seconds: delta-seconds, or an HTTP date counted from `now`.
 * @param {string | null} value
 * @param {number} now epoch ms
 * @returns {number | null}
 */
export function parseRetryAfter(value, now) {
  if (value === null || value.trim() === "") return null;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}
