/**
 * The draw checker of backend/anteroom/sdk/draw.py in the browser, WebCrypto only (docs/draw.md):
 * the same rules, the same order of checks and the same failure names, held
 * to the same cases (tests/fixtures/draw.json, tests/js/draw-check.test.mjs).
 *
 * - commitment = SHA-256 hex of the seed's 64 hex characters as text;
 * - order key = HMAC-SHA-1(key = the seed's 32 bytes, message = BEACON ":" ENTRANT_ID), hex; the
 *   drawn order sorts by (order key, id);
 * - root = RFC 6962 tree head over the ids' ASCII in drawn order (sdk/merkle.py);
 * - receipts rc1.<kid>.<payload>.<sig>: Ed25519 over the text before the last dot, by the
 *   document's receiptKeys[kid]. A browser without WebCrypto Ed25519 reports the signature as not
 *   checked: it never passes a signature it could not check.
 */

/**
 * @typedef {object} Verdict
 * @property {boolean} ok true when nothing failed
 * @property {string} [failure] a name from FAILURES when something failed
 * @property {string} detail what passed, or `failure: why`
 * @property {"checked" | "unchecked" | "unsupported"} [signature] a receipt's signature: checked;
 *   not checked (the document lists no receiptKeys); or not checkable in this browser
 */

/**
 * @typedef {(receipt: string) => Promise<boolean | null>} SignatureCheck
 * true: the room's signature; false: not; null: this browser cannot check it.
 */

/** Every failure a check can name (anteroom.sdk.draw.FAILURES). */
export const FAILURES = Object.freeze({
  unreadable: "the fairness document or the entrant list cannot be fetched or parsed",
  malformed: "the fairness document lacks a field or has one of the wrong form",
  "seed-not-revealed": "the draw has no seed yet: nothing to check before the shuffle",
  "commitment-mismatch": "the revealed seed does not hash to the published commitment",
  "duplicate-entrant": "an entrant id is listed twice",
  "entrant-dropped": "fewer entrants are listed than the document counts",
  "entrant-added": "more entrants are listed than the document counts",
  "order-mismatch": "the list is not in the order the seed draws",
  "root-mismatch": "the list's Merkle root is not the published root",
  "receipt-malformed": "the receipt is not an rc1 receipt",
  "receipt-signature": "the receipt's signature does not verify",
  "receipt-room": "the receipt is for another room",
  "receipt-opening": "the receipt is for another opening",
  "receipt-entrant": "the receipt's entrant is not in the list",
  "receipt-rank": "the receipt's rank is not the entrant's place in the list",
  "receipt-proof": "the receipt's inclusion proof does not lead to the published root",
});

const HEX64 = /^[0-9a-f]{64}$/;
const HEX = /^(?:[0-9a-f]{2})*$/;
const KID = /^[A-Za-z0-9_-]{1,32}$/;
const B64URL = /^[A-Za-z0-9_-]*$/;
const ascii = new TextEncoder();

/** @returns {SubtleCrypto} */
const defaultSubtle = () => globalThis.crypto.subtle;

/** @param {string} name @param {string} detail @returns {Verdict} */
const fail = (name, detail) => ({ ok: false, failure: name, detail: `${name}: ${detail}` });

/** @param {ArrayBuffer | Uint8Array} data */
const toHex = (data) =>
  Array.from(new Uint8Array(data), (b) => b.toString(16).padStart(2, "0")).join("");

/** @param {string} hex */
const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (pair) => parseInt(pair, 16));

/** @param {Uint8Array[]} parts */
const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

/**
 * Strict base64url without padding (anteroom.sdk.tokens.b64url_decode): one spelling per bytes.
 * @param {string} text
 * @returns {Uint8Array}
 */
export function b64urlDecode(text) {
  if (typeof text !== "string" || !B64URL.test(text) || text.length % 4 === 1) {
    throw new Error("not base64url");
  }
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  let again = btoa(String.fromCharCode(...bytes));
  again = again.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  // Stray low bits in the last character would give a second spelling of the same bytes.
  if (again !== text) throw new Error("non-canonical base64url");
  return bytes;
}

/**
 * The commitment to `seed`: SHA-256 hex of its text.
 * @param {string} seed
 * @param {SubtleCrypto} [subtle]
 */
export async function commitment(seed, subtle = defaultSubtle()) {
  return toHex(await subtle.digest("SHA-256", ascii.encode(seed)));
}

/**
 * `entrants` in drawn order: by HMAC-SHA-1 order key, then by id (ids are ASCII, so JS string
 * order is Python's).
 * @param {string} seed
 * @param {string[]} entrants
 * @param {string | null} beacon
 * @param {SubtleCrypto} [subtle]
 * @returns {Promise<string[]>}
 */
export async function drawnOrder(seed, entrants, beacon, subtle = defaultSubtle()) {
  const key = await subtle.importKey("raw", fromHex(seed), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  const prefix = `${beacon ?? ""}:`;
  const keys = await Promise.all(
    entrants.map(async (id) => toHex(await subtle.sign("HMAC", key, ascii.encode(prefix + id)))),
  );
  const keyed = entrants.map((id, i) => [keys[i], id]);
  keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return keyed.map(([, id]) => id);
}

/** @param {SubtleCrypto} subtle @param {Uint8Array} data */
const sha256 = async (subtle, data) => new Uint8Array(await subtle.digest("SHA-256", data));
const LEAF = Uint8Array.of(0);
const NODE = Uint8Array.of(1);

/**
 * The RFC 6962 tree head (hex) of `leaves`, built level by level as sdk/merkle.py does.
 * @param {Uint8Array[]} leaves
 * @param {SubtleCrypto} [subtle]
 */
export async function merkleRoot(leaves, subtle = defaultSubtle()) {
  if (leaves.length === 0) return toHex(await subtle.digest("SHA-256", new Uint8Array(0)));
  let level = await Promise.all(leaves.map((leaf) => sha256(subtle, concat(LEAF, leaf))));
  while (level.length > 1) {
    const pairs = [];
    for (let i = 0; i + 1 < level.length; i += 2) pairs.push(sha256(subtle, concat(NODE, level[i], level[i + 1])));
    const next = await Promise.all(pairs);
    // A level's odd last node rises unhashed.
    if (level.length % 2) next.push(level[level.length - 1]);
    level = next;
  }
  return toHex(level[0]);
}

/**
 * True when `proof` shows `leaf` at `index` in the tree of `size` leaves whose head is `head`
 * (RFC 9162 2.1.3.2, as sdk/merkle.verify_inclusion).
 * @param {Uint8Array} leaf
 * @param {number} index
 * @param {number} size
 * @param {string[]} proof
 * @param {unknown} head
 * @param {SubtleCrypto} [subtle]
 */
export async function verifyInclusion(leaf, index, size, proof, head, subtle = defaultSubtle()) {
  if (!(index >= 0 && index < size)) return false;
  if (!proof.every((h) => typeof h === "string" && HEX64.test(h))) return false;
  let fn = index;
  let sn = size - 1;
  let r = await sha256(subtle, concat(LEAF, leaf));
  for (const hex of proof) {
    const p = fromHex(hex);
    if (sn === 0) return false; // a longer path than the tree is tall
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(subtle, concat(NODE, p, r));
      // A right-edge node with no sibling rises unhashed: skip the levels it rises through.
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = await sha256(subtle, concat(NODE, r, p));
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && toHex(r) === head;
}

/** @param {Record<string, any>} document @returns {string | null} */
function beaconValue(document) {
  let beacon = document.beacon;
  if (beacon && typeof beacon === "object" && !Array.isArray(beacon)) beacon = beacon.value;
  if (beacon !== undefined && beacon !== null && (typeof beacon !== "string" || !HEX.test(beacon))) {
    throw new Error("beacon is neither null, lowercase hex nor {value: hex}");
  }
  return beacon ?? null;
}

/** @param {Record<string, any>} document */
function guarantee(document) {
  const beacon = document.beacon;
  if (!beacon) return "guarantee: commitment only";
  if (typeof beacon === "object" && "round" in beacon) {
    const where = typeof beacon.url === "string" ? ` of ${beacon.url}` : "";
    return `guarantee: commitment + beacon round ${beacon.round}${where}`;
  }
  return "guarantee: commitment + beacon";
}

/**
 * Check one opening's fairness document against its entrant list (ids in drawn order), looking
 * for what anteroom.sdk.draw.check_draw looks for, in its order; the first failure is returned.
 * @param {unknown} document the parsed fairness.json
 * @param {unknown[]} entrants the parsed entrant list
 * @param {{subtle?: SubtleCrypto}} [options]
 * @returns {Promise<Verdict>}
 */
export async function checkDraw(document, entrants, { subtle = defaultSubtle() } = {}) {
  if (!document || typeof document !== "object" || Array.isArray(document)) {
    return fail("malformed", "the fairness document is not a JSON object");
  }
  const doc = /** @type {Record<string, any>} */ (document);
  for (const name of ["commitment", "root"]) {
    if (typeof doc[name] !== "string" || !HEX64.test(doc[name])) {
      return fail("malformed", `${name} is not 64 lowercase hex characters`);
    }
  }
  const count = doc.entrants;
  if (!Number.isInteger(count) || count < 0) return fail("malformed", "entrants is not a count");
  if (!Array.isArray(entrants) || !entrants.every((e) => typeof e === "string" && HEX64.test(e))) {
    return fail("malformed", "an entrant id is not 64 lowercase hex characters");
  }
  const ids = /** @type {string[]} */ (entrants);
  let beacon;
  try {
    beacon = beaconValue(doc);
  } catch (error) {
    return fail("malformed", /** @type {Error} */ (error).message);
  }
  const seed = doc.seed;
  if (seed === null || seed === undefined) return fail("seed-not-revealed", "seed is null");
  if (typeof seed !== "string" || !HEX64.test(seed)) {
    return fail("malformed", "seed is not 64 lowercase hex characters");
  }
  const committed = await commitment(seed, subtle);
  if (committed !== doc.commitment) return fail("commitment-mismatch", `SHA-256(seed) is ${committed}`);
  const seen = new Set();
  for (const id of ids) {
    if (seen.has(id)) return fail("duplicate-entrant", id);
    seen.add(id);
  }
  if (ids.length < count) return fail("entrant-dropped", `${ids.length} listed, ${count} counted`);
  if (ids.length > count) return fail("entrant-added", `${ids.length} listed, ${count} counted`);
  const expected = await drawnOrder(seed, ids, beacon, subtle);
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== expected[i]) {
      return fail("order-mismatch", `rank ${i + 1} is ${expected[i]}, the list says ${ids[i]}`);
    }
  }
  const head = await merkleRoot(ids.map((id) => ascii.encode(id)), subtle);
  if (head !== doc.root) return fail("root-mismatch", `the list's root is ${head}`);
  return { ok: true, detail: `draw of ${count} entrants checked; ${guarantee(doc)}` };
}

/**
 * The claims of an rc1 receipt (signature unchecked), as anteroom.sdk.draw.read_receipt reads
 * them; throws when malformed.
 * @param {unknown} text
 * @returns {{room: string, opening: number, entrant: string, rank: number, proof: string[]}}
 */
export function readReceipt(text) {
  const parts = typeof text === "string" ? text.split(".") : [];
  if (parts.length !== 4 || parts[0] !== "rc1" || !KID.test(parts[1])) {
    throw new Error("not rc1.<kid>.<payload>.<signature>");
  }
  let raw;
  try {
    b64urlDecode(parts[3]);
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(b64urlDecode(parts[2])));
  } catch {
    throw new Error("payload or signature is not base64url (JSON)");
  }
  const fields = ["entrant", "opening", "proof", "rank", "room"];
  if (!raw || typeof raw !== "object" || Array.isArray(raw) || Object.keys(raw).sort().join() !== fields.join()) {
    throw new Error("payload is not {room, opening, entrant, rank, proof}");
  }
  if (
    !(
      typeof raw.room === "string" &&
      Number.isInteger(raw.opening) &&
      typeof raw.entrant === "string" &&
      HEX64.test(raw.entrant) &&
      Number.isInteger(raw.rank) &&
      raw.rank >= 1 &&
      Array.isArray(raw.proof) &&
      raw.proof.every((/** @type {unknown} */ h) => typeof h === "string" && HEX64.test(h))
    )
  ) {
    throw new Error("a receipt field has the wrong form");
  }
  return raw;
}

/**
 * A signature check against a document's `receiptKeys` (kid -> base64url Ed25519 public key),
 * with WebCrypto's Ed25519: a kid not listed, or a key of the wrong form, fails; a browser whose
 * WebCrypto has no Ed25519 answers null (not checked) rather than a verdict.
 * @param {Record<string, unknown>} receiptKeys
 * @param {SubtleCrypto} [subtle]
 * @returns {SignatureCheck}
 */
export function ed25519Checker(receiptKeys, subtle = defaultSubtle()) {
  return async (receipt) => {
    const cut = receipt.lastIndexOf(".");
    const signedPart = receipt.slice(0, cut);
    const pieces = signedPart.split(".");
    const key = pieces.length === 3 ? receiptKeys[pieces[1]] : undefined;
    let publicKey;
    let signature;
    try {
      publicKey = typeof key === "string" ? b64urlDecode(key) : new Uint8Array(0);
      signature = b64urlDecode(receipt.slice(cut + 1));
    } catch {
      return false;
    }
    if (publicKey.length !== 32 || signature.length !== 64) return false;
    let imported;
    try {
      imported = await subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
    } catch {
      return null; // no Ed25519 here (or a key it refuses): say so, never pass it
    }
    try {
      return await subtle.verify({ name: "Ed25519" }, imported, signature, ascii.encode(signedPart));
    } catch {
      return false;
    }
  };
}

/**
 * Check a receipt against a fairness document and its list, which checkDraw accepted, in the
 * order anteroom.sdk.draw.check_receipt does. The signature is checked with `verifySignature`,
 * else with the document's `receiptKeys` (Ed25519), else not at all; `signature` says which.
 * @param {Record<string, any>} document
 * @param {string[]} entrants
 * @param {string} receiptText the receipt, surrounding whitespace allowed (a downloaded file)
 * @param {{verifySignature?: SignatureCheck, subtle?: SubtleCrypto}} [options]
 * @returns {Promise<Verdict>}
 */
export async function checkReceipt(document, entrants, receiptText, { verifySignature, subtle = defaultSubtle() } = {}) {
  const receipt = typeof receiptText === "string" ? receiptText.trim() : receiptText;
  let claims;
  try {
    claims = readReceipt(receipt);
  } catch (error) {
    return fail("receipt-malformed", /** @type {Error} */ (error).message);
  }
  const keys = document.receiptKeys;
  const check =
    verifySignature ?? (keys && typeof keys === "object" && !Array.isArray(keys) ? ed25519Checker(keys, subtle) : null);
  /** @type {Verdict["signature"]} */
  let signature = "unchecked";
  if (check) {
    const genuine = await check(receipt);
    if (genuine === false) return fail("receipt-signature", "the signature is not the room's");
    signature = genuine === null ? "unsupported" : "checked";
  }
  const room = document.room ?? null;
  const opening = document.opensAt ?? null;
  if (room !== null && claims.room !== room) {
    return fail("receipt-room", `receipt for '${claims.room}', draw of '${room}'`);
  }
  if (opening !== null && claims.opening !== opening) {
    return fail("receipt-opening", `receipt for ${claims.opening}, draw of ${opening}`);
  }
  if (claims.rank > entrants.length || entrants[claims.rank - 1] !== claims.entrant) {
    if (!entrants.includes(claims.entrant)) return fail("receipt-entrant", `${claims.entrant} is not listed`);
    return fail("receipt-rank", `rank ${claims.rank} is not ${claims.entrant}'s place`);
  }
  const leaf = ascii.encode(claims.entrant);
  if (!(await verifyInclusion(leaf, claims.rank - 1, entrants.length, claims.proof, document.root, subtle))) {
    return fail("receipt-proof", "the proof does not lead to the published root");
  }
  return { ok: true, detail: `receipt for rank ${claims.rank} of ${entrants.length} checked`, signature };
}
