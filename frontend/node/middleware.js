/**
 * Edge enforcement for Node: protect a site's paths with offline-verified admissions. The same
 * behaviour as the Python `anteroom.edge.AnteroomMiddleware`, as a connect/Express-style
 * `(req, res, next)` middleware that also works with plain `node:http`.
 *
 * Unprotected paths pass untouched. On a protected path a valid admission (cookie `_abq` or
 * header `Anteroom-Admission`) passes after an offline check, with no call to Anteroom; once
 * older than `refreshAfter` seconds it is renewed through `/api/v1/admission/refresh`. A `?abq=`
 * hand-over becomes the cookie with a 307 to the clean URL. Everything else is refused: a browser
 * navigation is sent (303) to the room's hosted page, anything else gets 429 + `Retry-After` +
 * JSON `QueueRequired`. An app may queue through by sending its ticket in `Anteroom-Ticket`.
 * Every refusal names its reason in `Anteroom-Enforcement`.
 */
import { Keyring } from "./tokens.js";
import { parseQsl, quote, quotePath, urlencode, wsgiPath } from "./url.js";
import { verifyAdmission } from "./verify.js";

export const COOKIE = "_abq";
export const ADMISSION_HEADER = "Anteroom-Admission";
export const TICKET_HEADER = "Anteroom-Ticket";
export const REASON_HEADER = "Anteroom-Enforcement";
export const QUEUE_RETRY_SEC = 5;
const LOCAL_HOSTS = ["localhost", "127.0.0.1", "[::1]"];
// Anteroom's answers are small; a bigger one is not Anteroom's.
const MAX_ANSWER_BYTES = 65536;
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?]*/;
export const HANDOVER_PARAM = "abq";
// Renewal attempts remembered per admission (jti), so a burst of requests renews once.
const MAX_TRACKED_RENEWALS = 10_000;

/** @typedef {import("node:http").IncomingMessage} Request */
/** @typedef {import("node:http").ServerResponse} Response */
/** @typedef {import("./index.d.ts").EdgeOptions} EdgeOptions */
/** @typedef {Record<string, unknown>} Claims */

/**
 * @param {string} name
 * @param {string} why
 */
function badOption(name, why) {
  return new TypeError(`anteroomMiddleware: option \`${name}\` ${why}`);
}

/**
 * Copy and default the options; a bad one throws a TypeError that names it.
 * @param {EdgeOptions} options
 */
function edgeConfig(options) {
  options = { ...options };
  if (options.keys === undefined) throw badOption("keys", "is required (ANTEROOM_KEYS or kid -> Buffer)");
  for (const name of /** @type {const} */ (["baseUrl", "publicKey"])) {
    if (typeof options[name] !== "string" || !options[name]) throw badOption(name, "must be a non-empty string");
  }
  const routes = options.routes instanceof Map ? [...options.routes] : Object.entries(options.routes ?? {});
  for (const [prefix, slug] of routes) {
    if (typeof slug !== "string" || !prefix.startsWith("/")) {
      throw badOption("routes", "maps path prefixes ('/checkout') to room slugs");
    }
  }
  options.refreshAfter ??= 15;
  options.timeout ??= 2;
  for (const name of /** @type {const} */ (["refreshAfter", "timeout"])) {
    if (typeof options[name] !== "number" || Number.isNaN(options[name])) throw badOption(name, "must be seconds (a number)");
  }
  for (const name of /** @type {const} */ (["clientIp", "sessionJti", "clock", "fetch"])) {
    if (options[name] !== undefined && typeof options[name] !== "function") throw badOption(name, "must be a function");
  }
  return {
    keys: Keyring.coerce(options.keys),
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    publicKey: options.publicKey,
    // Longest prefix first, so /api/cart wins over /api.
    routes: routes.sort((a, b) => b[0].length - a[0].length),
    refreshAfter: options.refreshAfter,
    timeout: options.timeout,
    clientIp: options.clientIp ?? ((/** @type {Request} */ req) => req.socket?.remoteAddress ?? null),
    sessionJti: options.sessionJti ?? (() => null),
    clock: options.clock ?? (() => Date.now() / 1000),
    fetch: options.fetch ?? ((/** @type {Parameters<typeof fetch>} */ ...args) => globalThis.fetch(...args)),
  };
}

/** @typedef {ReturnType<typeof edgeConfig>} EdgeConfig */

/**
 * A request header as one string ("" when absent), as WSGI gives it.
 * @param {Request} req
 * @param {string} name
 */
function header(req, name) {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(",") : (value ?? "");
}

/**
 * @param {Request} req
 * @param {string} name
 */
function cookie(req, name) {
  for (const part of header(req, "Cookie").split(";")) {
    const trimmed = part.trim();
    const equals = trimmed.indexOf("=");
    const key = equals < 0 ? trimmed : trimmed.slice(0, equals);
    if (key === name) return equals < 0 ? "" : trimmed.slice(equals + 1);
  }
  return null;
}

/**
 * Path (raw, undecoded) and query of a request target.
 * @param {string} target
 */
function splitTarget(target) {
  // A proxy-style absolute target still names a path on this site.
  const path = target.replace(ABSOLUTE_FORM, "") || "/";
  const mark = path.indexOf("?");
  return mark < 0 ? { path, query: "" } : { path: path.slice(0, mark), query: path.slice(mark + 1) };
}

/**
 * The request as the Python middleware sees its WSGI environ.
 * @param {Request} req
 */
function describeRequest(req) {
  const own = splitTarget(req.url ?? "/");
  // Mounted under a prefix (Express `app.use("/shop", …)`), `url` is relative like PATH_INFO and
  // `originalUrl` is the whole path, like SCRIPT_NAME + PATH_INFO.
  const original = splitTarget(/** @type {{originalUrl?: string}} */ (req).originalUrl ?? req.url ?? "/");
  const socket = /** @type {import("node:tls").TLSSocket | undefined} */ (req.socket);
  const local = socket?.localAddress ?? "";
  const fallbackHost = `${local.includes(":") ? `[${local}]` : local}:${socket?.localPort ?? ""}`;
  return {
    pathInfo: wsgiPath(own.path),
    fullPath: wsgiPath(original.path),
    query: own.query,
    scheme: socket?.encrypted ? "https" : "http",
    host: header(req, "Host") || fallbackHost,
  };
}

/** @typedef {ReturnType<typeof describeRequest>} Described */

/**
 * [the last `abq` value or null, the query without it], other parameters verbatim and in order.
 * @param {string} query
 * @returns {[string | null, string]}
 */
function splitHandover(query) {
  /** @type {string | null} */
  let token = null;
  const kept = [];
  for (const part of query.split("&")) {
    const equals = part.indexOf("=");
    const [name, value] = equals < 0 ? [part, ""] : [part.slice(0, equals), part.slice(equals + 1)];
    // parseQsl decodes as Python's unquote_plus does; `=` keeps an empty name or value a pair.
    const [[decodedName, decodedValue] = ["", ""]] = parseQsl(`${name}=${value}`);
    if (part && decodedName === HANDOVER_PARAM) token = decodedValue;
    else if (part) kept.push(part);
  }
  return [token, kept.join("&")];
}

/**
 * @param {Described} described
 * @param {string} [query] the raw query when omitted
 */
function urlOf(described, query = described.query) {
  const { scheme, host, fullPath } = described;
  return `${scheme}://${host}${quotePath(fullPath)}${query ? `?${query}` : ""}`;
}

/** @param {string} host */
function hostIsLocal(host) {
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0];
  return LOCAL_HOSTS.includes(name);
}

/** @param {Request} req */
function isNavigation(req) {
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  const mode = header(req, "Sec-Fetch-Mode");
  if (mode && mode !== "navigate") return false;
  const accept = header(req, "Accept");
  return accept.includes("text/html") && !accept.split(",")[0].includes("application/json");
}

/**
 * Send a whole response (the middleware's own answers).
 * @param {Response} res
 * @param {number} status
 * @param {[string, string][]} headers
 * @param {string} [body]
 */
function send(res, status, headers, body = "") {
  res.statusCode = status;
  for (const [name, value] of headers) res.setHeader(name, value);
  res.setHeader("Content-Length", String(Buffer.byteLength(body)));
  res.end(body);
}

/**
 * Add `extra` to whatever headers the app sends, at the moment it sends them, so an app's own
 * `setHeader("Set-Cookie", …)` cannot erase the renewed admission (the Python middleware appends
 * to the app's header list the same way).
 * @param {Response} res
 * @param {[string, string][]} extra
 */
function appendOnWriteHead(res, extra) {
  if (extra.length === 0) return;
  const writeHead = res.writeHead;
  /** @type {(...args: any[]) => Response} */
  const wrapped = function (...args) {
    res.writeHead = writeHead;
    const index = typeof args[1] === "string" ? 2 : 1;
    const given = args[index];
    for (const [name, value] of extra) {
      if (Array.isArray(given)) {
        given.push(name, value); // the flat [name, value, name, value] form
        continue;
      }
      const key =
        given && typeof given === "object"
          ? Object.keys(given).find((k) => k.toLowerCase() === name.toLowerCase())
          : undefined;
      if (key !== undefined) {
        given[key] = [given[key]].flat().concat(value);
        continue;
      }
      const existing = res.getHeader(name);
      res.setHeader(name, existing === undefined ? value : [existing].flat().map(String).concat(value));
    }
    return writeHead.apply(res, /** @type {any} */ (args));
  };
  res.writeHead = /** @type {any} */ (wrapped);
}

/**
 * POST JSON to Anteroom: [HTTP status, JSON object]; [0, {}] when it is unreachable.
 * @param {EdgeConfig} config
 * @param {string} path
 * @param {Record<string, unknown>} body
 * @returns {Promise<[number, Record<string, any>]>}
 */
async function post(config, path, body) {
  let status = 0;
  try {
    const response = await config.fetch(config.baseUrl + path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
      redirect: "error",
      signal: AbortSignal.timeout(Math.max(0, config.timeout * 1000)),
    });
    status = response.status;
    const bytes = await readCapped(response);
    if (bytes === null) return [status, {}];
    const text = new TextDecoder().decode(bytes);
    let answer = null;
    try {
      answer = text ? JSON.parse(text) : null;
    } catch {
      answer = null;
    }
    return [status, answer && typeof answer === "object" && !Array.isArray(answer) ? answer : {}];
  } catch {
    return [status, {}];
  }
}

/**
 * The body, or null past MAX_ANSWER_BYTES (reading stops there).
 * @param {globalThis.Response} response
 */
async function readCapped(response) {
  if (!response.body) return new Uint8Array();
  const chunks = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_ANSWER_BYTES) return null; // leaving the loop cancels the stream
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Enforce admissions on the configured path prefixes.
 *
 * @param {EdgeOptions} options
 * @returns {import("./index.d.ts").AnteroomMiddleware}
 */
export function anteroomMiddleware(options) {
  const config = edgeConfig(options);
  /** When each admission (by jti) was last renewed or tried; oldest first. @type {Map<string, number>} */
  const renewedAt = new Map();

  /** @param {string} path */
  function roomFor(path) {
    for (const [prefix, slug] of config.routes) {
      if (path === prefix || path.startsWith(`${prefix.replace(/\/+$/, "")}/`)) return slug;
    }
    return null;
  }

  /**
   * (refusal reason or null, claims) for an admission token.
   * @param {unknown} token
   * @param {Request} req
   * @param {string} room
   * @returns {[string | null, Claims]}
   */
  function check(token, req, room) {
    const result = verifyAdmission(token, config.keys, {
      room,
      clientIp: config.clientIp(req),
      sessionJti: config.sessionJti(req),
      now: config.clock(),
    });
    if (result.valid) return [null, result.claims ?? {}];
    const reason = result.reason ?? "malformed";
    if (["malformed", "forged", "expired", "unknown-key"].includes(reason)) return [`queue:admission-${reason}`, {}];
    return [`queue:${reason}`, {}];
  }

  /**
   * @param {Described} described
   * @param {string} token
   * @param {Claims} claims
   */
  function admissionCookie(described, token, claims) {
    const life = Math.max(0, Math.trunc(Number(claims.exp ?? 0) - config.clock()));
    const value = `${COOKIE}=${token}; Path=/; Max-Age=${life}; HttpOnly; SameSite=Lax`;
    return hostIsLocal(described.host) ? value : `${value}; Secure`;
  }

  /**
   * 429, never 503: a line is not an outage, and must not light up the site's alerts.
   * @param {Response} res
   * @param {string} room
   * @param {string} reason
   * @param {number} retry
   * @param {Record<string, unknown>} extra
   */
  function tooMany(res, room, reason, retry, extra) {
    /** @type {Record<string, unknown>} */
    const body = {
      error: "QueueRequired",
      message: "This resource is behind a waiting room; queue first.",
      room,
      api: `${config.baseUrl}/api/v1`,
      retryAfter: retry,
      ...extra,
    };
    body.queuePage ??= `${config.baseUrl}/queue/${quote(room)}?key=${config.publicKey}`;
    const headers = /** @type {[string, string][]} */ ([
      ["Content-Type", "application/json"],
      ["Retry-After", String(retry)],
      [REASON_HEADER, reason],
      ["Cache-Control", "no-store"],
    ]);
    send(res, 429, headers, JSON.stringify(body));
  }

  /**
   * @param {Request} req
   * @param {Response} res
   * @param {Described} described
   * @param {string} room
   * @param {string} reason
   * @param {string} [query] the query of the return URL, when not the request's own
   */
  function refuse(req, res, described, room, reason, query) {
    const page =
      `${config.baseUrl}/queue/${quote(room)}?` +
      urlencode([
        ["key", config.publicKey],
        ["return", urlOf(described, query)],
      ]);
    if (isNavigation(req) && !header(req, TICKET_HEADER)) {
      send(res, 303, [["Location", page], [REASON_HEADER, reason], ["Cache-Control", "no-store"]]);
      return;
    }
    tooMany(res, room, reason, QUEUE_RETRY_SEC, { queuePage: page });
  }

  /**
   * Whether to try renewing this admission now. Requests still carrying the old cookie (in flight,
   * other tabs) renew once per `refreshAfter`, and a refused renewal is not asked again on every
   * request.
   * @param {string} token
   * @param {Claims} claims
   */
  function renewalDue(token, claims) {
    const now = config.clock();
    const jti = String(claims.jti || token);
    const last = renewedAt.get(jti);
    if (last !== undefined && now - last < config.refreshAfter) return false;
    renewedAt.delete(jti); // re-inserted last: the Map stays oldest first
    renewedAt.set(jti, now);
    while (renewedAt.size > MAX_TRACKED_RENEWALS) renewedAt.delete(/** @type {string} */ (renewedAt.keys().next().value));
    return true;
  }

  /**
   * Let the request through; renew an old admission on the way (best effort).
   * @param {Request} req
   * @param {Response} res
   * @param {Described} described
   * @param {string} token
   * @param {Claims} claims
   * @param {boolean} issuedHeader the admission was dealt just now, by queueing through
   */
  async function pass(req, res, described, token, claims, issuedHeader) {
    /** @type {[string, string][]} */
    const extra = [];
    const issuedAt = typeof claims.iat === "number" ? claims.iat : 0;
    if (issuedHeader) {
      extra.push([ADMISSION_HEADER, token]);
    } else if (config.clock() - issuedAt >= config.refreshAfter && renewalDue(token, claims)) {
      const [status, answer] = await post(config, "/api/v1/admission/refresh", { apiKey: config.publicKey, token });
      const fresh = status === 200 && typeof answer.token === "string" ? answer.token : null;
      const [reason, freshClaims] = fresh ? check(fresh, req, String(claims.q ?? "")) : ["", {}];
      // Only a fresh admission that verifies replaces the one in hand; otherwise it still counts.
      if (fresh && reason === null) {
        if (header(req, ADMISSION_HEADER)) extra.push([ADMISSION_HEADER, fresh]);
        else extra.push(["Set-Cookie", admissionCookie(described, fresh, freshClaims)]);
      }
    }
    appendOnWriteHead(res, extra);
    return true;
  }

  /**
   * Poll the app's ticket: 429 while it waits, pass once admitted.
   * @param {Request} req
   * @param {Response} res
   * @param {Described} described
   * @param {string} room
   * @param {string} ticket
   */
  async function queueThrough(req, res, described, room, ticket) {
    const [status, answer] = await post(config, "/api/v1/queue/poll", { apiKey: config.publicKey, ticket });
    const state = status === 200 ? answer.status : undefined;
    if (state === "admitted" && typeof answer.token === "string") {
      const [reason, claims] = check(answer.token, req, room);
      if (reason === null) return pass(req, res, described, answer.token, claims, true);
      tooMany(res, room, reason, QUEUE_RETRY_SEC, {});
      return false;
    }
    if (state === "waiting" || state === "held") {
      const pollAfterMs = typeof answer.pollAfterMs === "number" && answer.pollAfterMs ? answer.pollAfterMs : 5000;
      const retry = Math.max(1, Math.ceil(pollAfterMs / 1000));
      const figures = { status: state, position: answer.position ?? null, etaSeconds: answer.etaSeconds ?? null };
      tooMany(res, room, "queue:no-admission", retry, figures);
      return false;
    }
    // Not waiting: the room is idle, the ticket was refused (gone, invalid: enter again), or
    // Anteroom could not be reached. Say which, and keep to Anteroom's own Retry-After.
    const retryAfter = answer.retryAfter;
    const retry = Number.isInteger(retryAfter) && retryAfter > 0 ? retryAfter : QUEUE_RETRY_SEC;
    /** @type {Record<string, unknown>} */
    const figures = { status: state || "unknown" };
    if (typeof answer.error === "string") figures.ticketError = answer.error;
    tooMany(res, room, "queue:no-admission", retry, figures);
    return false;
  }

  /**
   * Answer the request or let it pass; true when it passes.
   * @param {Request} req
   * @param {Response} res
   * @param {string} room
   */
  async function enforce(req, res, room) {
    const described = describeRequest(req);
    const [handed, clean] = described.query.includes(HANDOVER_PARAM) ? splitHandover(described.query) : [null, ""];
    if (handed !== null) {
      const [reason, claims] = check(handed, req, room);
      if (reason !== null) {
        refuse(req, res, described, room, reason, clean);
        return false;
      }
      send(res, 307, [
        ["Location", urlOf(described, clean)],
        ["Set-Cookie", admissionCookie(described, handed, claims)],
        ["Cache-Control", "no-store"],
        // The token was in the address bar: keep it out of the next page's Referer.
        ["Referrer-Policy", "no-referrer"],
      ]);
      return false;
    }
    const ticket = header(req, TICKET_HEADER);
    const token = header(req, ADMISSION_HEADER) || cookie(req, COOKIE);
    if (token) {
      const [reason, claims] = check(token, req, room);
      if (reason === null) return pass(req, res, described, token, claims, false);
      if (!ticket) {
        refuse(req, res, described, room, reason);
        return false;
      }
    }
    if (ticket) return queueThrough(req, res, described, room, ticket);
    refuse(req, res, described, room, "queue:no-admission");
    return false;
  }

  /** @type {import("./index.d.ts").AnteroomMiddleware} */
  const middleware = async (req, res, next) => {
    const room = roomFor(wsgiPath(splitTarget(req.url ?? "/").path));
    if (room === null) return next();
    let passes;
    try {
      passes = await enforce(req, res, room);
    } catch (error) {
      return next(error);
    }
    // Outside the try: an error thrown downstream is the app's, not ours to report again.
    if (passes) return next();
  };
  middleware.roomFor = roomFor;
  return middleware;
}
