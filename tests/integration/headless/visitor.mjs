// A visitor as an app is: the client with its state in a file (the app's storage), every call to
// the visitor API and every update written out as a JSON line.
import { readFileSync, writeFileSync } from "node:fs";
import { createClient } from "../../../frontend/headless/index.js";

const env = process.env;
const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const file = env.STATE_FILE;
const read = () => {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return {}; // no file yet
  }
};
const storage = {
  getItem: async (key) => read()[key] ?? null,
  setItem: async (key, value) => writeFileSync(file, JSON.stringify({ ...read(), [key]: value })),
  removeItem: async (key) => {
    const all = read();
    delete all[key];
    writeFileSync(file, JSON.stringify(all));
  },
};
const logged = async (url, init) => {
  const response = await fetch(url, init);
  say({ call: new URL(url).pathname, status: response.status });
  return response;
};
const client = createClient({ apiKey: env.API_KEY, baseUrl: env.ANTEROOM_URL, storage, fetch: logged, estimates: false });
const answer = await client.enter(env.ROOM, {
  onUpdate(update) {
    say({ update: update.status, position: update.position ?? null, ticket: update.ticket ?? null });
  },
});
say({ done: answer.status, token: answer.token ?? null });
