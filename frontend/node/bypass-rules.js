/**
 * Bypass rules (docs/operators.md, "Bypass rules"): requests that pass without queueing. The same
 * rules and the same error messages as the Python `anteroom.sdk.bypass_rules` (its docstring
 * says why each is so); both pass `tests/fixtures/edge_cases.json`.
 *
 * - `{kind: "path-prefix", value: "/static/"}`: the path is the prefix or lies below it, matched
 *   case-sensitively on the one reading of a plain path (`RouteTable.plainReading`); a path with
 *   more than one reading never matches, and one whose readings disagree is refused before.
 * - `{kind: "address-range", value: "203.0.113.0/24"}`: the client's address (the edge's
 *   `clientIp`, never a header the client wrote) is in the network; `::ffff:a.b.c.d` is IPv4.
 * - `{kind: "header" | "cookie", name, secret}`: the request carries that header (any case) or
 *   cookie with exactly the secret, compared as HMACs under a per-process key, in constant time.
 *
 * The edge is given the secrets in clear (the site's own configuration); the service stores them
 * hashed and never hands them out.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

import { parseIPv4, parseIPv6, stripPythonSpace } from "./ip.js";

export const KINDS = ["path-prefix", "address-range", "header", "cookie"];
export const MAX_RULES = 50;
const MIN_SECRET_LENGTH = 16;
const MAX_SECRET_LENGTH = 256;
const MAX_VALUE_LENGTH = 200;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
const PLAIN_PREFIX = /^\/[!-$&-[\]-~]*$/;
const CIDR = /^[0-9A-Fa-f:.]+\/[0-9]{1,3}$/;
const SECRET = new RegExp(`^[\\x20-\\x7e]{${MIN_SECRET_LENGTH},${MAX_SECRET_LENGTH}}$`);
const RESERVED_HEADERS = new Set(["cookie", "anteroom-admission", "anteroom-ticket", "host"]);
const NOT_A_CIDR = "not a CIDR (an address range as address/prefix-length: '203.0.113.0/24')";
// Keys the HMAC secrets are compared through.
const PROCESS_KEY = randomBytes(32);

/**
 * One checked rule. `bytes`/`bits`: the network, for an address range; `digest`: the HMAC of the
 * secret, for a header (name lower-case) or a cookie.
 * @typedef {object} Rule
 * @property {"path-prefix" | "address-range" | "header" | "cookie"} kind
 * @property {string} [value]
 * @property {string} [name]
 * @property {number[]} [bytes]
 * @property {number} [bits]
 * @property {Buffer} [digest]
 */

export class RuleError extends TypeError {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "RuleError";
  }
}

/** @param {string} text */
const digest = (text) => createHmac("sha256", PROCESS_KEY).update(text, "utf8").digest();

/**
 * The bytes of an address (4 for IPv4, 16 for IPv6; `::ffff:a.b.c.d` is IPv4), or null.
 * @param {string} text
 * @returns {number[] | null}
 */
function addressBytes(text) {
  const v4 = parseIPv4(text);
  if (v4 !== null) return v4;
  const v6 = parseIPv6(text);
  if (v6 === null) return null;
  return v6.flatMap((group) => [group >> 8, group & 0xff]);
}

/**
 * @param {number[]} bytes
 * @param {number[]} network
 * @param {number} bits
 */
function inNetwork(bytes, network, bits) {
  if (bytes.length !== network.length) return false;
  for (let i = 0; i < bytes.length; i++) {
    const take = Math.max(0, Math.min(8, bits - i * 8));
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[i] & mask) !== (network[i] & mask)) return false;
  }
  return true;
}

/**
 * @param {unknown} value
 * @returns {string | null}
 */
function prefixProblem(value) {
  if (typeof value !== "string" || !value) return "must be a path prefix ('/static/'), not empty";
  if (value.length > MAX_VALUE_LENGTH) return `must be at most ${MAX_VALUE_LENGTH} characters`;
  if (!PLAIN_PREFIX.test(value)) return "must start with '/' and be printable ASCII without '%' or '\\' (decoded)";
  if (value.includes("//") || value.split("/").some((s) => s === "." || s === "..")) {
    return "must not hold '//' or a '.' or '..' segment";
  }
  if (value === "/") return "must name a path below '/' (a prefix of '/' would let every request through)";
  return null;
}

/**
 * The network of a CIDR as [bytes, bits], or why `value` is none.
 * @param {unknown} value
 * @returns {[number[], number] | string}
 */
function network(value) {
  if (typeof value !== "string" || !CIDR.test(value)) return NOT_A_CIDR;
  const slash = value.indexOf("/");
  const text = value.slice(0, slash);
  const bits = Number(value.slice(slash + 1));
  const v4 = parseIPv4(text);
  const bytes = v4 ?? parseIPv6(text)?.flatMap((group) => [group >> 8, group & 0xff]) ?? null;
  if (bytes === null || bits > bytes.length * 8) return NOT_A_CIDR;
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    if (bytes[i] & (0xff >> keep)) return "not a CIDR: host bits set (the range's first address, then /length)";
  }
  return [bytes, bits];
}

/**
 * @param {unknown} raw
 * @param {string} where
 * @returns {Rule}
 */
function parseOne(raw, where) {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new RuleError(`${where}: must be an object with a kind`);
  const rule = /** @type {Record<string, unknown>} */ (raw);
  const kind = /** @type {Rule["kind"]} */ (rule.kind);
  if (!KINDS.includes(/** @type {string} */ (kind))) throw new RuleError(`${where}.kind: must be one of ${KINDS.join(", ")}`);
  const allowed = kind === "path-prefix" || kind === "address-range" ? ["kind", "value"] : ["kind", "name", "secret"];
  for (const key of Object.keys(rule)) {
    if (!allowed.includes(key)) {
      const listed = [...allowed].sort().map((k) => `'${k}'`).join(", ");
      throw new RuleError(`${where}.${key}: unknown field (a ${kind} rule has [${listed}])`);
    }
  }
  if (kind === "path-prefix") {
    const why = prefixProblem(rule.value);
    if (why) throw new RuleError(`${where}.value: ${why}`);
    return { kind, value: /** @type {string} */ (rule.value) };
  }
  if (kind === "address-range") {
    const found = network(rule.value);
    if (typeof found === "string") throw new RuleError(`${where}.value: ${found}`);
    return { kind, value: /** @type {string} */ (rule.value), bytes: found[0], bits: found[1] };
  }
  let name = rule.name;
  if (typeof name !== "string" || !TOKEN.test(name)) throw new RuleError(`${where}.name: must be a ${kind} name (letters, digits, -, _ …)`);
  if (kind === "header") {
    name = name.toLowerCase();
    if (RESERVED_HEADERS.has(/** @type {string} */ (name))) throw new RuleError(`${where}.name: ${name} is read by the edge itself`);
  }
  const secret = rule.secret;
  if (typeof secret !== "string" || !SECRET.test(secret)) {
    throw new RuleError(`${where}.secret: must be printable ASCII of ${MIN_SECRET_LENGTH} to ${MAX_SECRET_LENGTH} characters`);
  }
  return { kind, name: /** @type {string} */ (name), digest: digest(secret) };
}

/**
 * Check a list of rules (secrets in clear); a `RuleError` names the first bad field
 * (`bypass[2].value: not a CIDR`).
 * @param {unknown} raw
 * @param {string} [fieldName]
 * @returns {Rule[]}
 */
export function parseRules(raw, fieldName = "bypass") {
  if (!Array.isArray(raw)) throw new RuleError(`${fieldName}: must be a list of rules`);
  if (raw.length > MAX_RULES) throw new RuleError(`${fieldName}: at most ${MAX_RULES} rules`);
  return raw.map((rule, i) => parseOne(rule, `${fieldName}[${i}]`));
}

/**
 * Cookie name -> value of a `Cookie` header (the first of a repeated name).
 * @param {string} header
 * @returns {Map<string, string>}
 */
export function parseCookies(header) {
  const found = new Map();
  for (const part of header.split(";")) {
    const text = part.trim();
    const eq = text.indexOf("=");
    const [key, value] = eq < 0 ? [text, ""] : [text.slice(0, eq), text.slice(eq + 1)];
    if (!found.has(key)) found.set(key, value);
  }
  return found;
}

/**
 * @param {string | null} text
 * @returns {number[] | null}
 */
function clientBytes(text) {
  if (!text) return null;
  const bytes = addressBytes(stripPythonSpace(text).split("%")[0]);
  if (bytes === null) return null;
  const mapped = bytes.length === 16 && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped ? bytes.slice(12) : bytes; // a v4 client on a dual-stack socket
}

/**
 * [index, rule] of the first rule that matches the request, or null. `path`: the plain reading
 * (null: none, and no prefix rule matches); `headers` by lower-case name; `cookies` by name.
 * @param {Rule[]} rules
 * @param {string | null} path
 * @param {string | null} clientAddress
 * @param {Record<string, string>} headers
 * @param {Map<string, string>} cookies
 * @returns {[number, Rule] | null}
 */
export function match(rules, path, clientAddress, headers, cookies) {
  /** @type {number[] | null | undefined} */
  let address; // parsed once, when a range rule asks
  for (const [index, rule] of rules.entries()) {
    if (rule.kind === "path-prefix") {
      const prefix = /** @type {string} */ (rule.value);
      if (path !== null && (path === prefix || path.startsWith(`${prefix.replace(/\/+$/, "")}/`))) return [index, rule];
    } else if (rule.kind === "address-range") {
      if (address === undefined) address = clientBytes(clientAddress);
      if (address && inNetwork(address, /** @type {number[]} */ (rule.bytes), /** @type {number} */ (rule.bits))) return [index, rule];
    } else {
      const presented = rule.kind === "header" ? headers[/** @type {string} */ (rule.name)] : cookies.get(/** @type {string} */ (rule.name));
      if (presented !== undefined && timingSafeEqual(digest(presented), /** @type {Buffer} */ (rule.digest))) return [index, rule];
    }
  }
  return null;
}
