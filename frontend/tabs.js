import { localStorageOrNull } from "./storage.js";

// The localStorage lease used where Web Locks are missing: renewed every RENEW_MS, good for
// LEASE_MS, so a closed or frozen leader is replaced within about five seconds.
export const LEASE_RENEW_MS = 2000;
export const LEASE_MS = 5000;

/**
 * @typedef {object} TabGroup
 * @property {string} tabId
 * @property {Promise<void>} leadership resolves when this tab becomes the one that talks to the server
 * @property {() => boolean} isLeader
 * @property {(message: object) => void} publish tells every other tab of the group
 * @property {() => void} close gives up leadership (or the wait for it) and stops listening
 */

/**
 * Joins the tabs of this browser that wait in the same room. One of them leads: it holds the Web
 * Lock `name` through a promise that stays pending until `close()`. The others wait for that lock
 * (so one takes over when the leader's tab closes) and hear the leader on the BroadcastChannel
 * `name`. Without Web Locks a localStorage lease stands in; without BroadcastChannel there is
 * nobody to share with, and the tab leads on its own.
 *
 * @param {string} name
 * @param {{clock: import("./timers.js").Clock, onMessage: (message: any) => void}} options
 * @returns {TabGroup}
 */
export function joinTabs(name, { clock, onMessage }) {
  const tabId = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  const channel = typeof BroadcastChannel === "function" ? new BroadcastChannel(name) : null;
  const lockRequest = new AbortController();
  let closed = false;
  let leading = false;
  let releaseLock = () => {};
  let lease = { checkNow() {}, stop() {} };

  /** @param {MessageEvent} event */
  const onChannelMessage = (event) => {
    const message = event.data;
    if (closed || !message || message.from === tabId) return;
    if (message.type === "leaving") lease.checkNow();
    onMessage(message);
  };
  channel?.addEventListener("message", onChannelMessage);

  /** @type {Promise<void>} */
  const leadership = new Promise((resolve) => {
    const becomeLeader = () => {
      if (closed) return;
      leading = true;
      resolve();
    };
    const locks = globalThis.navigator?.locks;
    if (!channel) {
      becomeLeader();
    } else if (typeof locks?.request === "function") {
      locks
        .request(name, { signal: lockRequest.signal }, () => {
          // Granted after close(): returning at once releases it.
          if (closed) return undefined;
          becomeLeader();
          return new Promise((release) => {
            releaseLock = () => release(undefined);
          });
        })
        // Rejects with an AbortError when close() cancels the wait; nothing to do then.
        .catch(() => {});
    } else {
      lease = leaseLeadership(`${name}:leader`, tabId, clock, becomeLeader);
    }
  });

  /** @param {object} message */
  function publish(message) {
    if (!closed) channel?.postMessage({ ...message, from: tabId });
  }

  function close() {
    if (closed) return;
    lease.stop();
    releaseLock();
    lockRequest.abort();
    publish({ type: "leaving" });
    closed = true;
    channel?.removeEventListener("message", onChannelMessage);
    channel?.close();
  }

  return { tabId, leadership, isLeader: () => leading && !closed, publish, close };
}

/**
 * Leadership by a lease in localStorage: `{tabId, until}` under `key`. A tab takes the lease when
 * it is missing, expired or its own, and the leader renews it; `checkNow` lets a follower try at
 * once when the leader says it is leaving. Best effort: two tabs may both lead for a moment,
 * which costs a duplicate poll of the same ticket, never a second spot.
 *
 * @param {string} key
 * @param {string} tabId
 * @param {import("./timers.js").Clock} clock
 * @param {() => void} onLeader
 */
function leaseLeadership(key, tabId, clock, onLeader) {
  const storage = localStorageOrNull();
  if (!storage) {
    onLeader();
    return { checkNow() {}, stop() {} };
  }
  let leading = false;
  /** @type {unknown} */
  let timer = null;
  const read = () => {
    try {
      return JSON.parse(storage.getItem(key) ?? "null");
    } catch {
      return null;
    }
  };
  const tick = () => {
    const now = clock.now();
    const current = read();
    if (leading || !current || !(current.until > now) || current.tabId === tabId) {
      try {
        storage.setItem(key, JSON.stringify({ tabId, until: now + LEASE_MS }));
      } catch {
        // A full storage cannot hold a lease: lead anyway rather than wait forever.
      }
      if (!leading) {
        leading = true;
        onLeader();
      }
    }
    timer = clock.setTimeout(tick, LEASE_RENEW_MS);
  };
  tick();
  return {
    checkNow() {
      if (leading) return;
      clock.clearTimeout(timer);
      tick();
    },
    stop() {
      clock.clearTimeout(timer);
      try {
        if (read()?.tabId === tabId) storage.removeItem(key);
      } catch {
        // Nothing held.
      }
    },
  };
}
