// A tiny shop protected by the Node edge middleware, for tests/integration/test_edge_node.py.
// Configured by environment: ANTEROOM_KEYS, ANTEROOM_BASE_URL, ANTEROOM_PUBLIC_KEY,
// ANTEROOM_ROUTES (JSON prefix -> slug), ANTEROOM_REFRESH_AFTER (seconds), ANTEROOM_SECURE_COOKIE
// ("0": off), PORT (0: any free port). Prints one JSON line {"port": …} once it listens.
import http from "node:http";

import { anteroomMiddleware } from "../../frontend/node/index.js";

const env = process.env;
const anteroom = anteroomMiddleware({
  keys: env.ANTEROOM_KEYS ?? "",
  baseUrl: env.ANTEROOM_BASE_URL ?? "",
  publicKey: env.ANTEROOM_PUBLIC_KEY ?? "",
  routes: JSON.parse(env.ANTEROOM_ROUTES ?? "{}"),
  refreshAfter: Number(env.ANTEROOM_REFRESH_AFTER ?? 15),
  secureCookie: env.ANTEROOM_SECURE_COOKIE !== "0",
});

/**
 * The shop itself: it says what it served, and sets a cookie of its own.
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 */
function shop(req, res) {
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.setHeader("Set-Cookie", "cart=1; Path=/");
  res.end(`the shop: ${req.url}`);
}

const server = http.createServer((req, res) => {
  anteroom(req, res, (error) => {
    if (error) {
      res.statusCode = 500;
      res.end(String(error));
      return;
    }
    shop(req, res);
  });
});

server.listen(Number(env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  console.log(JSON.stringify({ port }));
});
// The test stops us with SIGTERM; close so in-flight requests finish.
process.on("SIGTERM", () => server.close(() => process.exit(0)));
