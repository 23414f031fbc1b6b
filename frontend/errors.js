/**
 * The one error class the agent rejects with. `code` is the server's error code
 * (`QueueDenied`, `RoomNotFound`, …) or one of the agent's own (`NetworkError`, `BadResponse`,
 * `BadChallenge`); `status` is the HTTP status (0 when no answer arrived); `retryAfter` is in
 * seconds, or null; `closedMessage` is what a room taking no new entries (`RoomClosed`) says,
 * or null.
 */
export class AnteroomError extends Error {
  /**
   * @param {string} message
   * @param {{code: string, status?: number, retryAfter?: number | null, closedMessage?: unknown, cause?: unknown}} details
   */
  constructor(message, details) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "AnteroomError";
    /** @type {string} */
    this.code = details.code;
    /** @type {number} */
    this.status = details.status ?? 0;
    /** @type {number | null} */
    this.retryAfter = details.retryAfter ?? null;
    /** @type {string | Record<string, string> | null} */
    this.closedMessage = /** @type {any} */ (details.closedMessage) ?? null;
  }
}
