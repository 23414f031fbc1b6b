/**
 * The edge's decision: request facts in, what to do out. No `req`, no `res`, no sockets, no HTTP
 * calls. The same rules as the Python `anteroom.sdk.edge_decision`; both pass
 * `tests/fixtures/edge_cases.json`.
 *
 * `decide(facts, config, state)` says whether a request passes untouched (`pass`), passes with an
 * admission and headers to add to the app's answer (`admit`), is answered by the edge itself
 * (`respond`: 307 hand-over, 303 to the hosted page, 429 `QueueRequired`, 400 for an ambiguous
 * path, 204 for a CORS preflight), or first needs an answer from Anteroom (`call`: poll a ticket,
 * renew an admission). A `call` names the request and what to do with the answer: the adapter
 * makes it (`edge-client.js`'s `settle`) and feeds the answer to `call.then`, which decides.
 */
import { match as matchBypass, parseCookies } from "./bypass-rules.js";
import { quote, urlencode, parseQsl } from "./url.js";
import { verifyAdmission } from "./verify.js";

export const COOKIE = "_abq";
export const HANDOVER_PARAM = "abq";
export const ADMISSION_HEADER = "Anteroom-Admission";
export const TICKET_HEADER = "Anteroom-Ticket";
export const REASON_HEADER = "Anteroom-Enforcement";
export const AMBIGUOUS_PATH = "queue:ambiguous-path";
export const QUEUE_RETRY_SEC = 5;
export const POLL_PATH = "/api/v1/queue/poll";
export const REFRESH_PATH = "/api/v1/admission/refresh";
// The admission claim of a room with sessionRenewal off (anteroom.sdk.tokens.NOT_RENEWABLE).
export const NOT_RENEWABLE = "nr";
// Renewal attempts remembered per admission (jti), so a burst of requests renews once.
const MAX_TRACKED_RENEWALS = 10_000;
// Admissions already verified, kept so a visitor's next requests skip the signature and parsing.
const MAX_VERIFIED = 4_096;

/** @typedef {Record<string, any>} Claims */
/** @typedef {[string, string][]} Headers */

/**
 * What the decision needs to know of a request. `path` is decoded one char per byte, as the app
 * routes it (WSGI's PATH_INFO); `rawPath` is how the client spelled it; `urlPath` the path of the
 * request's own URL, for the URLs the edge builds; `headers` has lower-case names.
 * @typedef {object} Facts
 * @property {string} method
 * @property {string} path
 * @property {string} query
 * @property {Record<string, string>} headers
 * @property {string | null} rawPath
 * @property {string} urlPath
 * @property {string} scheme
 * @property {string} host
 * @property {string | null} clientIp
 * @property {string | null} sessionJti
 * @property {number} now
 * @property {string} [scriptName] the prefix the app was reached under (SCRIPT_NAME)
 * @property {string | null} [crawler] the engine, when the middleware verified the request as a
 *   crawler the edge lets through (by DNS, which `decide` never asks itself)
 * @property {AgentFacts | null} [agent] a signed request's verdict (the middleware's `signedAgent`)
 */

/**
 * A signed request's verdict at the edge: `invalid` (`reason`: why), `refused` (by the policy) or
 * `verified` (refused as anyone without an admission is).
 * @typedef {{outcome: "invalid" | "refused" | "verified", reason: string | null, directory: string | null}} AgentFacts
 */

/**
 * A request to Anteroom the decision needs: POST `body` to `path`; `then` takes the HTTP status
 * (0: unreachable), the JSON object and the time it came, and decides.
 * @typedef {object} Call
 * @property {string} path
 * @property {Record<string, unknown>} body
 * @property {(status: number, answer: Record<string, any>, now: number) => Decision} then
 */

/**
 * @typedef {object} Decision
 * @property {"pass" | "admit" | "respond" | "call"} kind
 * @property {number} status
 * @property {Headers} headers for `admit`, added to the app's answer
 * @property {Record<string, unknown> | null} body the JSON body of a `respond` (null: empty)
 * @property {string | null} reason
 * @property {Claims | null} claims
 * @property {Call | null} call for `call`: what to ask Anteroom first
 * @property {number} [bypassRule] `pass` by a bypass rule: its index in the config's `bypass`
 * @property {string} [crawler] `pass` of a verified crawler: its engine
 */

/**
 * What the decision reads of the configuration (the middleware's config has more).
 * @typedef {object} DecisionConfig
 * @property {import("./tokens.js").Keyring} keys
 * @property {string} baseUrl
 * @property {string} publicKey
 * @property {import("./edge-paths.js").RouteTable} routeTable
 * @property {number} refreshAfter
 * @property {boolean} secureCookie
 * @property {number} pauseAfterFailure
 * @property {Record<string, string | string[]>} [preflightHeaders]
 * @property {boolean} [appAnswersOptions]
 * @property {import("./bypass-rules.js").Rule[]} [bypass] the room's bypass rules, checked
 */

/**
 * @param {Decision["kind"]} kind
 * @param {Partial<Decision>} [rest]
 * @returns {Decision}
 */
const decision = (kind, rest = {}) => ({ kind, status: 200, headers: [], body: null, reason: null, claims: null, call: null, ...rest });

const PASS = decision("pass");

/**
 * What the edge remembers between requests: verified admissions, renewal attempts, and until when
 * Anteroom is left alone after it failed us (an outage so costs one timeout, not one per request).
 */
export class EdgeState {
  pausedUntil = 0;

  /**
   * No calls to Anteroom now: it failed us less than `pauseAfterFailure` s ago.
   * @param {number} now
   */
  paused(now) {
    return now < this.pausedUntil;
  }

  /**
   * Note how Anteroom answered: unreachable (0) or a 5xx pauses calls for `pause` s.
   * @param {number} status
   * @param {number} now
   * @param {number} pause
   */
  answered(status, now, pause) {
    if (status === 0 || status >= 500) this.pausedUntil = now + pause;
  }

  /** @type {Map<string, Claims>} */
  verified = new Map();
  /** When each admission (by jti) was last renewed or tried; oldest first. @type {Map<string, number>} */
  renewedAt = new Map();
  /** Full signature checks made: what the cache saves. */
  verifications = 0;

  /**
   * Claim the renewal of `jti`: once per `every` seconds, whatever the answer. Requests still
   * carrying the old cookie (in flight, other tabs) renew once, and a refused renewal is not
   * asked again on every request.
   * @param {string} jti
   * @param {number} now
   * @param {number} every
   */
  renewalDue(jti, now, every) {
    const last = this.renewedAt.get(jti);
    if (last !== undefined && now - last < every) return false;
    this.renewedAt.delete(jti); // re-inserted last: the Map stays oldest first
    this.renewedAt.set(jti, now);
    while (this.renewedAt.size > MAX_TRACKED_RENEWALS) {
      this.renewedAt.delete(/** @type {string} */ (this.renewedAt.keys().next().value));
    }
    return true;
  }
}

// -- reading the request ----------------------------------------------------------------------

/**
 * The value of cookie `name` in a `Cookie` header, or null.
 * @param {string} header
 * @param {string} name
 */
export function cookieValue(header, name) {
  if (!header || !header.includes(name)) return null;
  for (const part of header.split(";")) {
    const trimmed = part.trim();
    const equals = trimmed.indexOf("=");
    const key = equals < 0 ? trimmed : trimmed.slice(0, equals);
    if (key === name) return equals < 0 ? "" : trimmed.slice(equals + 1);
  }
  return null;
}

/**
 * [the last `abq` value or null, the query without it], other parameters verbatim and in order.
 * @param {string} query
 * @returns {[string | null, string]}
 */
export function splitHandover(query) {
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
 * @param {Facts} facts
 * @param {string} name lower-case
 */
const header = (facts, name) => facts.headers[name] ?? "";

/**
 * A browser loading a page (it can follow a 303 to the hosted page).
 * @param {Facts} facts
 */
export function isNavigation(facts) {
  if (facts.method !== "GET" && facts.method !== "HEAD") return false;
  const mode = header(facts, "sec-fetch-mode");
  if (mode && mode !== "navigate") return false;
  const accept = header(facts, "accept");
  return accept.includes("text/html") && !accept.split(",")[0].includes("application/json");
}

/**
 * The request's absolute URL, with `query` in place of its own when given.
 * @param {Facts} facts
 * @param {string} [query]
 */
export function urlOf(facts, query = facts.query) {
  return `${facts.scheme}://${facts.host}${facts.urlPath}${query ? `?${query}` : ""}`;
}

// -- deciding ---------------------------------------------------------------------------------

/**
 * [refusal reason or null, a copy of the claims] for an admission token.
 * @param {string} token
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @param {EdgeState} state
 * @param {string} room
 * @returns {[string | null, Claims]}
 */
export function check(token, facts, config, state, room) {
  // A visitor shows the same token on every request. Once it verified for this room, address and
  // session, nothing in it can change but its age: only expiry is checked again (as
  // verifyAdmission does: expired when exp <= now).
  const key = JSON.stringify([token, room, facts.clientIp, facts.sessionJti]);
  const known = state.verified.get(key);
  if (known !== undefined) return known.exp > facts.now ? [null, { ...known }] : ["queue:admission-expired", {}];
  state.verifications += 1;
  const result = verifyAdmission(token, config.keys, {
    room,
    clientIp: facts.clientIp,
    sessionJti: facts.sessionJti,
    now: facts.now,
  });
  if (result.valid) {
    if (state.verified.size >= MAX_VERIFIED) state.verified.clear(); // bounded; the active verify again once
    state.verified.set(key, result.claims);
    return [null, { ...result.claims }]; // a copy: the app may change its own
  }
  const reason = result.reason ?? "malformed";
  if (["malformed", "forged", "expired", "unknown-key"].includes(reason)) return [`queue:admission-${reason}`, {}];
  return [`queue:${reason}`, {}];
}

/**
 * The `_abq` cookie for `token`, for as long as it lives.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @param {string} token
 * @param {Claims} claims
 */
export function admissionCookie(facts, config, token, claims) {
  const life = Math.max(0, Math.trunc(Number(claims.exp ?? 0) - facts.now));
  const value = `${COOKIE}=${token}; Path=/; Max-Age=${life}; HttpOnly; SameSite=Lax`;
  // Never from the Host header, which whoever sends the request (or a proxy) chooses.
  return config.secureCookie || facts.scheme === "https" ? `${value}; Secure` : value;
}

/**
 * 429 `QueueRequired`; never 503: a line is not an outage, and must not page anyone.
 * @param {DecisionConfig} config
 * @param {string} room
 * @param {string} reason
 * @param {number} retry
 * @param {Record<string, unknown>} extra
 */
function tooMany(config, room, reason, retry, extra) {
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
  /** @type {Headers} */
  const headers = [
    ["Content-Type", "application/json"],
    ["Retry-After", String(retry)],
    [REASON_HEADER, reason],
    ["Cache-Control", "no-store"],
  ];
  return decision("respond", { status: 429, headers, body, reason });
}

/**
 * A navigation goes (303) to the hosted page and back; anything else gets a 429.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @param {string} room
 * @param {string} reason
 * @param {string} [query] the query of the return URL, when not the request's own
 */
function refuse(facts, config, room, reason, query) {
  const page =
    `${config.baseUrl}/queue/${quote(room)}?` +
    urlencode([
      ["key", config.publicKey],
      ["return", urlOf(facts, query)],
    ]);
  if (isNavigation(facts) && !header(facts, "anteroom-ticket")) {
    /** @type {Headers} */
    const headers = [
      ["Location", page],
      [REASON_HEADER, reason],
      ["Cache-Control", "no-store"],
    ];
    return decision("respond", { status: 303, headers, reason });
  }
  return tooMany(config, room, reason, QUEUE_RETRY_SEC, { queuePage: page });
}

/**
 * 400: the path reads as a protected one to some router; say how to ask for it.
 * @param {string} room
 */
export const AGENT_REFUSED = "agent:refused";
export const SIGNATURE_REFUSED = "agent:signature-refused";

/**
 * 403 for an agent the room's policy refuses; 401 for a signature that does not hold.
 * @param {string} room
 * @param {AgentFacts} agent
 */
function agentRefused(room, agent) {
  const refused = agent.outcome === "refused";
  const reason = refused ? AGENT_REFUSED : SIGNATURE_REFUSED;
  const body = refused
    ? { error: "AgentRefused", message: "This site does not admit automated agents signed by this key directory.", room }
    : { error: "SignatureRefused", message: `The request's signature is refused (${agent.reason}).`, reason: agent.reason, room };
  /** @type {Headers} */
  const headers = [
    ["Content-Type", "application/json"],
    [REASON_HEADER, reason],
    ["Cache-Control", "no-store"],
  ];
  return decision("respond", { status: refused ? 403 : 401, headers, body, reason });
}

function ambiguous(room) {
  const body = {
    error: "AmbiguousPath",
    message:
      "This path can be read more than one way; request it without '.' or '..' segments, encoded slashes, backslashes or NUL.",
    room,
  };
  /** @type {Headers} */
  const headers = [
    ["Content-Type", "application/json"],
    [REASON_HEADER, AMBIGUOUS_PATH],
    ["Cache-Control", "no-store"],
  ];
  return decision("respond", { status: 400, headers, body, reason: AMBIGUOUS_PATH });
}

/**
 * 204 with the site's CORS headers and no body: a preflight learns nothing of the handler. An
 * `Access-Control-Allow-Origin` given as a list echoes the request's origin when listed.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @returns {Decision}
 */
export function preflight(facts, config) {
  /** @type {Headers} */
  const headers = [];
  for (const [name, value] of Object.entries(config.preflightHeaders ?? {})) {
    if (typeof value === "string") headers.push([name, value]);
    else if (name.toLowerCase() === "access-control-allow-origin") {
      const origin = header(facts, "origin");
      if (value.includes(origin)) headers.push([name, origin]);
      headers.push(["Vary", "Origin"]);
    } else headers.push([name, value.join(", ")]);
  }
  return decision("respond", { status: 204, headers });
}

/**
 * What to do with a request: see the module comment and `tests/fixtures/edge_cases.json`.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @param {EdgeState} state
 * @returns {Decision}
 */
export function decide(facts, config, state) {
  const match = config.routeTable.match(facts.path, facts.rawPath, facts.scriptName ?? "");
  if (match.room === null) return PASS;
  const room = match.room;
  if (match.ambiguous) return ambiguous(room);
  if (config.bypass?.length) {
    const bypassed = bypassedBy(facts, config);
    if (bypassed !== null) return decision("pass", { bypassRule: bypassed });
  }
  // Verified by DNS against the engine's own domains: no admission, nothing counted.
  if (facts.crawler) return decision("pass", { crawler: facts.crawler });
  if (facts.agent && facts.agent.outcome !== "verified") return agentRefused(room, facts.agent);
  if (facts.method === "OPTIONS" && header(facts, "access-control-request-method")) {
    // A CORS preflight never carries the admission it asks about: refusing it would lock out
    // every cross-origin app. Passed on, it would reach handlers that answer any method with
    // their content; so the edge answers it, unless the app declares it answers OPTIONS itself.
    return config.appAnswersOptions ? PASS : preflight(facts, config);
  }
  if (facts.query.includes(HANDOVER_PARAM)) {
    const [handed, clean] = splitHandover(facts.query);
    if (handed !== null) return handOver(facts, config, state, room, handed, clean);
  }
  const ticket = header(facts, "anteroom-ticket");
  const token = header(facts, "anteroom-admission") || cookieValue(header(facts, "cookie"), COOKIE);
  if (token) {
    const [reason, claims] = check(token, facts, config, state, room);
    if (reason === null) return admit(facts, config, state, token, claims, room);
    if (!ticket) return refuse(facts, config, room, reason);
  }
  if (ticket) return queueThrough(facts, config, state, room, ticket);
  return refuse(facts, config, room, "queue:no-admission");
}

/**
 * Index of the first bypass rule the request matches, or null. Called only once the path is
 * known unambiguous, and prefixes are matched on its one plain reading.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @returns {number | null}
 */
export function bypassedBy(facts, config) {
  const reading = config.routeTable.plainReading(facts.path, facts.rawPath, facts.scriptName ?? "");
  const cookies = parseCookies(header(facts, "cookie"));
  const found = matchBypass(config.bypass ?? [], reading, facts.clientIp, facts.headers, cookies);
  return found === null ? null : found[0];
}

/**
 * `?abq=` -> the cookie and a 307 to the URL without it; an invalid one sets nothing.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @param {EdgeState} state
 * @param {string} room
 * @param {string} token
 * @param {string} clean
 */
function handOver(facts, config, state, room, token, clean) {
  const [reason, claims] = check(token, facts, config, state, room);
  if (reason !== null) return refuse(facts, config, room, reason, clean);
  /** @type {Headers} */
  const headers = [
    ["Location", urlOf(facts, clean)],
    ["Set-Cookie", admissionCookie(facts, config, token, claims)],
    ["Cache-Control", "no-store"],
    // The token was in the address bar: keep it out of the next page's Referer.
    ["Referrer-Policy", "no-referrer"],
  ];
  return decision("respond", { status: 307, headers });
}

/**
 * Let the request through; renew an old admission on the way (best effort), unless it says it
 * is not renewable: then it ends at its expiry, and `check` sends its visitor back to the line,
 * with no call to Anteroom either way.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @param {EdgeState} state
 * @param {string} token
 * @param {Claims} claims
 * @param {string} room
 * @returns {Decision}
 */
function admit(facts, config, state, token, claims, room) {
  const issuedAt = typeof claims.iat === "number" ? claims.iat : 0;
  if (facts.now - issuedAt < config.refreshAfter) return decision("admit", { claims }); // the fast path
  if (claims[NOT_RENEWABLE]) return decision("admit", { claims });
  const jti = String(claims.jti || token);
  if (state.paused(facts.now) || !state.renewalDue(jti, facts.now, config.refreshAfter)) {
    return decision("admit", { claims });
  }
  /** @type {Call["then"]} */
  const renewed = (status, answer, now) => {
    state.answered(status, now, config.pauseAfterFailure);
    const fresh = status === 200 && typeof answer.token === "string" ? answer.token : null;
    if (fresh === null) return decision("admit", { claims }); // it still counts until its own expiry
    const [reason, freshClaims] = check(fresh, facts, config, state, room);
    if (reason !== null) return decision("admit", { claims });
    if (header(facts, "anteroom-admission")) {
      return decision("admit", { headers: [[ADMISSION_HEADER, fresh]], claims: freshClaims });
    }
    const cookie = admissionCookie(facts, config, fresh, freshClaims);
    return decision("admit", { headers: [["Set-Cookie", cookie]], claims: freshClaims });
  };
  const body = { apiKey: config.publicKey, token };
  return decision("call", { claims, call: { path: REFRESH_PATH, body, then: renewed } });
}

/**
 * Poll the app's ticket: 429 while it waits, pass once admitted.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @param {EdgeState} state
 * @param {string} room
 * @param {string} ticket
 * @returns {Decision}
 */
function queueThrough(facts, config, state, room, ticket) {
  if (state.paused(facts.now)) return ticketAnswer(facts, config, state, room, 0, {}); // as if unreachable, uncalled
  /** @type {Call["then"]} */
  const polled = (status, answer, now) => {
    state.answered(status, now, config.pauseAfterFailure);
    return ticketAnswer(facts, config, state, room, status, answer);
  };
  return decision("call", { call: { path: POLL_PATH, body: { apiKey: config.publicKey, ticket }, then: polled } });
}

/**
 * What Anteroom said of the ticket (status 0: nothing) decides: 429 while it waits, pass with the
 * admission once admitted.
 * @param {Facts} facts
 * @param {DecisionConfig} config
 * @param {EdgeState} state
 * @param {string} room
 * @param {number} status
 * @param {Record<string, any>} answer
 * @returns {Decision}
 */
function ticketAnswer(facts, config, state, room, status, answer) {
  const polled = status === 200 ? answer.status : undefined;
  if (polled === "admitted" && typeof answer.token === "string") {
    const [reason, claims] = check(answer.token, facts, config, state, room);
    if (reason === null) return decision("admit", { headers: [[ADMISSION_HEADER, answer.token]], claims });
    return tooMany(config, room, reason, QUEUE_RETRY_SEC, {});
  }
  if (polled === "waiting" || polled === "held") {
    const pollAfterMs = typeof answer.pollAfterMs === "number" && answer.pollAfterMs ? answer.pollAfterMs : 5000;
    const retry = Math.max(1, Math.ceil(pollAfterMs / 1000));
    const figures = { status: polled, position: answer.position ?? null, etaSeconds: answer.etaSeconds ?? null };
    return tooMany(config, room, "queue:no-admission", retry, figures);
  }
  // Not waiting: the room is idle, the ticket was refused (gone, invalid: enter again), or
  // Anteroom could not be reached. Say which, and keep to Anteroom's own Retry-After.
  const retryAfter = answer.retryAfter;
  const retry = Number.isInteger(retryAfter) && retryAfter > 0 ? retryAfter : QUEUE_RETRY_SEC;
  /** @type {Record<string, unknown>} */
  const figures = { status: polled || "unknown" };
  if (typeof answer.error === "string") figures.ticketError = answer.error;
  return tooMany(config, room, "queue:no-admission", retry, figures);
}
