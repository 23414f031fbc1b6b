/**
 * Server SDK for Node: verify Anteroom admission and session tokens offline, with the keyring
 * alone. The same results and reasons as the Python `anteroom.verify`.
 *
 * @example
 * import { verifyAdmission } from "anteroom/node";
 * const result = verifyAdmission(token, process.env.ANTEROOM_KEYS, { room: "spring-drop" });
 * if (!result.valid) console.log(result.reason); // send the visitor to the queue
 */
import { ADMISSION, Keyring, SESSION, TokenError, claim, decode, networkTag, sameBytes, tokenKid } from "./tokens.js";

/** @typedef {string | Map<string, Uint8Array> | Record<string, Uint8Array> | Keyring} Keys */
/** @typedef {{valid: boolean, reason: string | null, claims: Record<string, unknown> | null}} VerifyResult */

/** @type {Map<string, Keyring>} */
const parsed = new Map();
const PARSED_MAX = 16;

/**
 * Callers usually pass the ANTEROOM_KEYS string on every request: parse it (and cache its derived
 * keys) once.
 * @param {Keys} keys
 */
function keyringOf(keys) {
  if (typeof keys !== "string") return Keyring.coerce(keys);
  let keyring = parsed.get(keys);
  if (keyring === undefined) {
    keyring = Keyring.parse(keys);
    if (parsed.size >= PARSED_MAX) parsed.delete(/** @type {string} */ (parsed.keys().next().value));
    parsed.set(keys, keyring);
  }
  return keyring;
}

/**
 * @param {string} reason
 * @returns {VerifyResult}
 */
function refused(reason) {
  return { valid: false, reason, claims: null };
}

/**
 * @param {unknown} token
 * @param {Keyring} keyring
 * @param {string} tokenType
 * @param {number} now
 * @returns {VerifyResult}
 */
function check(token, keyring, tokenType, now) {
  if (typeof token !== "string") return refused("malformed");
  let claims;
  try {
    claims = decode(keyring, token, tokenType, now);
  } catch (error) {
    if (error instanceof TokenError) return refused(error.reason);
    throw error;
  }
  // Every Anteroom token expires; a signed one without a numeric exp is not one of ours.
  if (typeof claim(claims, "exp") !== "number") return refused("malformed");
  return { valid: true, reason: null, claims };
}

/** @param {number | undefined} now */
const seconds = (now) => (now ?? Date.now() / 1000);

/**
 * Verify an admission token (`ab1.…`).
 *
 * `room` (slug or room id) must match the room it admits to; `clientIp` is checked when the room
 * binds the network (claim `qi`); `sessionJti` must match the session that earned it. Reasons:
 * `malformed`, `forged`, `expired`, `unknown-key`, `wrong-room`, `ip-mismatch`,
 * `session-mismatch`. Throws (TypeError) only for unusable `keys`.
 *
 * @param {unknown} token
 * @param {Keys} keys
 * @param {{room?: string | null, clientIp?: string | null, sessionJti?: string | null, now?: number}} [options]
 * @returns {VerifyResult}
 */
export function verifyAdmission(token, keys, options = {}) {
  const { room, clientIp, sessionJti, now } = options;
  const keyring = keyringOf(keys);
  const result = check(token, keyring, ADMISSION, seconds(now));
  if (!result.valid) return result;
  const claims = /** @type {Record<string, unknown>} */ (result.claims);
  if (room != null && room !== claim(claims, "q") && room !== claim(claims, "qr")) return refused("wrong-room");
  const boundTag = claim(claims, "qi");
  if (boundTag != null) {
    // The room binds the network: without a usable client address nothing can prove it.
    if (clientIp == null || typeof boundTag !== "string") return refused("ip-mismatch");
    let seenTag;
    try {
      seenTag = networkTag(keyring, clientIp, tokenKid(/** @type {string} */ (token)));
    } catch {
      return refused("ip-mismatch");
    }
    if (!sameBytes(Buffer.from(seenTag, "ascii"), Buffer.from(boundTag, "utf8"))) return refused("ip-mismatch");
  }
  if (sessionJti != null && claim(claims, "qj") !== sessionJti) return refused("session-mismatch");
  return result;
}

/**
 * Verify a session token (`st1.…`); reasons as for `verifyAdmission`.
 * @param {unknown} token
 * @param {Keys} keys
 * @param {{now?: number}} [options]
 * @returns {VerifyResult}
 */
export function verifySession(token, keys, options = {}) {
  return check(token, keyringOf(keys), SESSION, seconds(options.now));
}

export { Keyring };
