import { SHA256_WASM } from "./sha256-wasm.js";
import { fastestKit, sha256Kit, wasmKit } from "./sha256.js";

/**
 * The worker's message loop. Self-contained like `sha256Kit`: only its source text reaches the
 * worker. Answers `{ready: true, kind}` at start (`kind`: the search it uses, "wasm" or "js"); then, for each puzzle it receives as
 * `{prefix, difficulty, index}`, `{index, solution}`
 * (a decimal string, searched from 0, so solution + 1 hashes were computed). It never stops
 * searching on its own; the page terminates it.
 * @param {import("./sha256.js").Sha256Kit} kit
 */
function workerMain(kit) {
  self.postMessage({ ready: true, kind: kit.kind });
  self.onmessage = (event) => {
    const prefix = event.data.prefix;
    const difficulty = event.data.difficulty;
    for (let from = 0; ; from += 100000) {
      const found = kit.findSolution(prefix, difficulty, from, 100000);
      if (found >= 0) {
        self.postMessage({ index: event.data.index, solution: String(found) });
        return;
      }
    }
  };
}

/**
 * The source of an expression giving the search a worker uses: WebAssembly where allowed, else
 * the JS one (`kind` "js": the JS one only, as bench/pow.py compares them).
 * @param {"wasm" | "js"} [kind]
 * @returns {string}
 */
export function kitSource(kind = "wasm") {
  const wasm = kind === "wasm" ? SHA256_WASM : "";
  return `(${fastestKit})(${JSON.stringify(wasm)}, ${sha256Kit}, ${wasmKit})`;
}

/**
 * The source of the proof-of-work worker, for a Blob URL: no separate file to serve, and it
 * passes a CSP of `worker-src blob:`.
 * @param {"wasm" | "js"} [kind] the search it may use (kitSource)
 * @returns {string}
 */
export function workerSource(kind = "wasm") {
  return `(${workerMain})(${kitSource(kind)});`;
}
