// Fake browser globals and a manual clock for the agent's tests. No test sleeps: time moves only
// when a test advances the FakeClock.

/** Lets every pending promise chain (and queued microtask) run. */
export async function flush() {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

export class FakeClock {
  constructor(start = 1_700_000_000_000) {
    this.time = start;
    this.timers = new Map();
    this.nextId = 1;
    /** Every delay ever asked for, in order. */
    this.requested = [];
  }

  now() {
    return this.time;
  }

  setTimeout(callback, ms) {
    const id = this.nextId++;
    const delay = Math.max(0, Number(ms) || 0);
    this.requested.push(delay);
    this.timers.set(id, { at: this.time + delay, callback, id });
    return id;
  }

  clearTimeout(id) {
    this.timers.delete(id);
  }

  nextTimer() {
    let next = null;
    for (const timer of this.timers.values()) {
      if (!next || timer.at < next.at || (timer.at === next.at && timer.id < next.id)) next = timer;
    }
    return next;
  }

  /** Runs the next timer only (jumping time to it). */
  async step() {
    await flush();
    const timer = this.nextTimer();
    if (!timer) return;
    this.timers.delete(timer.id);
    this.time = timer.at;
    timer.callback();
    await flush();
  }

  /** Moves time forward by `ms`, running each timer that falls due, in order. */
  async advance(ms) {
    const end = this.time + ms;
    await flush();
    for (;;) {
      const timer = this.nextTimer();
      if (!timer || timer.at > end) break;
      this.timers.delete(timer.id);
      this.time = timer.at;
      timer.callback();
      await flush();
    }
    this.time = end;
    await flush();
  }

  /** Runs timers (jumping time to each) until `promise` settles; returns its outcome. */
  async settle(promise, { limitMs = 24 * 3600_000 } = {}) {
    let outcome = null;
    promise.then(
      (value) => (outcome = { value }),
      (error) => (outcome = { error }),
    );
    const deadline = this.time + limitMs;
    await flush();
    while (!outcome) {
      const timer = this.nextTimer();
      if (!timer) throw new Error("stuck: nothing scheduled and the promise has not settled");
      if (timer.at > deadline) throw new Error("the promise did not settle in time");
      this.timers.delete(timer.id);
      this.time = timer.at;
      timer.callback();
      await flush();
    }
    return outcome;
  }
}

/**
 * A scripted fetch. `routes` maps a path to a list of responses used in turn (the last one
 * repeats) or to a function `(body, call) => response`. A response is `{status, body, headers}`,
 * `"network"` (the request fails), or `"hang"` (never answers until aborted).
 */
export class FakeFetch {
  constructor(clock, routes = {}) {
    this.clock = clock;
    this.routes = routes;
    this.calls = [];
    this.fetch = (url, init) => this.handle(url, init);
  }

  callsTo(path) {
    return this.calls.filter((call) => call.path === path);
  }

  async handle(url, init) {
    const path = new URL(url, "http://localhost").pathname;
    const body = JSON.parse(init.body);
    const call = { url, path, body, at: this.clock.now(), signal: init.signal };
    this.calls.push(call);
    if (init.signal?.aborted) throw init.signal.reason;
    const route = this.routes[path];
    if (!route) throw new Error(`unexpected request to ${path}`);
    let response;
    if (typeof route === "function") {
      response = route(body, call);
    } else {
      const index = this.callsTo(path).length - 1;
      response = route[Math.min(index, route.length - 1)];
    }
    if (response === "network") throw new TypeError("Failed to fetch");
    if (response === "hang") {
      return new Promise((_, reject) => {
        init.signal?.addEventListener("abort", () => reject(init.signal.reason), { once: true });
      });
    }
    const { status = 200, body: answer, headers = {} } = response;
    const text = answer === undefined ? null : typeof answer === "string" ? answer : JSON.stringify(answer);
    return new Response(status === 204 ? null : text, {
      status,
      headers: { "Content-Type": "application/json", ...headers },
    });
  }
}

export class FakeStorage {
  constructor() {
    this.items = new Map();
  }
  get length() {
    return this.items.size;
  }
  key(index) {
    return [...this.items.keys()][index] ?? null;
  }
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    this.items.set(key, String(value));
  }
  removeItem(key) {
    this.items.delete(key);
  }
  clear() {
    this.items.clear();
  }
}

/** navigator.locks with exclusive locks, queued in request order, and `signal` support. */
export class FakeLocks {
  constructor() {
    this.held = new Map();
    this.queues = new Map();
  }

  request(name, options, callback) {
    if (typeof options === "function") [options, callback] = [{}, options];
    return new Promise((resolve, reject) => {
      const waiter = { callback, resolve, reject };
      const signal = options.signal;
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      signal?.addEventListener(
        "abort",
        () => {
          const queue = this.queues.get(name) ?? [];
          const index = queue.indexOf(waiter);
          if (index !== -1) {
            queue.splice(index, 1);
            reject(new DOMException("The request was aborted.", "AbortError"));
          }
        },
        { once: true },
      );
      const queue = this.queues.get(name) ?? [];
      queue.push(waiter);
      this.queues.set(name, queue);
      this.grant(name);
    });
  }

  grant(name) {
    if (this.held.has(name)) return;
    const waiter = this.queues.get(name)?.shift();
    if (!waiter) return;
    this.held.set(name, waiter);
    Promise.resolve()
      .then(() => waiter.callback({ name, mode: "exclusive" }))
      .then(
        (value) => waiter.resolve(value),
        (error) => waiter.reject(error),
      )
      .finally(() => {
        this.held.delete(name);
        this.grant(name);
      });
  }
}

/** BroadcastChannel: delivers (asynchronously, cloned) to every other open channel of the name. */
export function makeBroadcastChannel() {
  const open = new Set();
  return class FakeBroadcastChannel extends EventTarget {
    static open = open;

    constructor(name) {
      super();
      this.name = name;
      this.closed = false;
      open.add(this);
    }

    postMessage(data) {
      if (this.closed) throw new DOMException("closed", "InvalidStateError");
      const copy = structuredClone(data);
      for (const channel of open) {
        if (channel === this || channel.name !== this.name) continue;
        queueMicrotask(() => {
          if (channel.closed) return;
          const event = new Event("message");
          event.data = structuredClone(copy);
          channel.dispatchEvent(event);
        });
      }
    }

    close() {
      this.closed = true;
      open.delete(this);
    }
  };
}

/**
 * Installs fake localStorage, navigator (with locks unless `locks: false`) and BroadcastChannel
 * on globalThis; returns them and a `restore()` that puts the originals back.
 */
export function installBrowser({ locks = true, channel = true } = {}) {
  const names = ["localStorage", "navigator", "BroadcastChannel"];
  const saved = names.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)]);
  const fakes = {
    localStorage: new FakeStorage(),
    locks: locks ? new FakeLocks() : undefined,
    BroadcastChannel: channel ? makeBroadcastChannel() : undefined,
  };
  const navigator = {
    webdriver: false,
    languages: ["en-GB", "en"],
    hardwareConcurrency: 8,
    plugins: { length: 3 },
    ...(fakes.locks ? { locks: fakes.locks } : {}),
  };
  const define = (name, value) =>
    Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
  define("localStorage", fakes.localStorage);
  define("navigator", navigator);
  define("BroadcastChannel", fakes.BroadcastChannel);
  return {
    ...fakes,
    navigator,
    restore() {
      for (const [name, descriptor] of saved) {
        if (descriptor) Object.defineProperty(globalThis, name, descriptor);
        else delete globalThis[name];
      }
    },
  };
}
