/**
 * Anteroom's browser agent: take a place in a waiting room's line and wait to be let in.
 * Types and examples: index.d.ts.
 */
export { enterQueue } from "./enter-queue.js";
export { AnteroomError } from "./errors.js";
