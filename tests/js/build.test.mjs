import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import vm from "node:vm";
import { describe, test } from "node:test";
import { gzipSync } from "node:zlib";

import { build } from "esbuild";
import { bundles, common } from "../../frontend/build.mjs";

/** Builds one bundle of build.mjs in memory, as `npm run build` would write it. */
async function built(outfile, overrides = {}) {
  const bundle = bundles.find((candidate) => candidate.outfile === outfile);
  const result = await build({ ...common, ...bundle, ...overrides, write: false });
  return result.outputFiles[0].text;
}

describe("the built bundles", () => {
  test("static/anteroom.js defines window.anteroom", async () => {
    const code = await built("static/anteroom.js");
    const window = {};
    window.window = window;
    vm.runInNewContext(code, window);
    assert.equal(typeof window.anteroom.enterQueue, "function");
    const error = new window.anteroom.AnteroomError("x", { code: "QueueDenied", status: 403 });
    assert.deepEqual([error.name, error.code, error.status, error.retryAfter], ["AnteroomError", "QueueDenied", 403, null]);
    assert.throws(() => window.anteroom.enterQueue("spring-drop", { apiKey: "nope" }), /`apiKey`/);
  });

  test("static/anteroom.mjs exports the same API", async () => {
    const code = await built("static/anteroom.mjs");
    const module = await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
    assert.deepEqual(Object.keys(module).sort(), ["AnteroomError", "enterQueue"]);
  });

  test("the minified worker source still runs on its own", async () => {
    const code = await built("static/anteroom.mjs", {
      entryPoints: ["frontend/pow-worker.js"],
      outfile: undefined,
    });
    const { workerSource } = await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
    // With WebAssembly (its search) and without (the JS one): both survive minification.
    for (const [globals, kind] of [[{ WebAssembly, atob }, "wasm"], [{}, "js"]]) {
      const messages = [];
      const self = { postMessage: (data) => messages.push(data), onmessage: null };
      vm.runInNewContext(workerSource(), { self, TextEncoder, ...globals });
      self.onmessage({ data: { prefix: "pc1.k1.built.sig", difficulty: 12, index: 0 } });
      assert.equal(messages[0].kind, kind);
      const digest = createHash("sha256").update(`pc1.k1.built.sig:${messages[1].solution}`).digest();
      assert.equal(digest[0], 0);
      assert.ok(digest[1] < 16);
    }
  });

  test("the bundles stay small", async () => {
    // What visitors load stays under 10 kB, the hosted page's script under 13.5 kB (it carries the
    // agent with its worker solver, its WebAssembly search (about 2 kB gzipped, as base64) and
    // between-poll estimates, and the page's states: a random room's odds and an invite's refusals
    // took it past 13 kB, a notify room's e-mail form to 13.5 kB, hence 13.7 kB); the operator
    // console carries uPlot (about 20 kB) and, loaded by operators only, its forms (keys and
    // invites took it from 33.8 to 37.2 kB; the forms that change rooms about 7 kB more, mostly the
    // words of their labels, hints and confirmations); the API reference at /docs is Swagger UI's bundle (about
    // 450 kB), loaded by developers only.
    const limits = {
      "static/hosted.js": 13_700,
      // the headless client: budgeted in headless-build.test.mjs
      "static/anteroom-headless.js": 10_500,
      "static/console.js": 50_000,
      "static/api-reference.js": 500_000,
    };
    for (const { outfile } of bundles) {
      const code = await built(outfile);
      const limit = limits[outfile] ?? 10_000;
      assert.ok(gzipSync(code).length < limit, `${outfile} is ${gzipSync(code).length} B gzipped`);
    }
  });
});
