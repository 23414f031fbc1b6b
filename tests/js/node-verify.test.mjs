// The Node SDK against tests/fixtures/tokens.json: the verdicts the Python SDK gave, case by case.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { Keyring, verifyAdmission, verifySession } from "../../frontend/node/index.js";
import { networkBytes } from "../../frontend/node/ip.js";

const fixtures = JSON.parse(readFileSync(new URL("../fixtures/tokens.json", import.meta.url), "utf8"));
const secrets = Object.fromEntries(
  Object.entries(fixtures.secretsHex).map(([kid, hex]) => [kid, Buffer.from(hex, "hex")]),
);

/**
 * @param {any} testCase
 * @param {any} keys
 */
function verify(testCase, keys) {
  const { room, clientIp, sessionJti } = testCase.options;
  return testCase.kind === "admission"
    ? verifyAdmission(testCase.token, keys, { room, clientIp, sessionJti })
    : verifySession(testCase.token, keys);
}

describe("the Python SDK's verdicts", () => {
  const keyForms = {
    "ANTEROOM_KEYS string": fixtures.keys,
    "object of Buffers": secrets,
    "Map of Uint8Arrays": new Map(Object.entries(secrets).map(([kid, b]) => [kid, new Uint8Array(b)])),
    Keyring: Keyring.parse(fixtures.keys),
  };
  for (const [form, keys] of Object.entries(keyForms)) {
    describe(`keys as ${form}`, () => {
      for (const testCase of fixtures.cases) {
        test(testCase.name, () => {
          const result = verify(testCase, keys);
          assert.deepEqual({ valid: result.valid, reason: result.reason }, testCase.expected);
          assert.deepEqual(result.claims, testCase.claims);
        });
      }
    });
  }
});

describe("keyring parsing", () => {
  for (const { keys, kids } of fixtures.keyrings) {
    test(JSON.stringify(keys), () => {
      if (kids === null) assert.throws(() => Keyring.parse(keys), TypeError);
      else assert.deepEqual(Keyring.parse(keys).kids, kids);
    });
  }
});

test("a string secret in a mapping is refused, as Python refuses str", () => {
  assert.throws(() => verifySession("st1.k1.x.y", { k1: "a".repeat(32) }), /must be a Buffer/);
});

test("unusable keys throw; bad tokens never do", () => {
  assert.throws(() => verifyAdmission("ab1.k1.x.y", ""), TypeError);
  assert.throws(() => verifyAdmission("ab1.k1.x.y", {}), TypeError);
  assert.throws(() => verifyAdmission("ab1.k1.x.y", 42), TypeError);
  for (const token of [undefined, null, {}, [], Buffer.from("ab1.k2.x.y"), "...", "ab1.k2..", "ab1.k2.x.y"]) {
    const result = verifyAdmission(token, fixtures.keys);
    assert.equal(result.valid, false);
    assert.ok(["malformed", "forged"].includes(result.reason), String(result.reason));
  }
});

test("an explicit now decides expiry, as in Python", () => {
  const valid = fixtures.cases.find((c) => c.name === "admission/valid").token;
  assert.equal(verifyAdmission(valid, fixtures.keys, { now: 4_102_444_799 }).valid, true);
  assert.equal(verifyAdmission(valid, fixtures.keys, { now: 4_102_444_800 }).reason, "expired");
});

test("network bytes: IPv4 address, IPv6 /64, mapped v4 as v4", () => {
  assert.deepEqual([...networkBytes("198.51.100.20")], [0x34, 198, 51, 100, 20]);
  assert.deepEqual([...networkBytes("::ffff:198.51.100.20")], [0x34, 198, 51, 100, 20]);
  assert.deepEqual([...networkBytes("2001:db8:aa:bb::1")], [0x36, 0x20, 0x01, 0x0d, 0xb8, 0, 0xaa, 0, 0xbb]);
  assert.deepEqual([...networkBytes("::")], [0x36, 0, 0, 0, 0, 0, 0, 0, 0]);
  for (const bad of ["", ":", ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "::1%", "01.2.3.4", "1.2.3", "12345::"]) {
    assert.throws(() => networkBytes(bad), TypeError, bad);
  }
});
