/**
 * Edge enforcement for Node: protect a site's paths with offline-verified admissions. The same
 * behaviour as the Python `anteroom.edge.AnteroomMiddleware`, as a connect/Express-style
 * `(req, res, next)` middleware that also works with plain `node:http`.
 *
 * Unprotected paths pass untouched. On a protected path (read as the app's router reads it: see
 * `edge-paths.js`) a valid admission (cookie `_abq` or header `Anteroom-Admission`) passes after
 * an offline check, with no call to Anteroom; once older than `refreshAfter` seconds it is renewed
 * through `/api/v1/admission/refresh`. A `?abq=` hand-over becomes the cookie with a 307 to the
 * clean URL. Everything else is refused: a browser navigation is sent (303) to the room's hosted
 * page, anything else gets 429 + `Retry-After` + JSON `QueueRequired`, a path routers read
 * differently 400. An app may queue through by sending its ticket in `Anteroom-Ticket`. Every
 * refusal names its reason in `Anteroom-Enforcement`.
 *
 * This module only reads the request and applies the decision; what to decide is
 * `edge-decision.js`, and `edge-client.js` makes the calls to Anteroom it asks for.
 */
import { RuleError, parseRules } from "./bypass-rules.js";
import { CrawlerCheck, DEFAULT_TIMEOUT, claimedEngine, crawlerEngines, dnsResolver } from "./crawlers.js";
import { AnteroomClient, httpTransport, settle } from "./edge-client.js";
import { COOKIE, EdgeState, cookieValue, decide } from "./edge-decision.js";
import { RouteTable, rawPathOf } from "./edge-paths.js";
import { AgentVerifier, Directories, Nonces, SignatureError, agentsProblem, httpsFetch, policyFor } from "./signed-agents.js";
import { Keyring } from "./tokens.js";
import { quotePath, wsgiPath } from "./url.js";

export {
  ADMISSION_HEADER,
  AMBIGUOUS_PATH,
  COOKIE,
  HANDOVER_PARAM,
  QUEUE_RETRY_SEC,
  REASON_HEADER,
  TICKET_HEADER,
} from "./edge-decision.js";

// The request headers the decision reads.
const READ_HEADERS = [
  "accept",
  "sec-fetch-mode",
  "cookie",
  "anteroom-admission",
  "anteroom-ticket",
  "access-control-request-method",
  "origin",
  "signature-input",
];

/** @typedef {import("node:http").IncomingMessage} Request */
/** @typedef {import("node:http").ServerResponse} Response */
/** @typedef {import("./index.d.ts").EdgeOptions} EdgeOptions */
/** @typedef {import("./edge-decision.js").Decision} Decision */

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
export function edgeConfig(options) {
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
  options.pauseAfterFailure ??= 5;
  for (const name of /** @type {const} */ (["refreshAfter", "timeout", "pauseAfterFailure"])) {
    if (typeof options[name] !== "number" || Number.isNaN(options[name])) throw badOption(name, "must be seconds (a number)");
  }
  options.secureCookie ??= true;
  options.caseSensitive ??= false;
  options.appAnswersOptions ??= false;
  for (const name of /** @type {const} */ (["secureCookie", "caseSensitive", "appAnswersOptions"])) {
    if (typeof options[name] !== "boolean") throw badOption(name, "must be true or false");
  }
  options.mount ??= "";
  if (typeof options.mount !== "string" || (options.mount && !options.mount.startsWith("/"))) {
    throw badOption("mount", "must be a path prefix ('/shop')");
  }
  options.languages ??= [];
  if (!Array.isArray(options.languages) || !options.languages.every((lang) => typeof lang === "string")) {
    throw badOption("languages", "must be a list of language prefixes (['fr', 'de'])");
  }
  options.preflightHeaders ??= {};
  for (const value of Object.values(options.preflightHeaders)) {
    if (typeof value !== "string" && !(Array.isArray(value) && value.every((v) => typeof v === "string"))) {
      throw badOption("preflightHeaders", "maps header names to a value or a list of values");
    }
  }
  for (const name of /** @type {const} */ (["clientIp", "sessionJti", "clock", "fetch"])) {
    if (options[name] !== undefined && typeof options[name] !== "function") throw badOption(name, "must be a function");
  }
  let bypass;
  try {
    bypass = parseRules(options.bypass ?? []);
  } catch (error) {
    if (error instanceof RuleError) throw badOption("bypass", error.message);
    throw error;
  }
  let engines;
  try {
    engines = crawlerEngines(options.crawlers);
  } catch (error) {
    throw badOption("crawlers", /** @type {Error} */ (error).message);
  }
  /** @type {CrawlerCheck | null} */
  let crawlerCheck = null;
  if (engines.length > 0) {
    const dnsTimeout = options.dnsTimeout ?? DEFAULT_TIMEOUT;
    if (typeof dnsTimeout !== "number" || !(dnsTimeout > 0 && dnsTimeout <= 10)) throw badOption("dnsTimeout", "must be from 0 to 10 seconds");
    let resolver = options.dnsResolver ?? "";
    if (typeof resolver === "string") {
      try {
        resolver = dnsResolver(resolver, dnsTimeout);
      } catch (error) {
        throw badOption("dnsResolver", /** @type {Error} */ (error).message);
      }
    } else if (typeof resolver?.reverse !== "function") {
      throw badOption("dnsResolver", "is host:port or a resolver (reverse, resolve4, resolve6)");
    }
    crawlerCheck = new CrawlerCheck(resolver, { timeout: dnsTimeout, ...(options.clock ? { clock: options.clock } : {}) });
  }
  const agents = options.agents ?? {};
  const agentsWrong = agentsProblem(agents);
  if (agentsWrong) throw badOption("agents", agentsWrong);
  /** @type {AgentVerifier | null} */
  let agentVerifier = null;
  if (Object.keys(agents).length > 0) {
    const agentTimeout = options.agentTimeout ?? 2;
    if (typeof agentTimeout !== "number" || !(agentTimeout > 0 && agentTimeout <= 10)) throw badOption("agentTimeout", "must be from 0 to 10 seconds");
    if (options.agentFetch !== undefined && typeof options.agentFetch !== "function") throw badOption("agentFetch", "must be a function");
    if (options.agentPrivateDirectories !== undefined && typeof options.agentPrivateDirectories !== "boolean") throw badOption("agentPrivateDirectories", "must be true or false");
    const clock = options.clock ?? (() => Date.now() / 1000);
    let fetchDirectory = options.agentFetch;
    if (fetchDirectory === undefined) {
      try {
        fetchDirectory = httpsFetch(agentTimeout, options.agentCaFile, options.agentPrivateDirectories === true);
      } catch (error) {
        throw badOption("agentCaFile", `is not a readable PEM file (${/** @type {Error} */ (error).message})`);
      }
    }
    agentVerifier = new AgentVerifier(new Directories(fetchDirectory, clock), new Nonces(), clock);
  }
  return {
    keys: Keyring.coerce(options.keys),
    agents: { ...agents },
    agentVerifier,
    crawlerEngines: engines,
    crawlerCheck,
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    publicKey: options.publicKey,
    routeTable: new RouteTable(routes, options.caseSensitive, { mount: options.mount, languages: options.languages }),
    preflightHeaders: { ...options.preflightHeaders },
    appAnswersOptions: options.appAnswersOptions,
    bypass,
    // The request headers the decision reads: the edge's own and those of the bypass rules.
    readHeaders: [...new Set([...READ_HEADERS, ...bypass.flatMap((rule) => (rule.kind === "header" ? [rule.name] : []))])],
    refreshAfter: options.refreshAfter,
    timeout: options.timeout,
    pauseAfterFailure: options.pauseAfterFailure,
    secureCookie: options.secureCookie,
    clientIp: options.clientIp ?? ((/** @type {Request} */ req) => req.socket?.remoteAddress ?? null),
    sessionJti: options.sessionJti ?? (() => null),
    clock: options.clock ?? (() => Date.now() / 1000),
    fetch: options.fetch ?? ((/** @type {Parameters<typeof fetch>} */ ...args) => globalThis.fetch(...args)),
  };
}

/** @typedef {ReturnType<typeof edgeConfig>} EdgeConfig */

/**
 * The engine's name when the request is a verified crawler this edge lets through, else null.
 * Asks DNS (within `dnsTimeout`) only for a claim of an engine let through, at an address whose
 * verdict is not yet known; `decide` never asks DNS itself.
 * @param {EdgeConfig} config
 * @param {string | null} clientIp
 * @param {string | null | undefined} userAgent
 * @returns {Promise<string | null>}
 */
export async function verifiedCrawler(config, clientIp, userAgent) {
  if (config.crawlerCheck === null || claimedEngine(userAgent, config.crawlerEngines) === null) return null;
  const engine = await config.crawlerCheck.verified(clientIp, userAgent, config.crawlerEngines);
  return engine?.name ?? null;
}

/**
 * Is this a request whose signature the edge checks? (Agents set, a signature there, no admission:
 * an admitted agent is decided by its admission alone.)
 * @param {EdgeConfig} config
 * @param {import("./edge-decision.js").Facts} facts
 */
export function checksAgent(config, facts) {
  return (
    config.agentVerifier !== null &&
    Boolean(facts.headers["signature-input"]) &&
    !facts.headers["anteroom-admission"] &&
    cookieValue(facts.headers.cookie ?? "", COOKIE) === null
  );
}

/**
 * The verdict on `request`'s signature when `checksAgent`, else null. May fetch the agent's key
 * directory (within `agentTimeout`); `decide` never does.
 * @param {EdgeConfig} config
 * @param {import("./edge-decision.js").Facts} facts
 * @param {import("./signed-agents.js").SignedRequest} request
 * @returns {Promise<import("./edge-decision.js").AgentFacts | null>}
 */
export async function signedAgent(config, facts, request) {
  if (config.agentVerifier === null || !checksAgent(config, facts)) return null;
  let agent;
  try {
    agent = await config.agentVerifier.verify(request, (directory) => policyFor(config.agents, directory) !== null);
  } catch (error) {
    if (error instanceof SignatureError) return { outcome: "invalid", reason: error.reason, directory: null };
    throw error;
  }
  if (agent === null) return null;
  const policy = policyFor(config.agents, agent.directory);
  return { outcome: policy === "refuse" ? "refused" : "verified", reason: null, directory: agent.directory };
}

/**
 * A request as a signature covers it.
 * @param {Request} req
 * @param {import("./edge-decision.js").Facts} facts
 * @returns {import("./signed-agents.js").SignedRequest}
 */
function signedRequestOf(req, facts) {
  /** @type {Record<string, string>} */
  const headers = {};
  for (const name of Object.keys(req.headers)) headers[name] = header(req, name);
  const path = rawPathOf(/** @type {{originalUrl?: string}} */ (req).originalUrl ?? req.url ?? "/");
  return { method: facts.method, scheme: facts.scheme, authority: facts.host, path, query: facts.query, headers };
}

/**
 * A request header as one string ("" when absent), as WSGI gives it.
 * @param {Request} req
 * @param {string} name lower-case
 */
function header(req, name) {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(",") : (value ?? "");
}

/**
 * What the decision needs to know of this request, read as the Python middleware reads its WSGI
 * environ.
 * @param {Request} req
 * @param {EdgeConfig} config
 * @returns {import("./edge-decision.js").Facts}
 */
export function factsOf(req, config) {
  const target = req.url ?? "/";
  const rawPath = rawPathOf(target);
  const mark = target.indexOf("?");
  // Mounted under a prefix (Express `app.use("/shop", …)`), `url` is relative like PATH_INFO and
  // `originalUrl` is the whole path, like SCRIPT_NAME + PATH_INFO.
  const original = rawPathOf(/** @type {{originalUrl?: string}} */ (req).originalUrl ?? target);
  const socket = /** @type {import("node:tls").TLSSocket | undefined} */ (req.socket);
  const local = socket?.localAddress ?? "";
  const fallbackHost = `${local.includes(":") ? `[${local}]` : local}:${socket?.localPort ?? ""}`;
  /** @type {Record<string, string>} */
  const headers = {};
  for (const name of config.readHeaders) {
    if (req.headers[name] !== undefined) headers[name] = header(req, name);
  }
  // What the mount took off the front (Express `app.use("/shop", …)`), as SCRIPT_NAME.
  const scriptName = original.endsWith(rawPath) ? original.slice(0, original.length - rawPath.length) : "";
  return {
    method: req.method ?? "GET",
    path: wsgiPath(rawPath),
    scriptName: wsgiPath(scriptName),
    query: mark < 0 ? "" : target.slice(mark + 1),
    headers,
    rawPath,
    urlPath: quotePath(wsgiPath(original)),
    scheme: socket?.encrypted ? "https" : "http",
    host: header(req, "host") || fallbackHost,
    clientIp: config.clientIp(req) ?? null,
    sessionJti: config.sessionJti(req) ?? null,
    now: config.clock(),
  };
}

/**
 * Send a whole response (the middleware's own answers).
 * @param {Response} res
 * @param {Decision} decision
 */
function send(res, decision) {
  const body = decision.body === null ? "" : JSON.stringify(decision.body);
  res.statusCode = decision.status;
  for (const [name, value] of decision.headers) res.setHeader(name, value);
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
 * Enforce admissions on the configured path prefixes.
 *
 * @param {EdgeOptions} options
 * @returns {import("./index.d.ts").AnteroomMiddleware}
 */
export function anteroomMiddleware(options) {
  const config = edgeConfig(options);
  const state = new EdgeState();
  const anteroom = new AnteroomClient(httpTransport(config), config.clock);

  /** @type {import("./index.d.ts").AnteroomMiddleware} */
  const middleware = async (req, res, next) => {
    const rawPath = rawPathOf(req.url ?? "/");
    const original = rawPathOf(/** @type {{originalUrl?: string}} */ (req).originalUrl ?? req.url ?? "/");
    const scriptName = original.endsWith(rawPath) ? original.slice(0, original.length - rawPath.length) : "";
    if (config.routeTable.match(wsgiPath(rawPath), rawPath, wsgiPath(scriptName)).room === null) return next();
    let decision;
    try {
      const facts = factsOf(req, config);
      if (config.crawlerCheck !== null) facts.crawler = await verifiedCrawler(config, facts.clientIp, header(req, "user-agent"));
      if (checksAgent(config, facts)) facts.agent = await signedAgent(config, facts, signedRequestOf(req, facts));
      decision = decide(facts, config, state);
      if (decision.kind === "call") decision = await settle(decision, anteroom);
    } catch (error) {
      return next(error);
    }
    if (decision.kind === "respond") return send(res, decision);
    appendOnWriteHead(res, decision.headers);
    // Outside the try: an error thrown downstream is the app's, not ours to report again.
    return next();
  };
  middleware.roomFor = (path) => config.routeTable.match(path).room;
  return middleware;
}
