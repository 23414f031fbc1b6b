import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { gzipSync } from "node:zlib";

import { build } from "esbuild";
import { bundles, common } from "../../frontend/build.mjs";
import { withoutBrowser } from "./headless-fakes.mjs";

const OUTFILE = "static/anteroom-headless.js";
// The client with its queue logic, the JS SHA-256 and the WebAssembly search as base64 (about
// 2 kB gzipped) is about 9.7 kB gzipped; an app bundles it whole.
const BUDGET = 10_500;

async function built() {
  const bundle = bundles.find((candidate) => candidate.outfile === OUTFILE);
  assert.ok(bundle, `build.mjs builds ${OUTFILE}`);
  const result = await build({ ...common, ...bundle, write: false });
  return result.outputFiles[0].text;
}

describe("the headless bundle", () => {
  test("loads and runs its checks with no browser global, touching none", async () => {
    const code = await built();
    const browser = withoutBrowser();
    try {
      const module = await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
      assert.deepEqual(Object.keys(module).sort(), ["ADMISSION_HEADER", "AnteroomError", "asyncStorage", "createClient", "memoryStorage", "queueThrough"]);
      const client = module.createClient({ apiKey: "pk_test", baseUrl: "https://queue.example.com" });
      assert.equal(await client.admission("spring-drop"), null);
      assert.throws(() => module.createClient({ apiKey: "nope", baseUrl: "https://q.example" }), /`apiKey`/);
      assert.deepEqual(browser.touched, []);
    } finally {
      browser.restore();
    }
  });

  test(`stays under ${BUDGET} B gzipped`, async () => {
    const size = gzipSync(await built()).length;
    assert.ok(size < BUDGET, `${OUTFILE} is ${size} B gzipped`);
  });
});
