// The console's calls to /console/api/…: same origin, the session cookie, and for every change
// the session's CSRF token (read from the page's meta tag) in a header.
import { fieldLabel } from "./format.js";

/** @typedef {{status: number, body: any}} Reply */

const CSRF_HEADER = "X-Anteroom-CSRF";

/** @returns {string} */
function csrfToken() {
  const meta = document.querySelector('meta[name="anteroom-csrf"]');
  return meta ? meta.getAttribute("content") || "" : "";
}

/**
 * One call; a 401 (the session ended) sends the browser back to the sign-in page.
 * @param {string} method
 * @param {string} path below /console/api
 * @param {object} [body]
 * @returns {Promise<Reply>}
 */
export async function call(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers[CSRF_HEADER] = csrfToken();
  }
  const response = await fetch(`/console/api${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    cache: "no-store",
  });
  if (response.status === 401) {
    window.location.assign("/console");
  }
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/**
 * The message of an error answer, naming its fields.
 * @param {Reply} reply
 * @returns {string}
 */
export function problem(reply) {
  const body = reply.body || {};
  // each field by its label in words ("Rate (per minute): must be from 1 to 100,000")
  const fields = Object.entries(body.fields || {}).map(([k, v]) => `${fieldLabel(k)}: ${v}.`);
  return [body.message || `Failed (${reply.status}).`, ...fields].join(" ");
}
