// The console's pure helpers: what an operator reads in the summaries and confirmations.
import assert from "node:assert/strict";
import { test } from "node:test";
import { auditRow, scopeWords, axisTime, clock, departuresSummary, languageName, last, lineSummary, mailSummary, perMinute, recentSum, releasedBy, safetyNetSummary, when, windowTotals } from "../../frontend/console/format.js";

test("a holdScore raise releases the held visitors scoring below it", () => {
  const held = { 75: 2, 90: 1 };
  assert.equal(releasedBy(held, 70), 0);
  assert.equal(releasedBy(held, 76), 2);
  assert.equal(releasedBy(held, 101), 3);
});

test("windows become per-minute rates, gaps stay gaps", () => {
  assert.deepEqual(perMinute([1, null, 3], 10000), [6, null, 18]);
  assert.equal(last([1, 2, null]), 2);
  assert.equal(last([null]), null);
  assert.equal(recentSum([5, null, 1, 2], 3), 3);
});

test("the line summary says the trend of the last five minutes", () => {
  const waiting = Array.from({ length: 40 }, (_, i) => i);
  const summary = lineSummary({ waiting, held: waiting.map(() => 2), step: 10000 });
  assert.equal(summary, "39 waiting (up 30 in the last 5 minutes), 2 held.");
  assert.equal(lineSummary({ waiting: [null], held: [null], step: 10000 }), "No samples yet in this span.");
});

test("times are shown in the operator's time zone", () => {
  assert.equal(when(Date.UTC(2026, 11, 3, 18, 30), "Europe/Paris"), "3 Dec 2026, 19:30");
});

test("the safety net figure says its state, since when and its thresholds", () => {
  const net = { activeSessions: 500, arrivalsPerMinute: 1200, coolDownSec: 300 };
  assert.equal(
    safetyNetSummary({ ...net, state: "calm", since: null }),
    "calm (queues from 500 active or 1,200 arrivals / min; calm after 300 s quiet)",
  );
  const since = Date.UTC(2026, 11, 5, 9, 30);
  assert.equal(
    safetyNetSummary({ ...net, state: "queueing", since }, "UTC"),
    `queueing since ${when(since, "UTC")} (queues from 500 active or 1,200 arrivals / min; calm after 300 s quiet)`,
  );
});

test("one clock everywhere: 24-hour times, on the charts' axes too", () => {
  const afternoon = Date.UTC(2026, 11, 3, 14, 5);
  assert.equal(when(afternoon, "UTC"), "3 Dec 2026, 14:05");
  assert.equal(clock(afternoon, "UTC"), "14:05");
  assert.equal(clock(afternoon, "America/New_York"), "09:05");
  assert.equal(axisTime(afternoon, 3600000, "UTC"), "14:05");
  assert.equal(axisTime(afternoon, 7 * 86400000, "UTC"), "3 Dec 14:05");
  assert.doesNotMatch(axisTime(afternoon, 3600000, "America/Los_Angeles"), /am|pm/i);
});

test("languages are named, their code beside", () => {
  assert.equal(languageName("pt-BR"), "Brazilian Portuguese (pt-BR)");
  assert.equal(languageName("fr"), "French (fr)");
  assert.equal(languageName("*"), "every other language");
});

test("an audit entry says who did what to which room, the change in words", () => {
  const at = Date.UTC(2026, 11, 3, 14, 5);
  const names = { r1: "Spring drop" };
  const rate = auditRow({
    id: "1-0", type: "queue.updated", queue: { id: "r1", slug: "spring" }, keyId: "k1", at,
    changes: { ratePerMinute: { before: 120, after: 300 }, capacity: { before: 50, after: null } },
  }, { names, me: "k1", timeZone: "Europe/Paris" });
  assert.equal(rate.when, "3 Dec 2026, 15:05");
  assert.equal(rate.who, "key k1 (you)");
  assert.equal(rate.room, "Spring drop");
  assert.equal(rate.what, "Changed settings");
  assert.deepEqual(rate.changes, [
    "Rate (per minute): 120 → 300",
    "Capacity: 50 → no limit",
  ]);
  const notice = auditRow({
    id: "2-0", type: "queue.updated", queue: { id: "r9", slug: "gone" }, keyId: "k2", at,
    changes: { notice: { before: "Sold out", after: { "*": "Sold out", "pt-BR": "Esgotado" } } },
  }, { names, me: "k1", timeZone: "UTC" });
  assert.equal(notice.room, "gone");
  assert.equal(notice.who, "key k2");
  assert.deepEqual(notice.changes, [
    'Notice: "Sold out" → every other language: "Sold out"; Brazilian Portuguese (pt-BR): "Esgotado"',
  ]);
  const pause = auditRow({
    id: "3-0", type: "queue.updated", queue: { id: "r1", slug: "spring" }, keyId: "k1", at,
    changes: { status: { before: "open", after: "paused" } }, action: { name: "pause", opensAt: null },
  }, { names, me: "", timeZone: "UTC" });
  assert.equal(pause.what, "Paused");
  assert.deepEqual(pause.changes, ["Status: open → paused"]);
  const net = auditRow({
    id: "4-0", type: "queue.updated", queue: { id: "r1", slug: "spring" }, keyId: "safety-net", at,
    changes: { "safetyNet.state": { before: "calm", after: "queueing" }, "safetyNet.since": { before: null, after: at } },
  }, { names, me: "", timeZone: "UTC" });
  assert.equal(net.who, "the safety net");
  assert.equal(net.what, "Safety net switched");
  assert.deepEqual(net.changes, ["Safety net: calm → queueing", "Safety net since: none → 3 Dec 2026, 14:05"]);
  const revoked = auditRow({
    id: "5-0", type: "session.revoked", keyId: "k1", at, session: { vid: "v123" }, reason: "bot",
  }, { names, me: "", timeZone: "UTC" });
  assert.equal(revoked.room, "every room");
  assert.equal(revoked.what, "Revoked a visitor");
  assert.deepEqual(revoked.changes, ["Visitor v123, because: bot"]);
  const withdrawn = auditRow({
    id: "6-0", type: "queue.invite.withdrawn", queue: { id: "r1", slug: "spring" }, keyId: "k1", at,
    invite: { id: "Zf3kP9qLw2xYt8Bv", lane: "skip", uses: 2, expiresAt: at },
  }, { names, me: "", timeZone: "UTC" });
  assert.equal(withdrawn.what, "Withdrew an invite");
  assert.equal(withdrawn.room, "Spring drop");
  assert.deepEqual(withdrawn.changes, ["Invite Zf3kP9qLw2xYt8Bv (skip lane, 2 uses): new visitors are refused it"]);
  const made = auditRow({
    id: "7-0", type: "key.created", keyId: "k1", at, key: { id: "3f9a0c7d21be", scopes: ["queues:read", "keys:write"] },
  }, { names, me: "k1", timeZone: "UTC" });
  assert.equal(made.what, "Created a key");
  assert.equal(made.room, "the environment");
  assert.deepEqual(made.changes, ["Key 3f9a0c7d21be, may read rooms, manage keys"]);
  const gone = auditRow({
    id: "8-0", type: "key.revoked", keyId: "k1", at, key: { id: "3f9a0c7d21be" },
  }, { names, me: "k1", timeZone: "UTC" });
  assert.equal(gone.what, "Revoked a key");
  assert.deepEqual(gone.changes, ["Key 3f9a0c7d21be: its secret and public key no longer work"]);
  assert.equal(scopeWords("audit:read"), "read the audit log");
  for (const row of [rate, notice, pause, net, revoked, withdrawn, made, gone]) {
    for (const line of row.changes) assert.doesNotMatch(line, /ratePerMinute|safetyNet\.|[{}]/);
  }
});

test("who went unserved: those who left, half of them by their wait, and unused admissions", () => {
  const waitBuckets = ["30", "60", "300", "inf"];
  const none = { waitBuckets, abandonedWaits: [null, [0, 0, 0, 0]], unusedAdmissions: [null, 0] };
  assert.equal(departuresSummary(none), "Nobody left the line before their turn in this span; 0 admissions ran out unused (no renewal seen).");
  const some = { waitBuckets, abandonedWaits: [[1, 0, 0, 0], null, [0, 2, 1, 0]], unusedAdmissions: [1, null, 0] };
  assert.equal(departuresSummary(some), "4 left the line before their turn in this span (half had waited up to 60 s); 1 admission ran out unused (no renewal seen).");
  const late = { waitBuckets, abandonedWaits: [[0, 0, 0, 3]], unusedAdmissions: [2] };
  assert.match(departuresSummary(late), /^3 left .*half had waited over 300 s\); 2 admissions ran out/);
  assert.deepEqual(windowTotals([[1, 2], null, [0, 0]]), [3, null, 0]);
});

test("the turn e-mails figure says what was sent, what failed and the last failure, never an address", () => {
  const mail = { parked: 3, sent: 12, failed: 1, givenUp: 0, lastFailure: { at: Date.UTC(2026, 11, 3, 18, 30), what: "SMTPDataError 451" } };
  assert.equal(
    mailSummary(mail, "UTC"),
    "3 waiting for their turn, 12 sent, 1 failed try; last failure SMTPDataError 451 at 3 Dec 2026, 18:30",
  );
  assert.equal(
    mailSummary({ parked: 0, sent: 0, failed: 5, givenUp: 1, lastFailure: null }, "UTC"),
    "0 waiting for their turn, 0 sent, 5 failed tries, 1 given up",
  );
});
