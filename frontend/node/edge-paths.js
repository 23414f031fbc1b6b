/**
 * Which room protects a request path, read every way a router could read it. The same rules as
 * the Python `anteroom.sdk.edge_paths` (its docstring says why each reading is there); both pass
 * `tests/fixtures/edge_cases.json`.
 *
 * - Repeated slashes are collapsed and, unless the routes are case-sensitive, case is ignored.
 * - Every *reading* of the path is matched: bytes as they are (one char per byte), as UTF-8 with
 *   invalid bytes replaced or dropped, with a missing leading `/` added, with the mount prefix
 *   and with the request's own script name, and (routes ignoring case) lower-cased and folded as
 *   Unicode-aware routers fold (`ſ` -> `s`, `K` -> `k`, `ı`/`İ` -> `i`). Readings that disagree
 *   about the room make the request *ambiguous*.
 * - A path is ambiguous too when its spelling leaves the route to the router: a `.` or `..`
 *   segment (also spelled `%2E`), a backslash, a NUL, an encoded `/` or `\` (`%2F`, `%5C`, `%00`
 *   as sent), or a `%` that is not an escape, if any reading of it is protected.
 * - An ambiguous request is refused (`queue:ambiguous-path`) whatever it carries; one no reading
 *   protects passes. `languages` names language prefixes a route may follow (`/fr/checkout`).
 */

const SLASHES = /\/{2,}/g;
// Escapes that make a separator or a terminator out of data, and a '%' that escapes nothing.
const ENCODED_SEPARATOR = /%(?:2f|5c|00)/i;
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;
// A path with one reading: printable ASCII but the backslash, from a leading '/' (and no "/.").
const PLAIN = /^\/[!-[\]-~]*$/;
const UTF8 = new TextDecoder("utf-8"); // replaces bad sequences, like Python's errors="replace"

/**
 * The path of a request target as sent: no scheme and host (absolute form), no query.
 * @param {string} target
 */
export function rawPathOf(target) {
  const path = target.replace(ABSOLUTE_FORM, "") || "/";
  const mark = path.indexOf("?");
  return mark < 0 ? path : path.slice(0, mark);
}

/** @param {string} path */
const collapse = (path) => path.replace(SLASHES, "/");

/**
 * RFC 3986 dot-segment removal; `..` above the root stays at the root.
 * @param {string} path
 */
function resolveDots(path) {
  /** @type {string[]} */
  const kept = [];
  for (const segment of path.split("/").slice(1)) {
    if (segment === "..") kept.pop();
    else if (segment !== ".") kept.push(segment);
  }
  return `/${kept.join("/")}`;
}

/** @param {string} path */
const hasDotSegment = (path) => path.replaceAll("\\", "/").split("/").some((s) => s === "." || s === "..");

/**
 * Every path a router might make of `path` by dots, backslashes and NULs, slashes collapsed.
 * @param {string} path
 */
function spellings(path) {
  const variants = new Set([path, path.replaceAll("\\", "/"), path.split("\x00")[0]]);
  const found = new Set();
  for (const variant of variants) {
    for (const spelled of [variant, collapse(variant)]) {
      found.add(collapse(spelled));
      found.add(collapse(resolveDots(spelled)));
    }
  }
  return found;
}

/**
 * `path` (one char per byte) as it is, and as UTF-8 with invalid bytes replaced and dropped.
 * @param {string} path
 */
function decodings(path) {
  if (/[^\u0000-\u00ff]/.test(path)) return [path]; // already text
  const replaced = UTF8.decode(Buffer.from(path, "latin1"));
  return [path, replaced, replaced.replaceAll("\ufffd", "")];
}

/**
 * Every reading of `paths` a router might route.
 * @param {Iterable<string>} paths
 */
function readings(paths) {
  const found = new Set();
  for (const path of paths) {
    for (const decoded of decodings(path)) {
      for (const slashed of new Set([decoded, `/${decoded.replace(/^\/+/, "")}`])) {
        for (const reading of spellings(slashed)) found.add(reading);
      }
    }
  }
  return found;
}

/** @typedef {{room: string | null, ambiguous: boolean}} PathMatch */

/**
 * Path prefixes -> room slugs, longest prefix first. `mount` is the prefix the app is served
 * under, when routes are written as the browser sees them; `languages` the language prefixes a
 * route may follow.
 */
export class RouteTable {
  /**
   * @param {Iterable<[string, string]>} routes
   * @param {boolean} [caseSensitive]
   * @param {{mount?: string, languages?: Iterable<string>}} [options]
   */
  constructor(routes, caseSensitive = false, { mount = "", languages = [] } = {}) {
    this.caseSensitive = caseSensitive;
    this.mount = mount.replace(/\/+$/, "");
    this.routes = [...routes]
      .sort((a, b) => b[0].length - a[0].length)
      .map(([prefix, slug]) => {
        const exact = this.fold(collapse(prefix));
        return { exact, below: `${exact.replace(/\/+$/, "")}/`, slug };
      });
    this.languages = new Set([...languages].map((lang) => this.fold(lang.replace(/^\/+|\/+$/g, ""))));
  }

  /** @param {string} path */
  fold(path) {
    return this.caseSensitive ? path : path.toLowerCase();
  }

  /**
   * `path` folded as the routers fold: Unicode-aware ones map some letters to ASCII.
   * @param {string} path
   */
  folds(path) {
    if (this.caseSensitive) return [path];
    path = path.replaceAll("\u0130", "i"); // İ: its simple lower case is i
    return [path.toLowerCase(), path.toUpperCase().toLowerCase()];
  }

  /**
   * @param {string} folded
   * @returns {string | null}
   */
  lookup(folded) {
    for (const { exact, below, slug } of this.routes) {
      if (folded === exact || folded.startsWith(below)) return slug;
    }
    if (this.languages.size) {
      const slash = folded.indexOf("/", 1);
      if (slash > 0 && this.languages.has(folded.slice(1, slash))) return this.lookup(folded.slice(slash));
    }
    return null;
  }

  /**
   * Slug protecting `path` (decoded, slashes collapsed, mount included), or null.
   * @param {string} path
   */
  roomFor(path) {
    return this.lookup(this.fold(path));
  }

  /**
   * The one reading of a plain path (the fast path's: mount included, slashes collapsed, case
   * kept), or null when the path is not plain and so may be read more than one way. Bypass rules
   * match path prefixes on it (`bypass-rules.js`).
   * @param {string} path
   * @param {string | null} [rawPath]
   * @param {string} [scriptName]
   * @returns {string | null}
   */
  plainReading(path, rawPath = null, scriptName = "") {
    const raw = rawPath ?? path;
    const routed = this.mount + path;
    const otherMount = this.mount !== "" && scriptName.replace(/\/+$/, "") !== this.mount;
    if (!PLAIN.test(routed) || routed.includes("/.") || ENCODED_SEPARATOR.test(raw) || BAD_ESCAPE.test(raw) || otherMount) {
      return null;
    }
    return collapse(routed);
  }

  /**
   * Match `path` (decoded, as the app routes it: PATH_INFO) spelled `rawPath` on the wire, below
   * `scriptName` (SCRIPT_NAME).
   * @param {string} path
   * @param {string | null} [rawPath]
   * @param {string} [scriptName]
   * @returns {PathMatch}
   */
  match(path, rawPath = null, scriptName = "") {
    const raw = rawPath ?? path;
    const routed = this.mount + path;
    // With a mount, the request's own script name is a reading too: it must agree with it.
    const otherMount = this.mount !== "" && scriptName.replace(/\/+$/, "") !== this.mount;
    if (PLAIN.test(routed) && !routed.includes("/.") && !ENCODED_SEPARATOR.test(raw) && !BAD_ESCAPE.test(raw) && !otherMount) {
      return { room: this.roomFor(collapse(routed)), ambiguous: false }; // the fast path
    }
    const suspicious =
      routed.includes("\\") ||
      routed.includes("\x00") ||
      hasDotSegment(routed) ||
      ENCODED_SEPARATOR.test(raw) ||
      BAD_ESCAPE.test(raw);
    const texts = new Set([routed, `${this.mount}/${path.replace(/^\/+/, "")}`]);
    if (otherMount) texts.add(scriptName + path);
    const rooms = new Set();
    for (const reading of readings(texts)) {
      for (const folded of this.folds(reading)) rooms.add(this.lookup(folded));
    }
    // The same room as Python reports: the first in sorted order.
    const found = [...rooms].filter((room) => room !== null).sort();
    if (!found.length) return { room: null, ambiguous: false };
    return { room: /** @type {string} */ (found[0]), ambiguous: suspicious || rooms.size > 1 };
  }
}
