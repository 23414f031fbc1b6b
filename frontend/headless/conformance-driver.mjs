#!/usr/bin/env node
// The headless client's driver for `anteroom conformance`: it does what an app does. It calls
// ANTEROOM_RESOURCE (the app's own API, behind the edge) through queueThrough; on 429
// QueueRequired the client queues (arrive, proof, join, poll as told) in the room the edge
// names, with ANTEROOM_ROOM as the public key and ANTEROOM_URL as the server, then repeats the
// call once with the admission.
//
// stdout: one JSON object a line for each change an app would show:
//   {"state":"waiting","position":12} {"state":"admitted"} {"state":"closed"}
//   {"state":"error","code":"..."} (a retry under way, or the end)
// exit: 0 when the resource answered 200; 2 when the room closed or refused the visitor for
// good; 1 otherwise (the deadline, a resource still refused, a network failure).
import { AnteroomError, createClient, memoryStorage, queueThrough } from "./index.js";

// The refusals no retry changes: the room is closed or gone, or this visitor is refused.
const FOR_GOOD = new Set(["RoomClosed", "RoomNotFound", "QueueDenied", "SessionRevoked", "AddressRequired", "InviteInvalid"]);
// Kept back from ANTEROOM_DEADLINE_MS so the driver ends on its own, and says so, before the kit kills it.
const DEADLINE_MARGIN_MS = 500;

const env = process.env;
for (const name of ["ANTEROOM_URL", "ANTEROOM_ROOM", "ANTEROOM_RESOURCE"]) {
  if (!env[name]) {
    process.stderr.write(`${name} is not set: the driver needs ANTEROOM_URL, ANTEROOM_ROOM and ANTEROOM_RESOURCE.\n`);
    process.exit(1);
  }
}

let last = "";
/** @param {Record<string, unknown>} state */
const say = (state) => {
  const line = JSON.stringify(state);
  if (line !== last) process.stdout.write(`${line}\n`);
  last = line;
};

/** @param {any} update */
const show = (update) => {
  if (update.status === "waiting" || update.status === "held") say({ state: "waiting", position: update.position ?? null });
  else if (update.status === "admitted") say({ state: "admitted" });
  else if (update.status === "idle") say({ state: "closed" });
  else if (update.status === "error") say({ state: "error", code: update.error });
};

const stop = new AbortController();
const deadline = Number(env.ANTEROOM_DEADLINE_MS);
const timer = Number.isFinite(deadline) && deadline > 0
  ? setTimeout(() => stop.abort(new Error("deadline")), Math.max(0, deadline - DEADLINE_MARGIN_MS))
  : null;

async function main() {
  const client = createClient({ apiKey: env.ANTEROOM_ROOM, baseUrl: env.ANTEROOM_URL, storage: memoryStorage(), estimates: false });
  let closed = false;
  const fetchThrough = queueThrough(fetch, client, {
    onUpdate(update) {
      if (update.status === "idle") closed = true;
      show(update);
    },
  });
  try {
    const response = await fetchThrough(env.ANTEROOM_RESOURCE, { signal: stop.signal, headers: { Accept: "application/json" } });
    if (response.status === 200) return 0;
    if (closed) return 2;
    let code = `Http${response.status}`;
    try {
      code = (await response.json()).error ?? code;
    } catch {
      // not JSON: the status says it
    }
    say({ state: "error", code });
    return 1;
  } catch (error) {
    if (error instanceof AnteroomError) {
      // A refusal for good closes the line to this visitor: the screen says so, with its code.
      if (FOR_GOOD.has(error.code)) {
        say({ state: "closed", code: error.code });
        return 2;
      }
      say({ state: "error", code: error.code });
      return 1;
    }
    say({ state: "error", code: stop.signal.aborted ? "Deadline" : "NetworkError" });
    return 1;
  }
}

const code = await main();
if (timer) clearTimeout(timer);
process.exit(code);
