/**
 * The few `urllib.parse` and WSGI rules the edge middleware relies on, so URLs it builds are
 * spelled exactly as the Python middleware spells them.
 */

const ALWAYS_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~";
const ASCII_RUNS = /([\x00-\x7f]+)/;
const PERCENT_BYTE = /%([0-9A-Fa-f]{2})/g;
const HEX_PAIR = /^[0-9A-Fa-f]{2}/;
const UTF8 = new TextDecoder("utf-8"); // replaces bad sequences, like Python's errors="replace"

/**
 * Percent-encode `bytes`, keeping unreserved characters and `safe`.
 * @param {Iterable<number>} bytes
 * @param {string} safe
 */
function quoteBytes(bytes, safe) {
  let out = "";
  for (const byte of bytes) {
    const char = String.fromCharCode(byte);
    if (byte < 0x80 && (ALWAYS_SAFE.includes(char) || safe.includes(char))) out += char;
    else out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * Python's `quote_plus(text, safe="")`: UTF-8, spaces as `+`.
 * @param {string} text
 */
export function quotePlus(text) {
  return quoteBytes(Buffer.from(text, "utf8"), " ").replaceAll(" ", "+");
}

/**
 * Python's `quote(text)` (safe `/`), for strings of UTF-8 text.
 * @param {string} text
 */
export function quote(text) {
  return quoteBytes(Buffer.from(text, "utf8"), "/");
}

/**
 * Re-encode a WSGI-style path (one char per byte, as `wsgiPath` gives) with `/` kept.
 * @param {string} path
 */
export function quotePath(path) {
  // Python's edge quotes PATH_INFO as UTF-8 text although WSGI gives it as latin-1 bytes, which
  // doubles non-ASCII paths; encoding the bytes back as bytes is the same for every ASCII path.
  const bytes = [...path].flatMap((char) => {
    const code = /** @type {number} */ (char.codePointAt(0));
    return code < 0x100 ? [code] : [...Buffer.from(char, "utf8")];
  });
  return quoteBytes(bytes, "/");
}

/**
 * Percent-decoding to one char per byte: how a WSGI server hands over PATH_INFO (PEP 3333).
 * @param {string} rawPath
 */
export function wsgiPath(rawPath) {
  return rawPath.replace(PERCENT_BYTE, (_, hex) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/**
 * Python's `unquote` (UTF-8, errors replaced); non-ASCII characters pass as they are.
 * @param {string} text
 */
function unquote(text) {
  if (!text.includes("%")) return text;
  return text
    .split(ASCII_RUNS)
    .map((part, index) => {
      if (index % 2 === 0) return part;
      const bytes = [];
      const pieces = part.split("%");
      for (const char of pieces[0]) bytes.push(char.charCodeAt(0));
      for (const piece of pieces.slice(1)) {
        // A '%' without two hex digits after it stays a literal '%'.
        const escaped = HEX_PAIR.test(piece);
        if (escaped) bytes.push(Number.parseInt(piece.slice(0, 2), 16));
        for (const char of escaped ? piece.slice(2) : `%${piece}`) bytes.push(char.charCodeAt(0));
      }
      return UTF8.decode(Uint8Array.from(bytes));
    })
    .join("");
}

/**
 * Python's `parse_qsl(query, keep_blank_values=True)`: `&`-separated pairs, decoded, in order.
 * @param {string} query
 * @returns {[string, string][]}
 */
export function parseQsl(query) {
  /** @type {[string, string][]} */
  const pairs = [];
  for (const field of query ? query.split("&") : []) {
    if (!field) continue;
    const equals = field.indexOf("=");
    const [name, value] = equals < 0 ? [field, ""] : [field.slice(0, equals), field.slice(equals + 1)];
    pairs.push([unquote(name.replaceAll("+", " ")), unquote(value.replaceAll("+", " "))]);
  }
  return pairs;
}

/**
 * Python's `urlencode(pairs)`.
 * @param {Iterable<[string, string]>} pairs
 */
export function urlencode(pairs) {
  return Array.from(pairs, ([name, value]) => `${quotePlus(name)}=${quotePlus(value)}`).join("&");
}
