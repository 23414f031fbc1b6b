// The room's scheduled events on a timeline: what runs now, what is to come, what has ended.
import { when } from "./format.js";

/** @typedef {{id: string, startsAt: number, endsAt: number, overrides: Record<string, any>, state: string}} RoomEvent */

/**
 * Where each event sits on a timeline from `from` to `to` (per cent of its width), clipped to
 * it; events wholly outside are left out.
 * @param {RoomEvent[]} events
 * @param {number} from epoch ms
 * @param {number} to epoch ms
 * @returns {{event: RoomEvent, left: number, width: number}[]}
 */
export function placed(events, from, to) {
  const span = Math.max(1, to - from);
  return events
    .filter((e) => e.endsAt > from && e.startsAt < to)
    .map((event) => {
      const start = Math.max(from, event.startsAt);
      const end = Math.min(to, event.endsAt);
      const left = ((start - from) / span) * 100;
      return { event, left, width: Math.max(0.5, ((end - start) / span) * 100) };
    });
}

/**
 * The timeline's span: from an hour before now (or the earliest event shown) to the last
 * event's end, at least a day ahead.
 * @param {RoomEvent[]} events
 * @param {number} now
 * @returns {[number, number]}
 */
export function span(events, now) {
  const from = Math.min(now - 3600000, ...events.filter((e) => e.state !== "ended").map((e) => e.startsAt));
  const to = Math.max(now + 86400000, ...events.map((e) => e.endsAt));
  return [from, to];
}

/**
 * What an event changes, as an operator reads it.
 * @param {Record<string, any>} overrides
 * @returns {string}
 */
export function describe(overrides) {
  return Object.entries(overrides)
    .map(([k, v]) => {
      if (k === "capacity" && v === null) return "capacity: no limit";
      if (typeof v === "object" && v !== null) return `${k}: ${Object.keys(v).length ? "set" : "none"}`;
      return `${k}: ${v}`;
    })
    .join(", ");
}

/**
 * One line of the list: its window and what it changes.
 * @param {RoomEvent} event
 * @returns {string}
 */
export function summary(event) {
  return `${when(event.startsAt)} to ${when(event.endsAt)} · ${event.state} · ${describe(event.overrides)}`;
}
