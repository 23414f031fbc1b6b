/**
 * The one error class the agent rejects with. `code` is the server's error code
 * (`QueueDenied`, `RoomNotFound`, …) or one of the agent's own (`NetworkError`, `BadResponse`,
 * `BadChallenge`); `status` is the HTTP status (0 when no answer arrived); `retryAfter` is in
 * seconds, or null.
 */
export class AnteroomError extends Error {
  /**
   * @param {string} message
   * @param {{code: string, status?: number, retryAfter?: number | null, cause?: unknown}} details
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
  }
}
