/**
 * The Anteroom token format and keyring, for Node: the same rules as the Python
 * `anteroom.tokens` (its one definition), verification side only.
 *
 * A token is `<type>.<kid>.<payload>.<sig>`: `payload` is base64url of compact JSON claims and
 * `sig` is base64url HMAC-SHA256 over `<type>.<kid>.<payload>`, keyed with a secret derived per
 * token type, so a token of one type never verifies as another.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

import { networkBytes, stripPythonSpace, PYTHON_SPACE } from "./ip.js";

export const SESSION = "st1";
export const ADMISSION = "ab1";
// Not a token type: the derivation label of the key behind network tags (the `qi` claim).
export const NETWORK_TAG = "qi1";
// Far above any real token; bounds the work an attacker can make us do per request.
export const MAX_TOKEN_LENGTH = 4096;

const KID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;
const MIN_SECRET_BYTES = 16;
const B64URL_CHARS = /^[A-Za-z0-9_-]*$/;
const B64_CHARS = /^[A-Za-z0-9+/]*$/;
const ASCII = /^[\x00-\x7f]*$/;
const PYTHON_SPACE_ALL = new RegExp(`[${PYTHON_SPACE}]+`, "g");

/** A token was refused; `reason` says why (`malformed`, `unknown-key`, `forged`, `expired`). */
export class TokenError extends Error {
  /**
   * @param {string} reason
   * @param {string} [message]
   */
  constructor(reason, message) {
    super(message ?? reason);
    this.name = "TokenError";
    /** @type {string} */
    this.reason = reason;
  }
}

/**
 * Base64url without padding.
 * @param {Uint8Array} bytes
 */
export function b64urlEncode(bytes) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64url");
}

/**
 * Strict inverse of `b64urlEncode`: one spelling per byte string, so throws on anything else.
 * @param {string} text
 */
export function b64urlDecode(text) {
  if (!B64URL_CHARS.test(text) || text.length % 4 === 1) throw new TypeError("not base64url");
  const bytes = Buffer.from(text, "base64url");
  // Reject stray low bits in the last character, as Python does.
  if (bytes.toString("base64url") !== text) throw new TypeError("non-canonical base64url");
  return bytes;
}

/** @param {string} kid */
function describe(kid) {
  return `'${kid}'`;
}

/** @param {unknown} kid */
function checkKid(kid) {
  if (typeof kid !== "string" || !KID_PATTERN.test(kid)) {
    throw new TypeError(
      `ANTEROOM_KEYS: key id ${describe(String(kid))} must match ${KID_PATTERN.source} ` +
        "(letters, digits, '_' or '-', 1-32 chars)",
    );
  }
}

/**
 * @param {string} kid
 * @param {unknown} secret
 * @returns {Buffer}
 */
function checkKey(kid, secret) {
  checkKid(kid);
  // Python takes bytes only (a str secret is an error there too): a string here is far more
  // likely an undecoded base64 secret than raw key material.
  if (!(secret instanceof Uint8Array)) {
    throw new TypeError(`ANTEROOM_KEYS: secret of key ${describe(kid)} must be a Buffer or Uint8Array`);
  }
  if (secret.byteLength < MIN_SECRET_BYTES) {
    throw new TypeError(
      `ANTEROOM_KEYS: secret of key ${describe(kid)} is ${secret.byteLength} bytes; ` +
        `at least ${MIN_SECRET_BYTES} are required`,
    );
  }
  return Buffer.from(secret); // a copy: later changes by the caller do not reach the keyring
}

/**
 * @param {string} kid
 * @param {string} text
 */
function decodeSecret(kid, text) {
  // Accept standard base64 and base64url, padded or not: operators paste both.
  let cleaned = text.replace(PYTHON_SPACE_ALL, "").replaceAll("-", "+").replaceAll("_", "/");
  cleaned = cleaned.replace(/=+$/, "");
  if (!B64_CHARS.test(cleaned) || cleaned.length % 4 === 1) {
    throw new TypeError(`ANTEROOM_KEYS: secret of key ${describe(kid)} is not valid base64`);
  }
  return Buffer.from(cleaned, "base64");
}

/** Ordered kid -> secret: every key verifies (the first one signs, on the Anteroom side). */
export class Keyring {
  /** @param {Map<string, Uint8Array> | Record<string, Uint8Array>} keys */
  constructor(keys) {
    const entries = keys instanceof Map ? [...keys] : Object.entries(keys ?? {});
    if (entries.length === 0) throw new TypeError("ANTEROOM_KEYS: at least one key is required");
    /** @type {Map<string, Buffer>} */
    this._keys = new Map();
    for (const [kid, secret] of entries) this._keys.set(kid, checkKey(kid, secret));
    /** @type {Map<string, Buffer>} */
    this._derived = new Map();
  }

  /**
   * Parse `kid:base64secret,kid2:base64secret` (the `ANTEROOM_KEYS` format).
   * @param {string} text
   */
  static parse(text) {
    if (typeof text !== "string" || !stripPythonSpace(text)) {
      throw new TypeError("ANTEROOM_KEYS is empty: expected 'kid:base64secret[,kid:secret...]'");
    }
    /** @type {Map<string, Buffer>} */
    const keys = new Map();
    text.split(",").forEach((raw, index) => {
      const position = index + 1;
      const entry = stripPythonSpace(raw);
      if (!entry) throw new TypeError(`ANTEROOM_KEYS: entry ${position} is empty (stray comma?)`);
      const colon = entry.indexOf(":");
      if (colon < 0) {
        throw new TypeError(`ANTEROOM_KEYS: entry ${position} has no ':' (expected 'kid:base64secret')`);
      }
      const kid = stripPythonSpace(entry.slice(0, colon));
      if (keys.has(kid)) throw new TypeError(`ANTEROOM_KEYS: key id ${describe(kid)} appears twice`);
      checkKid(kid);
      keys.set(kid, checkKey(kid, decodeSecret(kid, entry.slice(colon + 1))));
    });
    return new Keyring(keys);
  }

  /**
   * Accept an `ANTEROOM_KEYS` string, a Map or object kid -> bytes, or a Keyring; anything else
   * throws a TypeError (checked here, at run time, as the callers' keys come from configuration).
   * @param {unknown} keys
   */
  static coerce(keys) {
    if (keys instanceof Keyring) return keys;
    if (typeof keys === "string") return Keyring.parse(keys);
    if (keys instanceof Map || (typeof keys === "object" && keys !== null && !Array.isArray(keys))) {
      return new Keyring(/** @type {Map<string, Uint8Array> | Record<string, Uint8Array>} */ (keys));
    }
    throw new TypeError("keys must be an ANTEROOM_KEYS string, a Map or object of kid -> Buffer, or a Keyring");
  }

  /** @param {string} kid */
  has(kid) {
    return this._keys.has(kid);
  }

  /** The key ids, in order. */
  get kids() {
    return [...this._keys.keys()];
  }

  /**
   * `HMAC-SHA256(secret[kid], "anteroom-<purpose>-v1")`, cached.
   * @param {string} kid
   * @param {string} purpose
   */
  derivedKey(kid, purpose) {
    const cacheKey = `${kid}\n${purpose}`;
    let derived = this._derived.get(cacheKey);
    if (derived === undefined) {
      const secret = this._keys.get(kid);
      if (secret === undefined) throw new TokenError("unknown-key", `key id '${kid}' is not in the keyring`);
      derived = createHmac("sha256", secret).update(`anteroom-${purpose}-v1`, "ascii").digest();
      this._derived.set(cacheKey, derived);
    }
    return derived;
  }

  toString() {
    // Never print secrets.
    return `Keyring(kids=${JSON.stringify(this.kids)})`;
  }
}

/**
 * Constant-time equality of two byte strings (a length difference is not secret).
 * @param {Uint8Array} given
 * @param {Uint8Array} expected
 */
export function sameBytes(given, expected) {
  return given.byteLength === expected.byteLength && timingSafeEqual(given, expected);
}

/**
 * @param {Keyring} keyring
 * @param {string} kid
 * @param {string} tokenType
 * @param {string} signedPart
 */
function signature(keyring, kid, tokenType, signedPart) {
  return createHmac("sha256", keyring.derivedKey(kid, tokenType)).update(signedPart, "ascii").digest();
}

/**
 * The key id a token names (unverified); throws a `malformed` TokenError if it has none.
 * @param {string} token
 */
export function tokenKid(token) {
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH) throw new TokenError("malformed", "not a token");
  const parts = token.split(".");
  if (parts.length !== 4 || !KID_PATTERN.test(parts[1])) throw new TokenError("malformed", "not a token");
  return parts[1];
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Verify `token` as `expectedType` and return its claims, or throw a TokenError.
 * @param {Keyring} keyring
 * @param {unknown} token
 * @param {string} expectedType
 * @param {number} now epoch seconds
 * @returns {Record<string, unknown>}
 */
export function decode(keyring, token, expectedType, now) {
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH || !ASCII.test(token)) {
    throw new TokenError("malformed", "not a token");
  }
  const parts = token.split(".");
  if (parts.length !== 4) throw new TokenError("malformed", "a token has four dot-separated parts");
  const [tokenType, kid, payload, sig] = parts;
  if (tokenType !== expectedType) throw new TokenError("malformed", `not a ${expectedType} token`);
  if (!keyring.has(kid)) throw new TokenError("unknown-key", `key id '${kid}' is not in the keyring`);
  let given;
  try {
    given = b64urlDecode(sig);
  } catch {
    throw new TokenError("malformed", "signature is not base64url");
  }
  if (!sameBytes(given, signature(keyring, kid, tokenType, `${tokenType}.${kid}.${payload}`))) {
    throw new TokenError("forged", "signature mismatch");
  }
  // Only now, with the content proven ours, is the payload parsed.
  let claims;
  try {
    claims = JSON.parse(UTF8.decode(b64urlDecode(payload)));
  } catch {
    throw new TokenError("malformed", "payload is not base64url JSON");
  }
  if (typeof claims !== "object" || claims === null || Array.isArray(claims)) {
    throw new TokenError("malformed", "payload is not a JSON object");
  }
  const exp = claim(claims, "exp");
  if (exp !== undefined && exp !== null) {
    if (typeof exp !== "number") throw new TokenError("malformed", "exp is not a number");
    if (exp <= now) throw new TokenError("expired", "token has expired");
  }
  return claims;
}

/**
 * A claim by name, own properties only (a payload's `__proto__` or `constructor` is just data).
 * @param {Record<string, unknown>} claims
 * @param {string} name
 */
export function claim(claims, name) {
  return Object.hasOwn(claims, name) ? claims[name] : undefined;
}

/**
 * Keyed tag of the network of `ip` (IPv4 address, IPv6 /64); no address can be read back.
 * Throws TypeError for anything that is not an IP address.
 * @param {Keyring} keyring
 * @param {string} ip
 * @param {string} kid the kid of the token carrying the tag
 */
export function networkTag(keyring, ip, kid) {
  const key = keyring.derivedKey(kid, NETWORK_TAG);
  return b64urlEncode(createHmac("sha256", key).update(networkBytes(ip)).digest().subarray(0, 16));
}
