// The console's room forms, their pure parts: what they suggest and say in words.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ruleWords } from "../../frontend/console/bypass.js";
import { bounds, modeWords } from "../../frontend/console/fields.js";
import { revocationWords } from "../../frontend/console/revoke.js";
import { slugFrom } from "../../frontend/console/room-form.js";

test("a slug is suggested from the name as the API takes it", () => {
  assert.equal(slugFrom("Spring drop: Size 42!"), "spring-drop-size-42");
  assert.equal(slugFrom("  Été — sale  "), "ete-sale");
  assert.match(slugFrom("x".repeat(80)), /^x{64}$/);
});

test("bounds are said with the unit and the default, none when the default is no value", () => {
  assert.equal(bounds({ lo: 30, hi: 3600, default: 300 }, "seconds"), "Seconds, from 30 to 3,600 (default 300).");
  assert.equal(bounds({ lo: 1, hi: 10000000, default: null }, "visitors"), "Visitors, from 1 to 10,000,000.");
  assert.equal(bounds(undefined, ""), "");
});

test("modes and rules are said in words, a rule's secret never", () => {
  assert.equal(modeWords("fifo"), "First come, first served");
  assert.equal(modeWords("reject"), "No new entries");
  const secret = ruleWords({ kind: "header", name: "x-monitor", secret: null, secretId: "aTiz1170" });
  assert.equal(secret, "Requests whose header x-monitor carries the secret skip the line (secret aTiz1170…, never shown)");
  const typed = ruleWords({ kind: "cookie", name: "staff", secret: "a-staff-secret-of-twenty" });
  assert.ok(!typed.includes("a-staff-secret"), typed);
  assert.equal(ruleWords({ kind: "address-range", value: "198.51.100.0/24" }), "Visitors from addresses in 198.51.100.0/24 skip the line");
});

test("a revocation's answer is said in words", () => {
  const visitor = revocationWords({ vid: "v1", jti: "", rooms: 3, droppedNow: 1, expiresAt: Date.UTC(2026, 11, 7, 4) });
  assert.match(visitor, /^Visitor v1 is revoked in 3 rooms: 1 waiting place dropped now; .* until \d{1,2} Dec 2026, \d{2}:\d{2} \(/);
  const session = revocationWords({ vid: "", jti: "s1", rooms: 1, droppedNow: 0, expiresAt: Date.UTC(2026, 11, 7, 4) });
  assert.match(session, /^Session s1 is revoked in 1 room: its waiting places go at their next check-in;/);
});

test("the audit log says a mode change in words", async () => {
  const { auditRow } = await import("../../frontend/console/format.js");
  const row = auditRow(
    { id: "1", at: Date.UTC(2026, 11, 7), keyId: "k1", type: "queue.updated", queue: { id: "q1", slug: "drop" },
      changes: { mode: { before: "fifo", after: "random" }, admissionTtlSec: { before: 300, after: 600 } } },
    { names: {}, me: "k1", timeZone: "UTC" },
  );
  assert.deepEqual(row.changes, ["Mode: First come, first served → Drawn at random", "Admission life (seconds): 300 → 600"]);
});
