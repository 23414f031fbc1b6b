import assert from "node:assert/strict";
import { resolveObjectURL } from "node:buffer";
import { createHash, randomBytes, randomInt } from "node:crypto";
import vm from "node:vm";
import { afterEach, describe, test } from "node:test";

import { openSolver, solveChallenge, solvePuzzles } from "../../frontend/pow.js";
import { workerSource } from "../../frontend/pow-worker.js";
import { fastestKit, mainThreadKit, sha256, sha256Kit, wasmKit } from "../../frontend/sha256.js";
import { SHA256_WASM } from "../../frontend/sha256-wasm.js";
import { assemble, moduleText } from "../../frontend/build-wasm.mjs";
import { readFile } from "node:fs/promises";

const hex = (bytes) => Buffer.from(bytes).toString("hex");
const nodeSha256 = (data) => createHash("sha256").update(data).digest("hex");

function leadingZeroBits(hexDigest) {
  let bits = 0;
  for (const char of hexDigest) {
    const nibble = parseInt(char, 16);
    if (nibble === 0) {
      bits += 4;
      continue;
    }
    return bits + Math.clz32(nibble) - 28;
  }
  return bits;
}

/** The first n whose hash has `difficulty` zero bits, by node:crypto. */
function bruteForce(challenge, difficulty) {
  for (let n = 0; ; n++) {
    if (leadingZeroBits(nodeSha256(`${challenge}:${n}`)) >= difficulty) return n;
  }
}

describe("SHA-256", () => {
  test("matches the standard vectors", () => {
    assert.equal(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert.equal(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert.equal(
      hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
    assert.equal(
      hex(sha256("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
    );
    assert.equal(hex(sha256("a".repeat(1_000_000))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  });

  test("matches node:crypto at every padding boundary", () => {
    for (let length = 0; length <= 200; length++) {
      const data = randomBytes(length);
      assert.equal(hex(sha256(data)), nodeSha256(data), `length ${length}`);
    }
  });

  test("matches node:crypto on random inputs, and on UTF-8 text", () => {
    for (let i = 0; i < 200; i++) {
      const data = randomBytes(randomInt(0, 5000));
      assert.equal(hex(sha256(data)), nodeSha256(data));
    }
    assert.equal(hex(sha256("Wartezimmer ✓ 待合室 🚪")), nodeSha256("Wartezimmer ✓ 待合室 🚪"));
  });
});

describe("the proof-of-work search", () => {
  test("finds the first solution, whatever the challenge's length", () => {
    const kit = sha256Kit();
    // Lengths around the 64-byte blocks, so "challenge:digits" and its padding cross them.
    for (let length = 40; length <= 140; length += 3) {
      const challenge = `pc1.k1.${"x".repeat(length - 10)}.s`.slice(0, length);
      const expected = bruteForce(challenge, 8);
      assert.equal(kit.findSolution(challenge, 8, 0, 100_000), expected, `length ${length}`);
      assert.equal(kit.findSolution(challenge, 8, expected + 1, 0), -1);
    }
  });

  test("difficulty 0 takes the first candidate", () => {
    assert.equal(sha256Kit().findSolution("pc1.x", 0, 0, 10), 0);
  });

  test("solveChallenge (main thread) finds a solution node:crypto confirms", async () => {
    const challenge = `pc1.k1.${randomBytes(48).toString("base64url")}.sig`;
    const solution = await solveChallenge(challenge, 14);
    assert.match(solution, /^\d+$/);
    assert.ok(leadingZeroBits(nodeSha256(`${challenge}:${solution}`)) >= 14);
  });

  test("solveChallenge refuses an unusable difficulty", async () => {
    await assert.rejects(solveChallenge("pc1.x", 99), { name: "AnteroomError", code: "BadChallenge" });
    await assert.rejects(solveChallenge("pc1.x", 1.5), { code: "BadChallenge" });
  });

  test("solveChallenge stops when aborted", async () => {
    const controller = new AbortController();
    const solving = solveChallenge("pc1.never", 60, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("stop")), 5);
    await assert.rejects(solving, { message: "stop" });
  });
});

describe("the WebAssembly search", () => {
  test("finds what the JS search finds, whatever the prefix's length and the counter's digits", () => {
    const js = sha256Kit();
    const wasm = wasmKit(SHA256_WASM, sha256Kit());
    assert.equal(wasm.kind, "wasm");
    // Every tail length (prefix + ":" mod 64), and counters crossing into a second block.
    for (let length = 0; length <= 140; length++) {
      const challenge = "p".repeat(length);
      for (const [difficulty, from] of [[0, 0], [1, 0], [8, 0], [6, 99_990], [5, 2_147_000_000]]) {
        const expected = js.findSolution(challenge, difficulty, from, 100_000);
        assert.equal(wasm.findSolution(challenge, difficulty, from, 100_000), expected, `${length}, ${difficulty}, ${from}`);
      }
    }
    const puzzle = "0123456789abcdef0123456789abcdef.3";
    assert.equal(wasm.findSolution(puzzle, 12, 0, 1_000_000), bruteForce(puzzle, 12));
    // Beyond 32 bits the second word counts too; nothing so hard is found in a short range.
    assert.equal(wasm.findSolution(puzzle, 40, 0, 5000), -1);
    assert.equal(wasm.findSolution(puzzle, 64, 0, 5000), -1);
  });

  test("the main thread searches with it", () => {
    assert.equal(mainThreadKit().kind, "wasm");
  });

  test("where WebAssembly is missing or refused (a CSP without 'wasm-unsafe-eval'), the JS search answers", () => {
    const refused = () => {
      throw new WebAssembly.CompileError("WebAssembly.Module(): Refused to compile");
    };
    assert.equal(fastestKit(SHA256_WASM, sha256Kit, refused).kind, "js");
    assert.equal(fastestKit("", sha256Kit, wasmKit).kind, "js");
    const kit = fastestKit(SHA256_WASM, sha256Kit, refused);
    assert.equal(kit.findSolution("pc1.k1.js.sig", 8, 0, 100_000), bruteForce("pc1.k1.js.sig", 8));
  });

  test("sha256-wasm.js is what sha256.wat assembles to (npm run build)", async () => {
    const committed = await readFile(new URL("../../frontend/sha256-wasm.js", import.meta.url), "utf8");
    assert.equal(committed, moduleText(await assemble()));
  });
});

/**
 * A Worker that runs its blob: script in a vm context, like a browser's dedicated worker.
 */
class VmWorker {
  static created = 0;

  constructor(url) {
    VmWorker.created += 1;
    this.terminated = false;
    this.inbox = [];
    const blob = resolveObjectURL(url);
    assert.ok(blob, "the worker is made from a Blob URL");
    const self = {
      postMessage: (data) => setImmediate(() => !this.terminated && this.onmessage?.({ data: structuredClone(data) })),
      onmessage: null,
    };
    this.ready = blob.text().then((source) => {
      vm.runInNewContext(source, { self, TextEncoder, Uint8Array, Int32Array, String, Math, WebAssembly, atob });
      this.self = self;
      for (const data of this.inbox) self.onmessage({ data });
    });
  }

  postMessage(data) {
    if (this.self) this.self.onmessage({ data });
    else this.inbox.push(data);
  }

  terminate() {
    this.terminated = true;
  }
}

function refusing() {
  throw new EvalError("Refused to compile or instantiate WebAssembly module because 'wasm-unsafe-eval' is not allowed");
}

describe("the Web Worker", () => {
  afterEach(() => {
    delete globalThis.Worker;
  });

  test("its source runs on its own and answers {ready}, then {solution}", async () => {
    // WebAssembly where the context has it; a worker without it searches in JS, as one whose page
    // CSP refuses to compile it does; `search: "js"` asks for JS (bench/pow.py compares them).
    const contexts = [
      [workerSource(), { WebAssembly, atob }, "wasm"],
      [workerSource(), {}, "js"],
      [workerSource(), { WebAssembly: { Module: refusing, Instance: refusing }, atob }, "js"],
      [workerSource("js"), { WebAssembly, atob }, "js"],
    ];
    for (const [source, globals, kind] of contexts) {
      const messages = [];
      const self = { postMessage: (data) => messages.push(data), onmessage: null };
      vm.runInNewContext(source, { self, TextEncoder, ...globals });
      self.onmessage({ data: { prefix: "pc1.k1.worker.sig", difficulty: 10, index: 0 } });
      assert.deepEqual({ ...messages[0] }, { ready: true, kind });
      assert.equal(messages[1].solution, String(bruteForce("pc1.k1.worker.sig", 10)));
    }
  });

  test("solveChallenge uses a Worker made from a Blob URL when it can", async () => {
    globalThis.Worker = VmWorker;
    VmWorker.created = 0;
    const solution = await solveChallenge("pc1.k1.blob.sig", 10);
    assert.equal(VmWorker.created, 1);
    assert.equal(solution, String(bruteForce("pc1.k1.blob.sig", 10)));
  });

  test("solveChallenge falls back to the main thread when the Worker is refused", async () => {
    globalThis.Worker = class {
      constructor() {
        throw new DOMException("refused by worker-src", "SecurityError");
      }
    };
    const solution = await solveChallenge("pc1.k1.csp.sig", 10);
    assert.equal(solution, String(bruteForce("pc1.k1.csp.sig", 10)));
  });

  test("solveChallenge falls back to the main thread when the Worker fails", async () => {
    globalThis.Worker = class {
      postMessage() {
        setImmediate(() => this.onerror({ preventDefault() {} }));
      }
      terminate() {}
    };
    const solution = await solveChallenge("pc1.k1.broken.sig", 10);
    assert.equal(solution, String(bruteForce("pc1.k1.broken.sig", 10)));
  });
});

describe("split challenges", () => {
  afterEach(() => {
    delete globalThis.Worker;
  });

  const puzzles = (count, difficulty) =>
    Array.from({ length: count }, (_, i) => ({ prefix: `0123456789abcdef0123456789abcdef.${i}`, difficulty }));

  test("shares the puzzles out among one Worker per core and solves each in order", async () => {
    globalThis.Worker = VmWorker;
    VmWorker.created = 0;
    const asked = puzzles(7, 8);
    const solved = await solvePuzzles(asked, { workers: 3 });
    assert.equal(VmWorker.created, 3);
    assert.deepEqual(solved.solutions, asked.map((p) => String(bruteForce(p.prefix, 8))));
    // Each search starts at 0: solution + 1 hashes each.
    assert.equal(solved.hashes, solved.solutions.reduce((sum, s) => sum + Number(s) + 1, 0));
    assert.ok(solved.elapsedMs >= 0);
  });

  test("never starts more workers than puzzles", async () => {
    globalThis.Worker = VmWorker;
    VmWorker.created = 0;
    await solvePuzzles(puzzles(2, 6), { workers: 16 });
    assert.equal(VmWorker.created, 2);
  });

  test("one solver serves several sets with the same workers, then closes them", async () => {
    globalThis.Worker = VmWorker;
    VmWorker.created = 0;
    const solver = openSolver({ workers: 2 });
    const first = await solver.solve(puzzles(3, 6));
    const second = await solver.solve(puzzles(4, 7));
    solver.close();
    assert.equal(VmWorker.created, 2);
    assert.deepEqual(second.solutions, puzzles(4, 7).map((p) => String(bruteForce(p.prefix, 7))));
    assert.equal(first.solutions.length, 3);
  });

  test("after a worker fails, the same solver goes on on the main thread", async () => {
    let made = 0;
    globalThis.Worker = class extends VmWorker {
      constructor(url) {
        super(url);
        this.broken = made++ === 0;
      }
      postMessage(data) {
        if (this.broken) setImmediate(() => this.onerror({ preventDefault() {} }));
        else super.postMessage(data);
      }
    };
    const solver = openSolver({ workers: 2 });
    await solver.solve(puzzles(2, 6));
    const again = await solver.solve(puzzles(2, 6));
    solver.close();
    assert.deepEqual(again.solutions, puzzles(2, 6).map((p) => String(bruteForce(p.prefix, 6))));
  });

  test("a worker failing midway leaves the rest to the main thread", async () => {
    let made = 0;
    globalThis.Worker = class extends VmWorker {
      constructor(url) {
        super(url);
        this.broken = made++ === 1;
      }
      postMessage(data) {
        if (this.broken) setImmediate(() => this.onerror({ preventDefault() {} }));
        else super.postMessage(data);
      }
    };
    const asked = puzzles(5, 8);
    const solved = await solvePuzzles(asked, { workers: 2 });
    assert.deepEqual(solved.solutions, asked.map((p) => String(bruteForce(p.prefix, 8))));
  });

  test("refuses puzzles it cannot use", async () => {
    for (const bad of [[], null, [{ prefix: 1, difficulty: 4 }], [{ prefix: "x", difficulty: 65 }]]) {
      await assert.rejects(solvePuzzles(bad), { code: "BadChallenge" });
    }
  });
});
