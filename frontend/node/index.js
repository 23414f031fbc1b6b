/**
 * Anteroom for Node servers: offline verification of admissions and sessions, and an edge
 * middleware protecting a site's paths. Node 20+, no dependencies. Types and examples: index.d.ts.
 */
export { anteroomMiddleware } from "./middleware.js";
export { Keyring, verifyAdmission, verifySession } from "./verify.js";
