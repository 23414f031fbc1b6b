// The console's timeline of scheduled events: where each sits, the span shown, the words.
import assert from "node:assert/strict";
import { test } from "node:test";
import { describe, placed, span } from "../../frontend/console/schedule.js";

const HOUR = 3600000;
/** @param {string} id @param {number} startsAt @param {number} endsAt @param {string} [state] */
const event = (id, startsAt, endsAt, state = "scheduled") => ({ id, startsAt, endsAt, overrides: {}, state });

test("events sit where their window falls, clipped to the timeline", () => {
  const out = placed([event("a", 0, 25), event("b", 50, 150), event("c", -20, -10)], 0, 100);
  assert.deepEqual(out.map((p) => [p.event.id, p.left, p.width]), [["a", 0, 25], ["b", 50, 50]]);
});

test("a very short event stays visible", () => {
  const [only] = placed([event("a", 10, 11)], 0, 1000000);
  assert.equal(only.width, 0.5);
});

test("the span starts an hour back (or at a running event's start) and reaches the last end", () => {
  const now = 100 * HOUR;
  assert.deepEqual(span([], now), [now - HOUR, now + 24 * HOUR]);
  const running = event("r", now - 5 * HOUR, now + HOUR, "running");
  const later = event("l", now + 48 * HOUR, now + 50 * HOUR);
  assert.deepEqual(span([running, later], now), [now - 5 * HOUR, now + 50 * HOUR]);
  const ended = event("e", now - 90 * HOUR, now - 80 * HOUR, "ended");
  assert.deepEqual(span([ended], now)[0], now - HOUR); // ended ones do not stretch it back
});

test("overrides read as an operator says them", () => {
  assert.equal(describe({ ratePerMinute: 600, capacity: null, mode: "reject" }), "ratePerMinute: 600, capacity: no limit, mode: reject");
  assert.equal(describe({ notice: { en: "Hi" } }), "notice: set");
});
