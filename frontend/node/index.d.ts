/**
 * Anteroom for Node servers (`anteroom/node`): verify admissions offline and protect a site's
 * paths. The same results, reasons and responses as the Python `anteroom.verify` and
 * `anteroom.edge`. Node 20+, no dependencies.
 *
 * @example Verify an admission in any handler
 * ```js
 * import { verifyAdmission } from "anteroom/node";
 *
 * const result = verifyAdmission(token, process.env.ANTEROOM_KEYS, {
 *   room: "spring-drop",
 *   clientIp: req.socket.remoteAddress,
 * });
 * if (!result.valid) console.log(result.reason); // "expired", "wrong-room", …
 * else console.log(result.claims.vid);
 * ```
 *
 * @example Protect paths (Express, connect, or plain node:http)
 * ```js
 * import http from "node:http";
 * import { anteroomMiddleware } from "anteroom/node";
 *
 * const anteroom = anteroomMiddleware({
 *   keys: process.env.ANTEROOM_KEYS,
 *   baseUrl: "https://queue.example.com",
 *   publicKey: "pk_live_123",
 *   routes: { "/checkout": "spring-drop", "/api/cart": "spring-drop" },
 * });
 * app.use(anteroom); // Express
 * http.createServer((req, res) => anteroom(req, res, () => shop(req, res))).listen(8080);
 * ```
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** Why a token was refused. */
export type RefusalReason =
  | "malformed"
  | "forged"
  | "expired"
  | "unknown-key"
  | "wrong-room"
  | "ip-mismatch"
  | "session-mismatch";

/** `valid` with the token's claims, or refused with a `reason`. */
export type VerifyResult =
  | { valid: true; reason: null; claims: Record<string, unknown> }
  | { valid: false; reason: RefusalReason; claims: null };

/** Key ring: kid -> secret bytes, in signing order; every key verifies. */
export declare class Keyring {
  /** From an object or Map of kid -> Buffer/Uint8Array (at least 16 bytes each). */
  constructor(keys: Map<string, Uint8Array> | Record<string, Uint8Array>);
  /** Parse `kid:base64secret,kid2:base64secret` (the `ANTEROOM_KEYS` format). */
  static parse(text: string): Keyring;
  /** Accept any form of `Keys`. */
  static coerce(keys: Keys): Keyring;
  has(kid: string): boolean;
  readonly kids: string[];
}

/**
 * The keyring: the `ANTEROOM_KEYS` string, an object or Map of kid -> secret bytes (as Python,
 * secrets are bytes, never strings), or a Keyring. Unusable keys throw a TypeError.
 */
export type Keys = string | Map<string, Uint8Array> | Record<string, Uint8Array> | Keyring;

export interface VerifyAdmissionOptions {
  /** Room slug or room id the admission must be for. */
  room?: string | null;
  /** The client's address; required when the room binds the network (claim `qi`). */
  clientIp?: string | null;
  /** The session `jti` that must have earned the admission. */
  sessionJti?: string | null;
  /** Now, in epoch seconds (default: the clock). */
  now?: number;
}

/**
 * Verify an admission token (`ab1.…`) offline. Never throws for a bad token, only for unusable
 * `keys`.
 */
export function verifyAdmission(token: unknown, keys: Keys, options?: VerifyAdmissionOptions): VerifyResult;

/** Verify a session token (`st1.…`) offline; reasons as for `verifyAdmission`. */
export function verifySession(token: unknown, keys: Keys, options?: { now?: number }): VerifyResult;

export type BypassRule =
  | { kind: "path-prefix" | "address-range"; value: string }
  | { kind: "header" | "cookie"; name: string; secret: string };

export interface EdgeOptions {
  keys: Keys;
  /** Where Anteroom is, e.g. `https://queue.example.com`. */
  baseUrl: string;
  /** The environment's public key (`pk_…`). */
  publicKey: string;
  /** Path prefix -> room slug (`{"/checkout": "spring-drop"}`); the longest prefix wins. */
  routes: Record<string, string> | Map<string, string>;
  /** Seconds after which an admission in use is renewed (default 15). */
  refreshAfter?: number;
  /** Seconds to wait for Anteroom on a refresh or a queue-through poll (default 2). */
  timeout?: number;
  /** Seconds without calls to Anteroom after one failed (unreachable or 5xx; default 5). */
  pauseAfterFailure?: number;
  /**
   * Mark the `_abq` cookie `Secure` (default true). Turn off only for local development over
   * plain http; an https request still gets it. The `Host` header never decides.
   */
  secureCookie?: boolean;
  /**
   * Match routes exactly (default false: any case, as Express routes by default). Repeated
   * slashes are collapsed either way.
   */
  caseSensitive?: boolean;
  /**
   * The prefix the app is served under, when routes are written as the browser sees them
   * (`"/shop"` with routes `{"/shop/checkout": …}`); the mount's own prefix (`originalUrl`) must
   * agree with it.
   */
  mount?: string;
  /** Language prefixes a route may follow (`["fr", "de"]`: `/fr/checkout` is `/checkout`'s). */
  languages?: string[];
  /**
   * The CORS headers the edge answers a preflight to a protected path with (204, no body). An
   * `Access-Control-Allow-Origin` given as a list echoes the request's origin when listed.
   */
  preflightHeaders?: Record<string, string | string[]>;
  /** Pass preflights to the app, which answers OPTIONS itself (default false: the edge does). */
  appAnswersOptions?: boolean;
  /**
   * The room's bypass rules (docs/operators.md, "Bypass rules"), secrets in clear: a protected
   * request the first matching rule lets through goes to the app with no admission check, e.g.
   * `[{kind: "path-prefix", value: "/static/"}, {kind: "address-range", value: "203.0.113.0/24"},
   * {kind: "header", name: "X-Monitor", secret: process.env.MONITOR_SECRET}]`.
   */
  bypass?: BypassRule[];
  /**
   * The room's `crawlers` setting (docs/operators.md, "Search crawlers"): `"queue"` (default: no
   * check), `"pass"` (verified crawlers of every known engine pass with no admission) or a list
   * of engines (`["google", "bing"]`). A claim is verified by reverse then forward DNS.
   */
  crawlers?: "queue" | "pass" | Array<"google" | "bing" | "apple" | "yandex" | "baidu">;
  /**
   * The resolver the crawler check asks: `"ip:port"` (default "": the system's), or an object
   * with `dns.promises.Resolver`'s `reverse`, `resolve4` and `resolve6`.
   */
  dnsResolver?: string | Pick<import("node:dns/promises").Resolver, "reverse" | "resolve4" | "resolve6">;
  /** Seconds for the crawler check's questions together (default 1; at most 10). */
  dnsTimeout?: number;
  /**
   * The room's `agents` setting (docs/operators.md, "Signed agents"): a key directory's host, or
   * `"*"` for any verified agent, to `"queue"` or `"refuse"`; `{}` (default) checks no signature.
   * A protected request with no admission carrying a Web Bot Auth signature is verified (RFC
   * 9421, Ed25519): refused agents get 403, signatures that do not hold 401.
   */
  agents?: Record<string, "queue" | "lane" | "refuse">;
  /** A CA file (PEM) trusted besides Node's roots when fetching agents' key directories. */
  agentCaFile?: string;
  /** Seconds a key directory's fetch may take (default 2; at most 10). */
  agentTimeout?: number;
  /**
   * Fetch key directories on private addresses too (default false: only public ones, judged on
   * the address connected to, so a `Signature-Agent` cannot point the edge into your network).
   */
  agentPrivateDirectories?: boolean;
  /** How key directories are fetched (default: node:https); tests answer from canned ones. */
  agentFetch?: (url: string) => Promise<{ status: number; cacheControl: string; body: string | Buffer }>;
  /** The client's address (default `req.socket.remoteAddress`); behind a proxy, read it here. */
  clientIp?: (req: IncomingMessage) => string | null | undefined;
  /** The session `jti` an admission must match (default: none is checked). */
  sessionJti?: (req: IncomingMessage) => string | null | undefined;
  /** Now, in epoch seconds (default `Date.now() / 1000`). */
  clock?: () => number;
  /** The `fetch` used to reach Anteroom (default the global one). */
  fetch?: typeof fetch;
}

/**
 * A connect/Express-style middleware. Resolves once it has answered the request itself or called
 * `next()` (with an error only for a failure of its own).
 */
export interface AnteroomMiddleware {
  (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): Promise<void>;
  /** The room slug protecting `path` (decoded, without query; also for an ambiguous one), or null. */
  roomFor(path: string): string | null;
}

/**
 * Enforce admissions on `options.routes`: a valid `_abq` cookie or `Anteroom-Admission` header
 * passes offline (renewed after `refreshAfter` s); `?abq=` becomes the cookie with a 307;
 * otherwise a browser navigation gets 303 to the hosted page and anything else 429 + JSON
 * `{error: "QueueRequired", room, api, queuePage, retryAfter}`. `Anteroom-Ticket: qt1…` is polled
 * through. A CORS preflight passes. Paths are matched with repeated slashes collapsed and (unless
 * `caseSensitive`) any case; a spelling routers disagree about (`.`/`..` segments, `%2F`, `%5C`,
 * `%00`, backslash, NUL, a bad `%` escape) that any reading protects gets 400 `AmbiguousPath`.
 * Each refusal names its reason in `Anteroom-Enforcement` (`queue:no-admission`,
 * `queue:admission-<why>`, `queue:wrong-room`, `queue:ip-mismatch`, `queue:session-mismatch`,
 * `queue:ambiguous-path`).
 * Bad options throw a TypeError naming the option.
 */
export function anteroomMiddleware(options: EdgeOptions): AnteroomMiddleware;
