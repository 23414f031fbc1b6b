/**
 * Waking from a sleep. A device asleep (a locked phone, a closed laptop) or a frozen page runs no
 * timers, and on waking they count on from where they stopped: a poll due five minutes after the
 * last one may go out long after the room stopped keeping the spot. So a wait also ends when the
 * page is shown again, resumed (Page Lifecycle) or back online, and the caller reads the clock
 * to decide whether what it waited for is due. Without a document (Node, React Native) only the
 * timer ends it.
 */
const WAKE_EVENTS = [["document", "visibilitychange"], ["document", "resume"], ["window", "online"]];

/**
 * Resolves after `ms` on `clock`, or sooner when the page wakes; rejects with the signal's reason
 * if it aborts first. The timer and every listener are removed whichever way the wait ends.
 * @param {number} ms
 * @param {{clock: import("./timers.js").Clock, signal?: AbortSignal}} options
 * @returns {Promise<void>}
 */
export function sleepOrWake(ms, { clock, signal }) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const page = globalThis.document;
    const targets = WAKE_EVENTS.map(([where, type]) => /** @type {const} */ ([where === "document" ? page : globalThis, type]));
    const done = () => {
      clock.clearTimeout(id);
      signal?.removeEventListener("abort", onAbort);
      for (const [target, type] of targets) target?.removeEventListener?.(type, onWake);
    };
    const onAbort = () => {
      done();
      reject(signal?.reason);
    };
    const onWake = () => {
      if (page?.visibilityState === "hidden") return; // put away, not woken
      done();
      resolve();
    };
    const id = clock.setTimeout(() => {
      done();
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
    for (const [target, type] of targets) target?.addEventListener?.(type, onWake);
  });
}
