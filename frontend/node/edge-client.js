/**
 * The edge's HTTP client: makes the calls to Anteroom a decision asks for, and feeds it back. The
 * same as the Python `anteroom.sdk.edge_client`.
 *
 * `decide` never does I/O: when it needs Anteroom (a ticket's poll, an admission's renewal) it
 * returns a `call`. `settle` makes that call through an `AnteroomClient` and hands the answer to
 * `call.then`, until the decision is one the middleware can carry out. The transport is `fetch`
 * by default; tests give canned answers.
 */

// Anteroom's answers are small; a bigger one is not Anteroom's.
export const MAX_ANSWER_BYTES = 65536;

/** @typedef {import("./edge-decision.js").Decision} Decision */
/** @typedef {import("./edge-decision.js").Call} Call */
/** @typedef {(path: string, body: Record<string, unknown>) => Promise<[number, Record<string, any>]>} Transport */

/**
 * POST JSON to Anteroom with `fetch`: [HTTP status, JSON object]; [0, {}] when unreachable.
 * @param {{baseUrl: string, timeout: number, fetch: typeof fetch}} options
 * @returns {Transport}
 */
export function httpTransport({ baseUrl, timeout, fetch }) {
  return async (path, body) => {
    let status = 0;
    try {
      const response = await fetch(baseUrl + path, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(body),
        redirect: "error",
        signal: AbortSignal.timeout(Math.max(0, timeout * 1000)),
      });
      status = response.status;
      const bytes = await readCapped(response);
      if (bytes === null) return [status, {}];
      const text = new TextDecoder().decode(bytes);
      let answer = null;
      try {
        answer = text ? JSON.parse(text) : null;
      } catch {
        answer = null;
      }
      return [status, answer && typeof answer === "object" && !Array.isArray(answer) ? answer : {}];
    } catch {
      return [status, {}];
    }
  };
}

/**
 * The body, or null past MAX_ANSWER_BYTES (reading stops there).
 * @param {globalThis.Response} response
 */
async function readCapped(response) {
  if (!response.body) return new Uint8Array();
  const chunks = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_ANSWER_BYTES) return null; // leaving the loop cancels the stream
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Makes the calls decisions ask for through `transport`; `calls` counts them. */
export class AnteroomClient {
  /**
   * @param {Transport} transport
   * @param {() => number} clock
   */
  constructor(transport, clock) {
    this.transport = transport;
    this.clock = clock;
    this.calls = 0;
  }

  /**
   * Make `call` and decide with its answer (and the time it came).
   * @param {Call} call
   * @returns {Promise<Decision>}
   */
  async answer(call) {
    this.calls += 1;
    const [status, answer] = await this.transport(call.path, call.body);
    return call.then(status, answer, this.clock());
  }
}

/**
 * `decision` once every call it asks for is made: pass, admit or respond.
 * @param {Decision} decision
 * @param {AnteroomClient} client
 * @returns {Promise<Decision>}
 */
export async function settle(decision, client) {
  while (decision.kind === "call" && decision.call) decision = await client.answer(decision.call);
  return decision;
}
