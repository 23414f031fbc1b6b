/**
 * Verified search crawlers at the Node edge: the same engines and the same check as the Python
 * SDK's `anteroom/sdk/crawlers.py` (docs/edge.md, "Search crawlers").
 *
 * A User-Agent may claim an engine's crawler; anyone can write one. The engines document the
 * check: the client address's reverse name must end in one of the engine's domains, and that
 * name's forward addresses (A for IPv4, AAAA for IPv6) must include the client address. A claim
 * that fails, a timeout or any DNS error means "not verified" (never a pass).
 *
 * Node's `dns.promises.Resolver` asks: the one given as `host:port` (`setServers`), else the
 * system's. A verdict is kept for the forward records' TTL, bounded to [MIN_TTL, MAX_TTL] (Node's
 * `reverse` does not say the PTR record's TTL: the Python edge takes the lesser of the two);
 * `NEGATIVE_TTL` for no reverse name or one not the engine's, `FAILURE_TTL` after a failure. At
 * most `maxEntries` verdicts (least recently used forgotten first) and `NEW_PER_SEC` new
 * verifications a second (burst `NEW_BURST`), beyond which a claim is not verified.
 */
import { Resolver } from "node:dns/promises";
import { isIP } from "node:net";

import { parseIPv4, parseIPv6 } from "./ip.js";

/** @typedef {{name: string, tokens: string[], domains: string[]}} Engine */

/** @type {Engine[]} Each engine's documented verification (as the Python SDK's ENGINES). */
export const ENGINES = [
  {
    name: "google",
    tokens: ["googlebot", "google-inspectiontool", "googleother", "storebot-google", "adsbot-google"],
    domains: ["googlebot.com", "google.com"],
  },
  { name: "bing", tokens: ["bingbot", "adidxbot", "microsoftpreview"], domains: ["search.msn.com"] },
  { name: "apple", tokens: ["applebot"], domains: ["applebot.apple.com"] },
  { name: "yandex", tokens: ["yandexbot", "yandeximages", "yandexmobilebot"], domains: ["yandex.ru", "yandex.net", "yandex.com"] },
  { name: "baidu", tokens: ["baiduspider"], domains: ["baidu.com", "baidu.jp"] },
];
export const ENGINE_NAMES = ENGINES.map((e) => e.name);
const USER_AGENT_READ = 512;
export const DEFAULT_TIMEOUT = 1;
export const MIN_TTL = 30;
export const MAX_TTL = 86_400;
export const NEGATIVE_TTL = 300;
export const FAILURE_TTL = 30;
const NEW_PER_SEC = 50;
const NEW_BURST = 100;
// Node's answers for "no such name" / "no such record": a definite no, not a failure.
const NEGATIVE = new Set(["ENOTFOUND", "ENODATA"]);

/**
 * The engines whose verified crawlers pass, from the `crawlers` option; a TypeError message on a
 * bad one (the caller names the option).
 * @param {unknown} value
 * @returns {Engine[]}
 */
export function crawlerEngines(value) {
  if (value === undefined || value === "queue") return [];
  if (value === "pass") return ENGINES;
  const names = ENGINE_NAMES.join(", ");
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError(`must be "queue", "pass" or a list of engines among ${names}`);
  }
  const unknown = value.find((name) => !ENGINE_NAMES.includes(name));
  if (unknown !== undefined) throw new TypeError(`${JSON.stringify(unknown)} is not an engine (${names})`);
  return ENGINES.filter((e) => value.includes(e.name));
}

/**
 * The engine whose crawler `userAgent` claims to be, among `among` (a claim, not a proof).
 * @param {string | null | undefined} userAgent
 * @param {Engine[]} [among]
 */
export function claimedEngine(userAgent, among = ENGINES) {
  if (!userAgent) return null;
  const text = userAgent.slice(0, USER_AGENT_READ).toLowerCase();
  return among.find((e) => e.tokens.some((token) => text.includes(token))) ?? null;
}

/**
 * @param {Engine} engine
 * @param {string} host
 */
function owns(engine, host) {
  host = host.toLowerCase().replace(/\.$/, "");
  return engine.domains.some((d) => host === d || host.endsWith(`.${d}`));
}

/**
 * The client's address in one canonical spelling (an IPv4-mapped IPv6 one as IPv4), or null.
 * @param {string | null | undefined} text
 * @returns {{address: string, version: 4 | 6} | null}
 */
export function clientAddress(text) {
  const bare = (text ?? "").split("%", 1)[0];
  if (isIP(bare) === 4) return parseIPv4(bare) ? { address: bare, version: 4 } : null;
  if (isIP(bare) !== 6) return null;
  const groups = parseIPv6(bare); // eight 16-bit groups
  if (!groups) return null;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return { address: [groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255].join("."), version: 4 };
  }
  return { address: groups.map((g) => g.toString(16)).join(":"), version: 6 };
}

/**
 * Same address? (Forward answers are spelled by the resolver; compare the bytes.)
 * @param {string} a
 * @param {string} b
 */
function sameAddress(a, b) {
  return clientAddress(a)?.address === clientAddress(b)?.address;
}

/**
 * The part of `dns.promises.Resolver` the check uses: what a test injects instead.
 * @typedef {object} DnsResolver
 * @property {(ip: string) => Promise<string[]>} reverse
 * @property {(name: string, options: {ttl: true}) => Promise<{address: string, ttl: number}[]>} resolve4
 * @property {(name: string, options: {ttl: true}) => Promise<{address: string, ttl: number}[]>} resolve6
 */

/**
 * A resolver asking `server` (`host:port`, "" for the system's), one try within `timeout` s.
 * @param {string} server
 * @param {number} timeout
 * @returns {DnsResolver}
 */
export function dnsResolver(server, timeout) {
  const resolver = new Resolver({ timeout: Math.max(1, Math.round(timeout * 1000)), tries: 1 });
  if (server) {
    const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(server.trim());
    const host = match?.[1] ?? match?.[2] ?? "";
    const port = Number(match?.[3]);
    if (!match || !isIP(host) || !(port > 0 && port < 65_536)) {
      throw new TypeError(`is host:port (an IP address and a port), not ${JSON.stringify(server)}`);
    }
    resolver.setServers([server.trim()]);
  }
  return resolver;
}

/** Checks crawler claims by reverse then forward DNS, remembering verdicts for their TTL. */
export class CrawlerCheck {
  /**
   * @param {DnsResolver} resolver
   * @param {{timeout?: number, clock?: () => number, maxEntries?: number, newPerSec?: number, newBurst?: number}} [options]
   *   `clock` in seconds (injectable: tests move time instead of waiting)
   */
  constructor(resolver, { timeout = DEFAULT_TIMEOUT, clock = () => performance.now() / 1000, maxEntries = 10_000, newPerSec = NEW_PER_SEC, newBurst = NEW_BURST } = {}) {
    this.resolver = resolver;
    this.timeout = timeout;
    this.clock = clock;
    this.maxEntries = maxEntries;
    this.newPerSec = newPerSec;
    this.newBurst = newBurst;
    this.lookups = 0; // verifications asked of DNS: what the cache saves
    this.overBudget = 0;
    this.tokens = newBurst;
    this.since = clock();
    /** @type {Map<string, {ok: boolean, until: number}>} in use order, oldest first */
    this.verdicts = new Map();
  }

  /**
   * The engine `userAgent` claims among `among`, when `address` proves it; else null.
   * @param {string | null | undefined} address
   * @param {string | null | undefined} userAgent
   * @param {Engine[]} [among]
   * @returns {Promise<Engine | null>}
   */
  async verified(address, userAgent, among = ENGINES) {
    const engine = claimedEngine(userAgent, among);
    if (engine === null) return null;
    const client = clientAddress(address);
    if (client === null) return null;
    const key = `${engine.name} ${client.address}`;
    const now = this.clock();
    const known = this.verdicts.get(key);
    if (known !== undefined && known.until > now) {
      this.verdicts.delete(key);
      this.verdicts.set(key, known);
      return known.ok ? engine : null;
    }
    this.tokens = Math.min(this.newBurst, this.tokens + Math.max(0, now - this.since) * this.newPerSec);
    this.since = now;
    if (this.tokens < 1) {
      this.overBudget += 1;
      return null;
    }
    this.tokens -= 1;
    this.lookups += 1;
    const [ok, ttl] = await this.ask(engine, client);
    this.verdicts.delete(key);
    this.verdicts.set(key, { ok, until: this.clock() + ttl });
    while (this.verdicts.size > this.maxEntries) this.verdicts.delete(this.verdicts.keys().next().value);
    return ok ? engine : null;
  }

  /**
   * [verified, seconds the verdict holds], both questions within one deadline.
   * @param {Engine} engine
   * @param {{address: string, version: 4 | 6}} client
   * @returns {Promise<[boolean, number]>}
   */
  async ask(engine, client) {
    /** @type {NodeJS.Timeout | undefined} */
    let timer;
    const deadline = new Promise((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error("timeout"), { code: "ETIMEOUT" })), this.timeout * 1000);
    });
    try {
      return await Promise.race([this.lookup(engine, client), deadline]);
    } catch (error) {
      return [false, NEGATIVE.has(/** @type {any} */ (error)?.code) ? NEGATIVE_TTL : FAILURE_TTL];
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * @param {Engine} engine
   * @param {{address: string, version: 4 | 6}} client
   * @returns {Promise<[boolean, number]>}
   */
  async lookup(engine, client) {
    const ours = (await this.resolver.reverse(client.address)).filter((name) => owns(engine, name));
    for (const name of ours.slice(0, 4)) {
      let found;
      try {
        found = await (client.version === 4 ? this.resolver.resolve4(name, { ttl: true }) : this.resolver.resolve6(name, { ttl: true }));
      } catch (error) {
        if (NEGATIVE.has(/** @type {any} */ (error)?.code)) continue;
        throw error;
      }
      const match = found.filter((record) => sameAddress(record.address, client.address));
      if (match.length > 0) return [true, bounded(Math.min(...found.map((r) => r.ttl)))];
    }
    return [false, NEGATIVE_TTL];
  }
}

/** @param {number} ttl */
function bounded(ttl) {
  return Number.isFinite(ttl) ? Math.min(MAX_TTL, Math.max(MIN_TTL, ttl)) : MIN_TTL;
}
