/**
 * Retry delays. Transient failures (network errors, 5xx) back off exponentially with "equal
 * jitter": the n-th consecutive failure (n = 0 for the first) waits
 *
 *     ceiling = min(CAP_MS, BASE_MS × FACTOR^n)
 *     delay   = round(ceiling / 2 + random() × ceiling / 2)
 *
 * so 0.5–1 s, 1–2 s, 2–4 s, … up to 30–60 s. Half the ceiling is always waited (a line of
 * thousands of visitors never retries at once), the other half spreads them out.
 * An explicit `Retry-After` is obeyed exactly instead (see `retryDelay` in enter-queue.js).
 */
export const BASE_MS = 1000;
export const FACTOR = 2;
export const CAP_MS = 60_000;

/**
 * @param {number} failures consecutive failures before this one (0 for the first retry)
 * @param {() => number} [random] uniform in [0, 1)
 * @returns {number} milliseconds
 */
export function backoffDelay(failures, random = Math.random) {
  const ceiling = Math.min(CAP_MS, BASE_MS * FACTOR ** failures);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
