/**
 * Anteroom's headless client, for runtimes without a DOM (React Native and Expo, Capacitor,
 * Node, service workers): the browser agent's queue logic with pluggable storage and SHA-256,
 * and `queueThrough` for the app's own API calls. Types and examples: index.d.ts.
 */
export { createClient } from "./client.js";
export { queueThrough, ADMISSION_HEADER } from "./queue-through.js";
export { memoryStorage, asyncStorage } from "./storage.js";
export { AnteroomError } from "../errors.js";
