/**
 * Signed agents (the IETF Web Bot Auth drafts) at the Node edge: the same rules as the Python
 * SDK's `structured_fields.py`, `message_signatures.py` and `signed_agents.py` (docs/edge.md,
 * "Signed agents"), with Node's own Ed25519 (`crypto.verify`).
 *
 * A signed agent's request carries an RFC 9421 signature tagged `web-bot-auth`, made with Ed25519
 * over at least `@authority` and the `Signature-Agent` that names its key directory, with
 * `created` and `expires`, a `nonce` used once, and the `keyid` (JWK thumbprint) of a key the
 * directory lists. `AgentVerifier.verify` answers the agent's directory URL, or throws a
 * `SignatureError` whose `reason` says what failed: `malformed`, `untagged`, `algorithm`,
 * `components`, `expired`, `early`, `window`, `nonce`, `replayed`, `directory`, `unknown-key`,
 * `forged`.
 */
import { createHash, createPublicKey, verify as cryptoVerify } from "node:crypto";
import { readFileSync } from "node:fs";
import { lookup as dnsLookup } from "node:dns";
import https from "node:https";
import { isIP } from "node:net";
import tls from "node:tls";

export const TAG = "web-bot-auth";
export const AGENT_POLICIES = ["queue", "lane", "refuse"];
const ANY_AGENT = "*";
const MAX_AGENT_RULES = 50;
const MAX_WINDOW_SEC = 86_400;
const SKEW_SEC = 60;
const MAX_DIRECTORY_BYTES = 65_536;
const LABEL = "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?";
const HOST = new RegExp(`^(?=[^:]{1,253}(:|$))${LABEL}(\\.${LABEL})*(:\\d{1,5})?$`);
export const DIRECTORY_TYPE = "application/http-message-signatures-directory+json";

export class SignatureError extends Error {
  /**
   * @param {string} reason a short code
   * @param {string} text why
   */
  constructor(reason, text) {
    super(text);
    this.reason = reason;
  }
}

class FieldError extends Error {}

// -- structured fields (RFC 8941), the part signatures need ---------------------------------

const KEY = /[a-z*][a-z0-9_\-.*]*/y;
const TOKEN = /[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]*/y;
const NUMBER = /-?[0-9]{1,15}(\.[0-9]{1,3})?/y;
const BYTES = /:([A-Za-z0-9+/=]*):/y;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A bare token, told apart from a string when serialized. */
export class Token {
  /** @param {string} value */
  constructor(value) {
    this.value = value;
  }
}

/** @typedef {number | string | Buffer | boolean | Token} Bare */
/** @typedef {{value: Bare, params: Map<string, Bare>}} Item */
/** @typedef {{items: Item[], params: Map<string, Bare>, inner: true}} InnerList */

class Reader {
  /** @param {string} text */
  constructor(text) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is the rule
    if (!/^[\x00-\x7f]*$/.test(text)) throw new FieldError("holds characters outside ASCII");
    this.text = text;
    this.at = 0;
  }

  peek() {
    return this.text[this.at] ?? "";
  }

  /** @param {string} char */
  expect(char) {
    if (this.peek() !== char) throw new FieldError(`expected ${char} at ${this.at}`);
    this.at += 1;
  }

  /** @param {RegExp} pattern sticky */
  match(pattern) {
    pattern.lastIndex = this.at;
    const found = pattern.exec(this.text);
    if (found) this.at = pattern.lastIndex;
    return found;
  }
}

/** @param {Reader} r */
function key(r) {
  const found = r.match(KEY);
  if (!found) throw new FieldError(`expected a key at ${r.at}`);
  return found[0];
}

/** @param {Reader} r @returns {Bare} */
function bareItem(r) {
  const char = r.peek();
  if (char === '"') {
    r.at += 1;
    let out = "";
    for (;;) {
      const c = r.peek();
      if (c === "") throw new FieldError("a string is not closed");
      r.at += 1;
      if (c === '"') return out;
      if (c === "\\") {
        const escaped = r.peek();
        if (escaped !== '"' && escaped !== "\\") throw new FieldError(`a bad escape at ${r.at}`);
        r.at += 1;
        out += escaped;
      } else if (c < " " || c > "~") {
        throw new FieldError(`a control character in a string at ${r.at}`);
      } else {
        out += c;
      }
    }
  }
  if (char === ":") {
    const found = r.match(BYTES);
    if (!found) throw new FieldError(`a byte sequence is not closed at ${r.at}`);
    if (!BASE64.test(found[1])) throw new FieldError("a byte sequence is not base64");
    return Buffer.from(found[1], "base64");
  }
  if (char === "?") {
    r.at += 1;
    const flag = r.peek();
    if (flag !== "0" && flag !== "1") throw new FieldError(`a boolean must be ?0 or ?1 at ${r.at}`);
    r.at += 1;
    return flag === "1";
  }
  if (char === "-" || (char >= "0" && char <= "9")) {
    const found = r.match(NUMBER);
    if (!found) throw new FieldError(`a number is malformed at ${r.at}`);
    return found[1] ? Number.parseFloat(found[0]) : Number.parseInt(found[0], 10);
  }
  const found = r.match(TOKEN);
  if (!found) throw new FieldError(`expected an item at ${r.at}`);
  return new Token(found[0]);
}

/** @param {Reader} r */
function params(r) {
  /** @type {Map<string, Bare>} */
  const out = new Map();
  while (r.peek() === ";") {
    r.at += 1;
    while (r.peek() === " ") r.at += 1;
    const name = key(r);
    let value = /** @type {Bare} */ (true);
    if (r.peek() === "=") {
      r.at += 1;
      value = bareItem(r);
    }
    out.delete(name);
    out.set(name, value);
  }
  return out;
}

/** @param {Reader} r @returns {Item | InnerList} */
function member(r) {
  if (r.peek() !== "(") return { value: bareItem(r), params: params(r) };
  r.at += 1;
  const items = [];
  for (;;) {
    while (r.peek() === " ") r.at += 1;
    if (r.peek() === ")") {
      r.at += 1;
      return { items, params: params(r), inner: true };
    }
    items.push({ value: bareItem(r), params: params(r) });
    if (r.peek() !== " " && r.peek() !== ")") throw new FieldError(`expected a space or ')' at ${r.at}`);
  }
}

/**
 * A dictionary field's members by name (a repeated name keeps its last value).
 * @param {string} text
 * @returns {Map<string, Item | InnerList>}
 */
export function parseDictionary(text) {
  const r = new Reader(text);
  while (r.peek() === " ") r.at += 1;
  /** @type {Map<string, Item | InnerList>} */
  const out = new Map();
  while (r.peek()) {
    const name = key(r);
    let value;
    if (r.peek() === "=") {
      r.at += 1;
      value = member(r);
    } else {
      value = { value: true, params: params(r) };
    }
    out.delete(name);
    out.set(name, value);
    while (r.peek() === " " || r.peek() === "\t") r.at += 1;
    if (!r.peek()) break;
    r.expect(",");
    while (r.peek() === " " || r.peek() === "\t") r.at += 1;
    if (!r.peek()) throw new FieldError("a trailing comma");
  }
  return out;
}

/** @param {string} text @returns {Item} */
function parseItem(text) {
  const r = new Reader(text);
  while (r.peek() === " ") r.at += 1;
  const item = { value: bareItem(r), params: params(r) };
  while (r.peek() === " ") r.at += 1;
  if (r.peek()) throw new FieldError(`text after the item at ${r.at}`);
  return item;
}

/** @param {Bare} value */
function serializeBare(value) {
  if (typeof value === "boolean") return value ? "?1" : "?0";
  if (value instanceof Token) return value.value;
  if (Buffer.isBuffer(value)) return `:${value.toString("base64")}:`;
  if (typeof value === "number") {
    if (Number.isInteger(value) && !String(value).includes(".")) return String(value);
    return value % 1 ? value.toFixed(3).replace(/0+$/, "").replace(/\.$/, "") : value.toFixed(1);
  }
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** @param {Map<string, Bare>} p */
function serializeParams(p) {
  return [...p].map(([name, value]) => (value === true ? `;${name}` : `;${name}=${serializeBare(value)}`)).join("");
}

/** @param {Item} item */
function serializeItem(item) {
  return serializeBare(item.value) + serializeParams(item.params);
}

/** @param {InnerList} inner */
function serializeInnerList(inner) {
  return `(${inner.items.map(serializeItem).join(" ")})${serializeParams(inner.params)}`;
}

// -- message signatures (RFC 9421) ----------------------------------------------------------

/**
 * The parts of a request a signature may cover; `headers` lower-case names, values combined.
 * @typedef {{method: string, scheme: string, authority: string, path: string, query: string,
 *   headers: Record<string, string>}} SignedRequest
 */

/** @typedef {{label: string, covered: InnerList, signature: Buffer}} SignatureInput */

/**
 * Every labelled signature the request carries.
 * @param {SignedRequest} request
 * @returns {SignatureInput[]}
 */
export function signaturesOf(request) {
  const rawInput = request.headers["signature-input"];
  const rawSignature = request.headers.signature;
  if (rawInput === undefined && rawSignature === undefined) return [];
  if (rawInput === undefined || rawSignature === undefined) {
    throw new SignatureError("malformed", "Signature-Input and Signature come together");
  }
  let inputs;
  let signatures;
  try {
    inputs = parseDictionary(rawInput);
    signatures = parseDictionary(rawSignature);
  } catch (error) {
    if (error instanceof FieldError) throw new SignatureError("malformed", `a signature header is malformed: ${error.message}`);
    throw error;
  }
  const out = [];
  for (const [label, covered] of inputs) {
    const signed = signatures.get(label);
    if (!("inner" in covered) || !covered.items.every((i) => typeof i.value === "string")) {
      throw new SignatureError("malformed", `Signature-Input ${label} is not a list of names`);
    }
    if (!signed || "inner" in signed || !Buffer.isBuffer(signed.value)) {
      throw new SignatureError("malformed", `Signature ${label} is missing or not bytes`);
    }
    out.push({ label, covered, signature: /** @type {Buffer} */ (signed.value) });
  }
  return out;
}

/** @param {string} scheme @param {string} authority */
function authorityOf(scheme, authority) {
  const host = authority.toLowerCase();
  const fallback = /** @type {Record<string, string>} */ ({ https: ":443", http: ":80" })[scheme.toLowerCase()];
  return fallback && host.endsWith(fallback) ? host.slice(0, -fallback.length) : host;
}

/** @param {SignedRequest} request @param {string} name */
function derived(request, name) {
  const path = request.path || "/";
  const query = `?${request.query}`;
  switch (name) {
    case "@method":
      return request.method.toUpperCase();
    case "@authority":
      return authorityOf(request.scheme, request.authority);
    case "@scheme":
      return request.scheme.toLowerCase();
    case "@target-uri":
      return `${request.scheme.toLowerCase()}://${authorityOf(request.scheme, request.authority)}${path}${request.query ? query : ""}`;
    case "@request-target":
      return path + (request.query ? query : "");
    case "@path":
      return path;
    case "@query":
      return query;
    default:
      throw new SignatureError("components", `the derived component ${name} is not supported`);
  }
}

/** @param {SignedRequest} request @param {Item} item */
function componentValue(request, item) {
  const name = String(item.value);
  if (name.startsWith("@")) {
    if (item.params.size) throw new SignatureError("components", `${name} takes no parameters here`);
    return derived(request, name);
  }
  if (name !== name.toLowerCase()) throw new SignatureError("components", `component names are lower case: ${name}`);
  const value = request.headers[name];
  if (value === undefined) throw new SignatureError("components", `the signed header ${name} is not in the request`);
  if (!item.params.size) return value;
  const member = item.params.get("key");
  if (item.params.size !== 1 || typeof member !== "string") {
    throw new SignatureError("components", `${name}: only the key parameter is understood`);
  }
  let members;
  try {
    members = parseDictionary(value);
  } catch {
    throw new SignatureError("components", `${name} is not a dictionary`);
  }
  const found = members.get(member);
  if (!found || "inner" in found) throw new SignatureError("components", `${name} has no member ${member}`);
  return serializeItem(found);
}

/**
 * The bytes a signature is made over (RFC 9421 section 2.5).
 * @param {SignedRequest} request
 * @param {InnerList} covered
 */
export function signatureBase(request, covered) {
  const lines = [];
  const seen = new Set();
  for (const item of covered.items) {
    const identifier = serializeItem(item);
    if (seen.has(identifier)) throw new SignatureError("components", `${identifier} is covered twice`);
    seen.add(identifier);
    const value = componentValue(request, item);
    if (/[\r\n]/.test(value)) throw new SignatureError("components", `${identifier} holds a line break`);
    lines.push(`${identifier}: ${value}`);
  }
  lines.push(`"@signature-params": ${serializeInnerList(covered)}`);
  const text = lines.join("\n");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is the rule
  if (!/^[\x00-\x7f]*$/.test(text)) throw new SignatureError("components", "a signed value is not ASCII");
  return Buffer.from(text, "ascii");
}

/** @param {Record<string, unknown>} jwk the RFC 7638 thumbprint of an Ed25519 JWK */
export function jwkThumbprint(jwk) {
  const text = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return createHash("sha256").update(text).digest("base64url");
}

/** @param {unknown} jwk @returns {import("node:crypto").KeyObject | null} */
function ed25519Key(jwk) {
  const j = /** @type {Record<string, unknown>} */ (jwk);
  if (!j || typeof j !== "object" || j.kty !== "OKP" || j.crv !== "Ed25519" || typeof j.x !== "string") return null;
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(j.x) || Buffer.from(j.x, "base64url").length !== 32) return null;
  try {
    return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: j.x.replace(/=+$/, "") }, format: "jwk" });
  } catch {
    return null;
  }
}

/**
 * The key directory a `Signature-Agent` URL names: the URL itself when it has a path, else its
 * origin's well-known directory.
 * @param {string} agent
 */
export function directoryUrl(agent) {
  let url;
  try {
    url = new URL(agent);
  } catch {
    throw new SignatureError("directory", "the Signature-Agent must be an https URL");
  }
  if (url.protocol !== "https:" || !url.hostname || url.username || url.password) {
    throw new SignatureError("directory", "the Signature-Agent must be an https URL");
  }
  const rest = agent.slice(agent.indexOf("//") + 2);
  const slash = rest.search(/[/?#]/);
  const path = slash < 0 ? "" : rest.slice(slash).split(/[?#]/)[0];
  if (path === "" || path === "/") return `https://${url.host}/.well-known/http-message-signatures-directory`;
  return agent;
}

// -- key directories, nonces, the Web Bot Auth rules ----------------------------------------

/** @typedef {(url: string) => Promise<{status: number, cacheControl: string, body: Buffer | string}>} Fetch */

/**
 * GET over HTTPS with node:https, the certificate checked (against `caFile` too if given).
 * @param {number} timeout seconds
 * @param {string} [caFile]
 * @returns {Fetch}
 */
export function httpsFetch(timeout, caFile, privateDirectories = false) {
  // A CA file is trusted besides Node's roots, not instead of them.
  const ca = caFile ? [...tls.rootCertificates, readFileSync(caFile, "utf8")] : undefined;
  // Anyone names a directory in Signature-Agent: unless told, the connection goes only to a
  // public address, judged on the address connected to (the edge is no way into the site's
  // own network). No redirect is followed: node:https follows none.
  const lookup = privateDirectories ? undefined : publicLookup;
  return (url) =>
    new Promise((resolve, reject) => {
      const options = { headers: { accept: DIRECTORY_TYPE }, timeout: timeout * 1000, ...(ca ? { ca } : {}), ...(lookup ? { lookup } : {}) };
      const request = https.get(url, options, (answer) => {
        /** @type {Buffer[]} */
        const chunks = [];
        let size = 0;
        answer.on("data", (chunk) => {
          size += chunk.length;
          if (size > MAX_DIRECTORY_BYTES) request.destroy(new Error("too big"));
          else chunks.push(chunk);
        });
        answer.on("end", () => resolve({ status: answer.statusCode ?? 0, cacheControl: String(answer.headers["cache-control"] ?? ""), body: Buffer.concat(chunks) }));
        answer.on("error", reject);
      });
      request.on("timeout", () => request.destroy(new Error("timeout")));
      request.on("error", reject);
    });
}

/**
 * Is `address` one on the public internet? (Not loopback, private, link-local, shared, unique
 * local, multicast, documentation or unspecified ranges.)
 * @param {string} address
 */
export function isPublicAddress(address) {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return isPublicAddress(mapped[1]);
  if (isIP(address) === 4) {
    const [a, b, c] = address.split(".").map(Number);
    return !(a === 0 || a === 10 || a === 127 || a >= 224 || (a === 100 && b >= 64 && b < 128) ||
      (a === 169 && b === 254) || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168) ||
      (a === 192 && b === 0 && (c === 0 || c === 2)) || (a === 198 && (b === 18 || b === 19)) ||
      (a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113));
  }
  if (isIP(address) === 6) {
    const lower = address.toLowerCase();
    if (lower === "::" || lower === "::1") return false;
    const first = parseInt(lower.split(":")[0] || "0", 16);
    // fc00::/7 unique local, fe80::/10 link-local, ff00::/8 multicast, 2001:db8::/32 documentation
    if ((first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xff00) === 0xff00) return false;
    if (lower.startsWith("2001:db8:") || lower.startsWith("2001:0db8:")) return false;
    return true;
  }
  return false;
}

/**
 * `dns.lookup`, refusing a name whose every address is not public (node:https connects to the
 * address answered here, so the check holds for the connection itself).
 * @param {string} hostname
 * @param {any} options
 * @param {(error: Error | null, address?: any, family?: number) => void} callback
 */
function publicLookup(hostname, options, callback) {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error);
    const usable = /** @type {{address: string, family: number}[]} */ (addresses).filter((a) => isPublicAddress(a.address));
    if (usable.length === 0) return callback(new Error(`${hostname} has no public address`));
    if (options?.all) return callback(null, usable);
    callback(null, usable[0].address, usable[0].family);
  });
}

/** Agents' key directories, fetched once and kept for their max-age (bounded in number). */
export class Directories {
  /**
   * @param {Fetch} fetch
   * @param {() => number} clock seconds
   * @param {number} [most]
   */
  constructor(fetch, clock, most = 1_000) {
    this.fetch = fetch;
    this.clock = clock;
    this.most = most;
    /** @type {Map<string, {until: number, keys: Map<string, import("node:crypto").KeyObject> | null}>} */
    this.kept = new Map();
    this.fetches = 0;
  }

  /**
   * The directory's Ed25519 keys by thumbprint; SignatureError `directory` if it cannot be had.
   * @param {string} url
   */
  async keys(url) {
    const now = this.clock();
    let kept = this.kept.get(url);
    if (kept === undefined || kept.until <= now) kept = await this.load(url, now);
    if (kept.keys === null) throw new SignatureError("directory", `the key directory ${url} cannot be read`);
    return kept.keys;
  }

  /** @param {string} url @param {number} now */
  async load(url, now) {
    this.fetches += 1;
    let answer = { status: 0, cacheControl: "", body: /** @type {Buffer | string} */ ("") };
    try {
      answer = await this.fetch(url);
    } catch {
      // a failed fetch: remembered briefly below, never an error of the request
    }
    const keys = answer.status === 200 ? parseDirectory(answer.body) : null;
    let until = now + 30;
    if (keys !== null) {
      const found = /max-age=(\d+)/.exec(answer.cacheControl || "");
      const age = found ? Number(found[1]) : 300;
      until = now + Math.min(Math.max(age, 60), 86_400);
    }
    const entry = { until, keys };
    this.kept.delete(url);
    this.kept.set(url, entry);
    while (this.kept.size > this.most) this.kept.delete(this.kept.keys().next().value);
    return entry;
  }
}

/** @param {Buffer | string} body */
function parseDirectory(body) {
  const text = Buffer.isBuffer(body) ? body.toString("utf8") : body;
  if (Buffer.byteLength(text) > MAX_DIRECTORY_BYTES) return null;
  let document;
  try {
    document = JSON.parse(text);
  } catch {
    return null;
  }
  const listed = document && typeof document === "object" ? document.keys : undefined;
  if (!Array.isArray(listed)) return null;
  const keys = new Map();
  for (const jwk of listed) {
    const key = ed25519Key(jwk);
    if (key !== null) keys.set(jwkThumbprint(jwk), key);
  }
  return keys;
}

/** Nonces seen, each until its signature expires: a second use is a replay. */
export class Nonces {
  constructor(most = 200_000) {
    this.most = most;
    /** @type {Map<string, number>} */
    this.until = new Map();
  }

  /**
   * Book `nonce` of `keyid` until `until`; false when it was booked already (or the book is
   * full of live nonces: refused rather than forget one that could be replayed).
   * @param {string} keyid @param {string} nonce @param {number} until @param {number} now
   */
  firstUse(keyid, nonce, until, now) {
    if (this.until.size >= this.most) {
      for (const [name, end] of this.until) if (end <= now) this.until.delete(name);
    }
    const name = `${keyid} ${nonce}`;
    const known = this.until.get(name);
    if ((known !== undefined && known > now) || this.until.size >= this.most) return false;
    this.until.set(name, until);
    return true;
  }
}

/** Checks Web Bot Auth signatures: `verify` answers the signer, null for none, or throws. */
export class AgentVerifier {
  /**
   * @param {Directories} directories
   * @param {Nonces} nonces
   * @param {() => number} clock seconds
   */
  constructor(directories, nonces, clock, maxWindow = MAX_WINDOW_SEC) {
    this.directories = directories;
    this.nonces = nonces;
    this.clock = clock;
    this.maxWindow = maxWindow;
  }

  /**
   * @param {SignedRequest} request
   * @param {(directory: string) => boolean} [wanted] false: a directory not to fetch (anyone's)
   * @returns {Promise<{directory: string, keyid: string} | null>}
   */
  async verify(request, wanted = (/** @type {string} */ _directory) => true) {
    const tagged = signaturesOf(request).filter((s) => s.covered.params.get("tag") === TAG);
    if (tagged.length === 0) {
      if (request.headers["signature-agent"] !== undefined) throw new SignatureError("untagged", `no signature is tagged ${TAG}`);
      return null;
    }
    const signed = tagged[0];
    const now = this.clock();
    const [expires, keyid, nonce] = this.params(signed, now);
    const directory = directoryUrl(this.agent(request, signed));
    // a host the room's setting does not name: anyone's, and its directory never fetched
    if (!wanted(directory)) return null;
    const key = (await this.directories.keys(directory)).get(keyid);
    if (key === undefined) throw new SignatureError("unknown-key", "the key is not in the agent's directory");
    const base = signatureBase(request, signed.covered);
    const good = signed.signature.length === 64 && cryptoVerify(null, base, key, signed.signature);
    if (!good) throw new SignatureError("forged", "the signature does not match the request");
    // Booked last: a forged request must not burn the nonce of a genuine one.
    if (!this.nonces.firstUse(keyid, nonce, expires, now)) throw new SignatureError("replayed", "this signature's nonce was used before");
    return { directory, keyid };
  }

  /** @param {SignatureInput} signed @param {number} now @returns {[number, string, string]} */
  params(signed, now) {
    const p = signed.covered.params;
    const alg = p.has("alg") ? p.get("alg") : "ed25519";
    if (alg !== "ed25519") throw new SignatureError("algorithm", "only ed25519 signatures are accepted");
    const created = p.get("created");
    const expires = p.get("expires");
    if (!Number.isInteger(created) || !Number.isInteger(expires)) throw new SignatureError("malformed", "created and expires must be integers");
    const [c, e] = [/** @type {number} */ (created), /** @type {number} */ (expires)];
    if (e <= now) throw new SignatureError("expired", "the signature has expired");
    if (c > now + SKEW_SEC) throw new SignatureError("early", "the signature is created in the future");
    if (e - c > this.maxWindow || e <= c) throw new SignatureError("window", `a signature may last ${this.maxWindow} s at most`);
    const keyid = p.get("keyid");
    const nonce = p.get("nonce");
    if (typeof keyid !== "string" || !keyid) throw new SignatureError("malformed", "the keyid is missing");
    if (typeof nonce !== "string" || nonce.length < 1 || nonce.length > 256) throw new SignatureError("nonce", "a nonce is required");
    if (!signed.covered.items.some((i) => i.value === "@authority")) throw new SignatureError("components", "the signature must cover @authority");
    return [e, keyid, nonce];
  }

  /** @param {SignedRequest} request @param {SignatureInput} signed */
  agent(request, signed) {
    const raw = request.headers["signature-agent"];
    const covered = signed.covered.items.filter((i) => i.value === "signature-agent");
    if (raw === undefined || covered.length === 0) throw new SignatureError("components", "the signature must cover the Signature-Agent");
    const member = covered[0].params.get("key");
    let item;
    try {
      item = member === undefined ? parseItem(raw) : parseDictionary(raw).get(String(member));
    } catch {
      throw new SignatureError("malformed", "the Signature-Agent is malformed");
    }
    if (!item || "inner" in item || typeof item.value !== "string") throw new SignatureError("malformed", "the Signature-Agent is not a URL string");
    return item.value;
  }
}

/**
 * Why `value` is not an `agents` setting (an object: host or "*" → policy), or null.
 * @param {unknown} value
 */
export function agentsProblem(value) {
  const quoted = AGENT_POLICIES.map((p) => `"${p}"`);
  const choices = `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
  if (!value || typeof value !== "object" || Array.isArray(value)) return `must be an object mapping a key directory's host (or "*") to ${choices}`;
  const entries = Object.entries(value);
  if (entries.length > MAX_AGENT_RULES) return `names at most ${MAX_AGENT_RULES} hosts`;
  for (const [host, policy] of entries) {
    if (host !== ANY_AGENT && !HOST.test(host)) return `${JSON.stringify(host.slice(0, 64))}: not a host in lower case ("agent.example", "*" for any agent)`;
    if (!AGENT_POLICIES.includes(policy)) return `${JSON.stringify(host)}: the policy must be ${choices}, not ${JSON.stringify(policy)}`;
  }
  return null;
}

/**
 * The policy `rules` give the agent whose key directory is `directory`: its host's, else "*"'s,
 * else null (anyone's).
 * @param {Record<string, string>} rules
 * @param {string} directory
 */
export function policyFor(rules, directory) {
  const host = new URL(directory).host.toLowerCase();
  return rules[host] ?? rules[ANY_AGENT] ?? null;
}
