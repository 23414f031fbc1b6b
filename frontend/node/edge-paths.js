/**
 * Which room protects a request path, read the way the application's router will read it. The
 * same rules as the Python `anteroom.edge_paths`; both pass `tests/fixtures/edge_cases.json`.
 *
 * - Repeated slashes are collapsed and, unless the routes are case-sensitive, case is ignored
 *   (Express routes `/CHECKOUT` to `/checkout`; gunicorn hands `//checkout` to Flask, which
 *   merges the slashes).
 * - A path is *ambiguous* when its spelling leaves the route to the router: a `.` or `..`
 *   segment (also spelled `%2E`), a backslash, a NUL, an encoded `/` or `\` (`%2F`, `%5C`, `%00`
 *   as sent), or a `%` that is not an escape. If any reading of it (dots resolved or not,
 *   backslash as a separator or not, cut at a NUL or not) is protected, the request is refused
 *   (`queue:ambiguous-path`) whatever it carries; otherwise it passes.
 */

const SLASHES = /\/{2,}/g;
// Escapes that make a separator or a terminator out of data, and a '%' that escapes nothing.
const ENCODED_SEPARATOR = /%(?:2f|5c|00)/i;
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

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
 * Every path a router might make of `path`, slashes collapsed.
 * @param {string} path
 */
function readings(path) {
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

/** @typedef {{room: string | null, ambiguous: boolean}} PathMatch */

/** Path prefixes -> room slugs, longest prefix first. */
export class RouteTable {
  /**
   * @param {Iterable<[string, string]>} routes
   * @param {boolean} [caseSensitive]
   */
  constructor(routes, caseSensitive = false) {
    this.caseSensitive = caseSensitive;
    this.routes = [...routes]
      .sort((a, b) => b[0].length - a[0].length)
      .map(([prefix, slug]) => {
        const exact = this.fold(collapse(prefix));
        return { exact, below: `${exact.replace(/\/+$/, "")}/`, slug };
      });
  }

  /** @param {string} path */
  fold(path) {
    return this.caseSensitive ? path : path.toLowerCase();
  }

  /**
   * Slug protecting `path` (decoded, slashes collapsed), or null.
   * @param {string} path
   */
  roomFor(path) {
    const folded = this.fold(path);
    for (const { exact, below, slug } of this.routes) {
      if (folded === exact || folded.startsWith(below)) return slug;
    }
    return null;
  }

  /**
   * Match `path` (decoded, as the app routes it) spelled `rawPath` on the wire.
   * @param {string} path
   * @param {string | null} [rawPath]
   * @returns {PathMatch}
   */
  match(path, rawPath = null) {
    const raw = rawPath ?? path;
    const suspicious =
      path.includes("\\") ||
      path.includes("\x00") ||
      hasDotSegment(path) ||
      ENCODED_SEPARATOR.test(raw) ||
      BAD_ESCAPE.test(raw);
    if (!suspicious) return { room: this.roomFor(collapse(path)), ambiguous: false };
    const rooms = [...readings(path)].map((r) => this.roomFor(r)).filter((room) => room !== null);
    // The same room as Python reports: the first in sorted order.
    return rooms.length ? { room: /** @type {string} */ (rooms.sort()[0]), ambiguous: true } : { room: null, ambiguous: false };
  }
}
