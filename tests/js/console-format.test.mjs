// The console's pure helpers: what an operator reads in the summaries and confirmations.
import assert from "node:assert/strict";
import { test } from "node:test";
import { last, lineSummary, perMinute, recentSum, releasedBy, safetyNetSummary, when } from "../../frontend/console/format.js";

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
