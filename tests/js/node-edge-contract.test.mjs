// The edge contract, tests/fixtures/edge_cases.json, against the Node middleware's decision
// function: no server, Anteroom's canned answers behind the client's transport. The Python suite
// (tests/unit/test_edge_contract.py) runs the same table against anteroom.edge_decision.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { AnteroomClient, EdgeState, decide } from "../../frontend/node/edge-decision.js";
import { rawPathOf } from "../../frontend/node/edge-paths.js";
import { edgeConfig } from "../../frontend/node/middleware.js";
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

/** Canned answers for the transport, and the calls it was given. */
function cannedAnteroom() {
  const anteroom = { answers: [], calls: [] };
  anteroom.transport = async (path, body) => {
    anteroom.calls.push({ path, body });
    const answer = anteroom.answers.shift();
    return answer.unreachable ? [0, {}] : [answer.status, answer.body];
  };
  return anteroom;
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
}

const ALL_REASONS = [
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
    const config = edgeConfig({ ...c, clock: () => now });
    const anteroom = cannedAnteroom();
    const client = new AnteroomClient(config.publicKey, anteroom.transport, config.pauseAfterFailure, () => now);
    const state = new EdgeState();
    for (const [number, step] of kase.steps.entries()) {
      now = table.now + (step.at ?? 0);
      anteroom.answers = [...(step.anteroom ?? [])];
      anteroom.calls.length = 0;
      const decision = await decide(factsOf(step.request, now), config, state, client);
      const where = `step ${number}: ${JSON.stringify(decision)}`;
      try {
        checkDecision(decision, step.expect);
        assert.deepEqual(anteroom.calls, step.expect.calls ?? []);
        assert.deepEqual(anteroom.answers, []); // every canned answer was asked for
        if ("verifications" in step.expect) assert.equal(state.verifications, step.expect.verifications);
      } catch (error) {
        error.message = `${where}\n${error.message}`;
        throw error;
      }
    }
  });
}
