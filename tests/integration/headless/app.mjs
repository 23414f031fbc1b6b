// An app calling its own API through queueThrough: a POST first (not repeated: its 429 comes
// back), then a GET (queued, repeated once with the admission), then the POST again (it carries
// the kept admission from the start).
import { createClient, queueThrough } from "../../../frontend/headless/index.js";

const env = process.env;
const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const visitorApi = async (url, init) => {
  const response = await fetch(url, init);
  say({ call: new URL(url).pathname, status: response.status });
  return response;
};
const shop = async (input, init = {}) => {
  const admission = new Headers(init.headers).get("Anteroom-Admission");
  const response = await fetch(input, init);
  say({ shop: init.method ?? "GET", admission: admission !== null, status: response.status });
  return response;
};
const client = createClient({ apiKey: env.API_KEY, baseUrl: env.ANTEROOM_URL, fetch: visitorApi, estimates: false });
const api = queueThrough(shop, client, { onUpdate: (u) => say({ update: u.status, position: u.position ?? null }) });
const post = () => api(env.CART, { method: "POST", body: JSON.stringify(["sku-1"]), headers: { "Content-Type": "application/json" } });

const refused = await post();
say({ result: "post", status: refused.status, body: await refused.json() });
const got = await api(env.CART);
say({ result: "get", status: got.status, body: await got.json() });
const again = await post();
say({ result: "post-again", status: again.status, body: await again.json() });
