/**
 * IP address parsing with exactly the rules of Python's `ipaddress.ip_address`, so a network tag
 * computed here matches the one Anteroom (Python) signed into the admission's `qi` claim.
 */

// Python's str.isspace() set, which its strip() and split() use (JS's \s differs: it lacks
// \x1c-\x1f and \x85 and has \ufeff).
export const PYTHON_SPACE =
  "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const EDGES = new RegExp(`^[${PYTHON_SPACE}]+|[${PYTHON_SPACE}]+$`, "g");
const DECIMAL = /^[0-9]+$/;
const HEX = /^[0-9a-fA-F]*$/;

/**
 * Python's `str.strip()`.
 * @param {string} text
 */
export function stripPythonSpace(text) {
  return text.replace(EDGES, "");
}

/**
 * The four bytes of a dotted-quad IPv4 address, or null.
 * @param {string} text
 */
export function parseIPv4(text) {
  const octets = text.split(".");
  if (octets.length !== 4) return null;
  const bytes = [];
  for (const octet of octets) {
    // Leading zeros are refused, as strictly as glibc's inet_pton (Python's bpo-36384).
    if (!DECIMAL.test(octet) || octet.length > 3 || (octet !== "0" && octet[0] === "0")) return null;
    const value = Number(octet);
    if (value > 255) return null;
    bytes.push(value);
  }
  return bytes;
}

/**
 * @param {string} hextet
 * @returns {number | null}
 */
function parseHextet(hextet) {
  if (!HEX.test(hextet) || hextet.length > 4 || hextet.length === 0) return null;
  return Number.parseInt(hextet, 16);
}

/**
 * The eight 16-bit groups of an IPv6 address (scope id allowed and ignored), or null.
 * @param {string} text
 */
export function parseIPv6(text) {
  if (text.includes("/")) return null;
  const percent = text.indexOf("%");
  if (percent >= 0) {
    const scope = text.slice(percent + 1);
    if (!scope || scope.includes("%")) return null;
    text = text.slice(0, percent);
  }
  if (!text) return null;
  const parts = text.split(":");
  if (parts.length < 3) return null;
  if (parts[parts.length - 1].includes(".")) {
    const v4 = parseIPv4(/** @type {string} */ (parts.pop()));
    if (v4 === null) return null;
    parts.push(((v4[0] << 8) | v4[1]).toString(16), ((v4[2] << 8) | v4[3]).toString(16));
  }
  if (parts.length > 9) return null;
  // An empty part between the ends is the one '::' allowed.
  let skipIndex = null;
  for (let i = 1; i < parts.length - 1; i++) {
    if (!parts[i]) {
      if (skipIndex !== null) return null;
      skipIndex = i;
    }
  }
  let high;
  let low;
  if (skipIndex !== null) {
    high = skipIndex;
    low = parts.length - skipIndex - 1;
    if (!parts[0] && --high) return null; // a leading ':' only as '::'
    if (!parts[parts.length - 1] && --low) return null; // a trailing ':' only as '::'
    if (8 - (high + low) < 1) return null;
  } else {
    if (parts.length !== 8 || !parts[0] || !parts[parts.length - 1]) return null;
    high = 8;
    low = 0;
  }
  const groups = [];
  for (let i = 0; i < high; i++) groups.push(parseHextet(parts[i]));
  while (groups.length < 8 - low) groups.push(0);
  for (let i = parts.length - low; i < parts.length; i++) groups.push(parseHextet(parts[i]));
  return groups.includes(null) ? null : /** @type {number[]} */ (groups);
}

/**
 * What identifies the network of `ip`: `"4"` + the IPv4 address, or `"6"` + the IPv6 /64.
 * Throws TypeError for anything that is not an IP address.
 * @param {string} ip
 */
export function networkBytes(ip) {
  if (typeof ip !== "string") throw new TypeError(`not an IP address: ${String(ip)}`);
  const text = stripPythonSpace(ip);
  const v4 = parseIPv4(text);
  if (v4 !== null) return Buffer.from([0x34, ...v4]);
  const v6 = parseIPv6(text);
  if (v6 === null) throw new TypeError(`not an IP address: ${JSON.stringify(ip)}`);
  // A v4 client reaching a dual-stack socket (::ffff:a.b.c.d) is still the same v4 network.
  if (v6.slice(0, 5).every((group) => group === 0) && v6[5] === 0xffff) {
    return Buffer.from([0x34, v6[6] >> 8, v6[6] & 0xff, v6[7] >> 8, v6[7] & 0xff]);
  }
  // One subscriber usually holds a whole /64; privacy addresses rotate inside it.
  const prefix = v6.slice(0, 4).flatMap((group) => [group >> 8, group & 0xff]);
  return Buffer.from([0x36, ...prefix]);
}
