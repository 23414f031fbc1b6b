import assert from "node:assert/strict";
import { createHash } from "node:crypto";

import { FakeFetch } from "./fakes.mjs";

// For the headless client's tests: browser globals made absent and watched. Node has some of
// them (BroadcastChannel, Blob...); they are removed, and every name is trapped so a read of any
// of them during a test is recorded.

export const BROWSER_GLOBALS = [
  "window", "document", "localStorage", "sessionStorage", "navigator", "Worker", "SharedWorker",
  "BroadcastChannel", "Blob", "location", "self", "indexedDB", "XMLHttpRequest", "WebSocket",
];

/** Removes and traps the browser globals; returns {touched, restore}. */
export function withoutBrowser() {
  const saved = new Map();
  const touched = [];
  for (const name of BROWSER_GLOBALS) {
    const descriptor = Object.getOwnPropertyDescriptor(globalThis, name);
    if (descriptor) saved.set(name, descriptor);
    delete globalThis[name];
  }
  const absent = BROWSER_GLOBALS.filter((name) => !(name in globalThis));
  for (const name of BROWSER_GLOBALS) {
    Object.defineProperty(globalThis, name, {
      configurable: true,
      get() {
        touched.push(name);
        return undefined;
      },
    });
  }
  return {
    touched,
    absent,
    restore() {
      for (const name of BROWSER_GLOBALS) {
        delete globalThis[name];
        if (saved.has(name)) Object.defineProperty(globalThis, name, saved.get(name));
      }
    },
  };
}

// The visitor API as the headless client meets it.

export const KEY = "pk_test_123";
export const ROOM = "spring-drop";
export const BASE = "https://queue.example.com";
export const STORE_KEY = `anteroom:${BASE}:${ROOM}`;
export const DIFFICULTY = 6;

/** An admission token as the server signs it: only its payload's exp matters here. */
export const admissionToken = (exp, id = "a") => `ab1.k1.${Buffer.from(JSON.stringify({ exp, jti: id })).toString("base64url")}.sig`;

export const queueAnswer = (fields = {}) => ({
  status: 200,
  body: {
    status: "waiting", room: ROOM, roomName: "Spring drop", redirectUrl: null, ticket: 7, position: 5,
    etaSeconds: 60, opensAt: null, pollAfterMs: 1000, queueToken: "qt1.k1.first.sig", token: null, roomStatus: "open",
    ...fields,
  },
});

const leadingZeroBits = (bytes) => {
  let bits = 0;
  for (const byte of bytes) {
    if (byte !== 0) return bits + Math.clz32(byte) - 24;
    bits += 8;
  }
  return bits;
};

const challenge = {
  challenge: "pc1.k1.e30.sig",
  puzzles: Array.from({ length: 4 }, (_, i) => ({ prefix: `seed.${i}`, difficulty: DIFFICULTY })),
  minPuzzles: 2,
  fitMs: 600,
};

/** The visitor API, checking proofs honestly; `poll` scripts the spot's answers. */
export function server(clock, { poll, join = queueAnswer() } = {}) {
  const exp = Math.floor(clock.now() / 1000) + 600;
  return new FakeFetch(clock, {
    "/api/v1/arrive": [{ body: challenge }],
    "/api/v1/queue/join": (body) => {
      assert.ok(body.solutions.length >= 2);
      body.solutions.forEach((s, i) => {
        const digest = createHash("sha256").update(`${challenge.puzzles[i].prefix}:${s}`).digest();
        assert.ok(leadingZeroBits(digest) >= DIFFICULTY, "each solution meets the difficulty");
      });
      const session = { sessionToken: "st1.k1.session.sig", expiresAt: clock.now() + 3_600_000 };
      return { ...join, body: { session, queue: join.body } };
    },
    "/api/v1/queue/enter": [queueAnswer()],
    "/api/v1/queue/poll": poll ?? [queueAnswer({ position: 2 }), queueAnswer({ status: "admitted", token: admissionToken(exp), pollAfterMs: null })],
    "/api/v1/queue/leave": [{ status: 204 }],
    "/api/v1/admission/refresh": [queueAnswer({ status: "admitted", token: admissionToken(exp + 600, "b"), pollAfterMs: null })],
  });
}


