// The edge contract, tests/fixtures/edge_cases.json, against the Node middleware's decision
// function: no server and no transport; when it asks for a call to Anteroom, the case's canned
// answer is fed back to it. The Python suite
// (tests/unit/test_edge_contract.py) runs the same table against anteroom.edge_decision.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { clientAddress } from "../../frontend/node/crawlers.js";
import { EdgeState, decide } from "../../frontend/node/edge-decision.js";
import { rawPathOf } from "../../frontend/node/edge-paths.js";
import { checksAgent, edgeConfig, signedAgent, verifiedCrawler } from "../../frontend/node/middleware.js";
import { wsgiPath } from "../../frontend/node/url.js";

const table = JSON.parse(readFileSync(new URL("../fixtures/edge_cases.json", import.meta.url), "utf8"));

/** The facts a server gives for this request (the path decoded one char per byte, as WSGI). */
function factsOf(request, now) {
  const r = { ...table.defaults, ...request };
  const rawPath = rawPathOf(r.target);
  const mark = r.target.indexOf("?");
  const full = wsgiPath(rawPath);
  assert.ok(full.startsWith(r.scriptName)); // as gunicorn requires
  return {
    method: r.method,
    path: full.slice(r.scriptName.length),
    scriptName: r.scriptName,
    query: mark < 0 ? "" : r.target.slice(mark + 1),
    headers: Object.fromEntries(Object.entries(r.headers).map(([name, value]) => [name.toLowerCase(), value])),
    rawPath,
    urlPath: rawPath,
    scheme: r.scheme,
    host: r.host,
    clientIp: r.clientIp,
    sessionJti: r.sessionJti,
    now,
  };
}

/**
 * Feed the canned answers to the calls `decision` asks for: [the decision they lead to, the calls].
 * @returns {[any, {path: string, body: object}[]]}
 */
function answered(decision, answers, now) {
  const calls = [];
  while (decision.kind === "call") {
    calls.push({ path: decision.call.path, body: decision.call.body });
    const answer = answers.shift();
    decision = answer.unreachable ? decision.call.then(0, {}, now) : decision.call.then(answer.status, answer.body, now);
  }
  return [decision, calls];
}

/**
 * A resolver answering from the case's DNS facts (see make_edge_fixtures), as
 * `dns.promises.Resolver` answers: ENOTFOUND for a name that does not exist, ETIMEOUT when down.
 */
function cannedDns(facts) {
  const fail = (code) => Object.assign(new Error(code), { code });
  const forward = (version) => async (name, { ttl }) => {
    if (facts.down) throw fail("ETIMEOUT");
    const found = facts.forward[name];
    if (!found) throw fail("ENOTFOUND");
    const addresses = found.addresses.filter((a) => a.includes(":") === (version === 6));
    if (addresses.length === 0) throw fail("ENODATA");
    return addresses.map((address) => (ttl ? { address, ttl: found.ttl } : address));
  };
  return {
    async reverse(ip) {
      if (facts.down) throw fail("ETIMEOUT");
      const key = Object.keys(facts.ptr).find((listed) => clientAddress(listed)?.address === ip);
      if (key === undefined) throw fail("ENOTFOUND");
      return facts.ptr[key].names;
    },
    resolve4: forward(4),
    resolve6: forward(6),
  };
}

/** A key directory fetch answering from the case's directories (see make_edge_fixtures). */
function cannedDirectories(listed) {
  return async (url) => {
    const found = listed[url];
    if (!found) return { status: 404, cacheControl: "", body: "" };
    return { status: found.status, cacheControl: found.cacheControl, body: JSON.stringify(found.body) };
  };
}

function checkDecision(decision, expect) {
  assert.equal(decision.kind, expect.kind);
  if ("status" in expect) assert.equal(decision.status, expect.status);
  if ("reason" in expect) assert.equal(decision.reason, expect.reason);
  const headers = Object.fromEntries(decision.headers);
  for (const [name, value] of Object.entries(expect.headers ?? {})) assert.equal(headers[name] ?? null, value, name);
  if ("body" in expect) assert.deepEqual(decision.body, expect.body);
  for (const [name, value] of Object.entries(expect.bodyIncludes ?? {})) assert.deepEqual(decision.body?.[name], value, name);
  for (const [name, value] of Object.entries(expect.claims ?? {})) assert.deepEqual(decision.claims?.[name], value, name);
  if ("bypassRule" in expect) assert.equal(decision.bypassRule, expect.bypassRule);
  if ("crawler" in expect) assert.equal(decision.crawler, expect.crawler);
}

const ALL_REASONS = [
  "agent:refused",
  "agent:signature-refused",
  "queue:admission-expired",
  "queue:admission-forged",
  "queue:admission-malformed",
  "queue:admission-unknown-key",
  "queue:ambiguous-path",
  "queue:ip-mismatch",
  "queue:no-admission",
  "queue:session-mismatch",
  "queue:wrong-room",
];

test("the table names every refusal reason", () => {
  const reasons = new Set(table.cases.flatMap((c) => c.steps.map((s) => s.expect.reason)).filter(Boolean));
  assert.deepEqual([...reasons].sort(), ALL_REASONS);
});

for (const kase of table.cases) {
  test(`edge case: ${kase.name}`, async () => {
    let now = table.now;
    const c = { ...table.config, ...kase.config };
    // The transport swapped, as the canned answers stand for Anteroom's: the check is the SDK's.
    if (kase.dns && c.crawlers && c.crawlers !== "queue") c.dnsResolver = cannedDns(kase.dns);
    if (kase.directories) c.agentFetch = cannedDirectories(kase.directories);
    const config = edgeConfig({ ...c, clock: () => now });
    const state = new EdgeState();
    for (const [number, step] of kase.steps.entries()) {
      now = table.now + (step.at ?? 0);
      const answers = [...(step.anteroom ?? [])];
      const facts = factsOf(step.request, now);
      // As the middleware does: DNS asked before the decision, which never asks it itself.
      facts.crawler = await verifiedCrawler(config, facts.clientIp, facts.headers["user-agent"]);
      if (checksAgent(config, facts)) {
        const signed = { method: facts.method, scheme: facts.scheme, authority: facts.host, path: facts.rawPath ?? facts.path, query: facts.query, headers: facts.headers };
        facts.agent = await signedAgent(config, facts, signed);
      }
      const [decision, calls] = answered(decide(facts, config, state), answers, now);
      const where = `step ${number}: ${JSON.stringify(decision)}`;
      try {
        checkDecision(decision, step.expect);
        assert.deepEqual(calls, step.expect.calls ?? []);
        assert.deepEqual(answers, []); // every canned answer was asked for
        if ("verifications" in step.expect) assert.equal(state.verifications, step.expect.verifications);
        if ("agentDirectoryFetches" in step.expect) assert.equal(config.agentVerifier?.directories.fetches ?? 0, step.expect.agentDirectoryFetches);
        if ("dnsLookups" in step.expect) assert.equal(config.crawlerCheck?.lookups ?? 0, step.expect.dnsLookups);
      } catch (error) {
        error.message = `${where}\n${error.message}`;
        throw error;
      }
    }
  });
}

for (const bad of table.bypassErrors) {
  test(`a bad bypass rule is refused naming its field: ${bad.error}`, () => {
    const options = { ...table.config, bypass: bad.bypass };
    assert.throws(() => edgeConfig(options), (error) => error instanceof TypeError && error.message.includes(`\`bypass\` ${bad.error}`));
  });
}

for (const bad of table.crawlerErrors) {
  test(`a bad crawlers option is refused naming it: ${bad.error}`, () => {
    const options = { ...table.config, crawlers: bad.crawlers, dnsResolver: "192.0.2.53:53" };
    assert.throws(() => edgeConfig(options), (error) => error instanceof TypeError && error.message.includes("`crawlers`") && error.message.includes(bad.error));
  });
}

for (const bad of table.agentErrors) {
  test(`a bad agents option is refused naming it: ${bad.error}`, () => {
    const options = { ...table.config, agents: bad.agents };
    assert.throws(() => edgeConfig(options), (error) => error instanceof TypeError && error.message.includes("`agents`") && error.message.includes(bad.error));
  });
}
