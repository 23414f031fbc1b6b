import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { checkDraw, checkReceipt, drawnOrder, merkleRoot, verifyInclusion } from "../../frontend/draw-check.js";

// The case file the Python checker is held to (tests/unit/test_draw_fixtures.py): same verdicts here.
const FIXTURES = JSON.parse(readFileSync(new URL("../fixtures/draw.json", import.meta.url), "utf8"));
const { subtle } = globalThis.crypto;
const hexBytes = (hex) => Uint8Array.from(Buffer.from(hex, "hex"));

// The fixtures' receipts are HMAC-SHA-256 signed with receiptKeyHex (make_draw_fixtures.genuine).
const hmacKey = await subtle.importKey("raw", hexBytes(FIXTURES.receiptKeyHex), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
async function genuine(receipt) {
  const cut = receipt.lastIndexOf(".");
  const mac = await subtle.sign("HMAC", hmacKey, new TextEncoder().encode(receipt.slice(0, cut)));
  return Buffer.from(mac).toString("base64url") === receipt.slice(cut + 1);
}

async function verdictOf(document, entrants, receipt, options) {
  const verdict = await checkDraw(document, entrants);
  if (verdict.ok && receipt !== undefined) return checkReceipt(document, entrants, receipt, options);
  return verdict;
}

describe("the browser's draw checker agrees with the Python one", () => {
  for (const c of FIXTURES.cases) {
    test(`${c.name}: ${c.expected ?? "passes"}`, async () => {
      const verdict = await verdictOf(c.document, c.entrants, c.receipt, { verifySignature: genuine });
      assert.equal(verdict.failure ?? null, c.expected, verdict.detail);
      assert.equal(verdict.ok, c.expected === null);
    });
  }

  for (const draw of FIXTURES.draws) {
    test(`draw ${draw.name}: the file's order and a passing check`, async () => {
      const beacon = draw.document.beacon?.value ?? null;
      assert.deepEqual(await drawnOrder(draw.document.seed, [...draw.entrants].sort(), beacon), draw.entrants);
      const verdict = await checkDraw(draw.document, draw.entrants);
      assert.ok(verdict.ok, verdict.detail);
    });
  }

  test("RFC 6962's reference tree: roots and every proof", async () => {
    const { leavesHex, roots, proofs } = FIXTURES.merkle;
    const leaves = leavesHex.map(hexBytes);
    for (let n = 0; n <= leaves.length; n++) assert.equal(await merkleRoot(leaves.slice(0, n)), roots[n]);
    for (const { index, size, proof } of proofs) {
      assert.ok(await verifyInclusion(leaves[index], index, size, proof, roots[size]));
      const forged = proof.map((h, i) => (i === 0 ? "00".repeat(32) : h));
      if (proof.length) assert.ok(!(await verifyInclusion(leaves[index], index, size, forged, roots[size])));
    }
  });

  test("a seed not yet revealed is named, not passed", async () => {
    const { document, entrants } = FIXTURES.draws[0];
    const verdict = await checkDraw({ ...document, seed: null }, entrants);
    assert.equal(verdict.failure, "seed-not-revealed");
  });
});

// The honest receipt re-signed with a fresh Ed25519 key, listed as the document's receiptKeys.
const honest = FIXTURES.cases.find((c) => c.name === "honest");
const pair = await subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
const publicKey = Buffer.from(await subtle.exportKey("raw", pair.publicKey)).toString("base64url");
const signedPart = honest.receipt.slice(0, honest.receipt.lastIndexOf("."));
const signature = await subtle.sign({ name: "Ed25519" }, pair.privateKey, new TextEncoder().encode(signedPart));
const receipt = `${signedPart}.${Buffer.from(signature).toString("base64url")}`;
const document = { ...honest.document, receiptKeys: { k1: publicKey } };

describe("a receipt's Ed25519 signature against the document's receiptKeys", () => {

  test("the room's signature is checked and passes; a downloaded file's newline is no matter", async () => {
    const verdict = await checkReceipt(document, honest.entrants, `${receipt}\n`);
    assert.deepEqual([verdict.ok, verdict.signature], [true, "checked"], verdict.detail);
  });

  test("another signature, or a kid the document does not list, fails", async () => {
    const forged = `${signedPart}.${Buffer.from(new Uint8Array(64)).toString("base64url")}`;
    assert.equal((await checkReceipt(document, honest.entrants, forged)).failure, "receipt-signature");
    const otherKid = { ...document, receiptKeys: { k2: publicKey } };
    assert.equal((await checkReceipt(otherKid, honest.entrants, receipt)).failure, "receipt-signature");
  });

  test("a browser without Ed25519 says the signature is not checked, never that it passed", async () => {
    const noEd25519 = Object.create(subtle, {
      importKey: {
        value: async (format, key, algorithm, ...rest) => {
          if (algorithm.name === "Ed25519") throw new DOMException("Unrecognized name", "NotSupportedError");
          return subtle.importKey(format, key, algorithm, ...rest);
        },
      },
      digest: { value: (...a) => subtle.digest(...a) },
    });
    const verdict = await checkReceipt(document, honest.entrants, receipt, { subtle: noEd25519 });
    assert.deepEqual([verdict.ok, verdict.signature], [true, "unsupported"], verdict.detail);
  });

  test("without receiptKeys the signature is reported unchecked", async () => {
    const verdict = await checkReceipt(honest.document, honest.entrants, receipt);
    assert.deepEqual([verdict.ok, verdict.signature], [true, "unchecked"]);
  });
});
