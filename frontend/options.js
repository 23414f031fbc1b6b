/** Checks of the options the browser agent and the headless client share; each names the bad one. */

export const SLUG = /^[a-z0-9-]{3,64}$/;

/** @param {unknown} baseUrl "" (same origin), a path, or an absolute http(s) URL; no trailing slash */
export function normalizeBaseUrl(baseUrl) {
  if (typeof baseUrl !== "string") throw new TypeError("`baseUrl` must be a string URL.");
  if (baseUrl === "" || baseUrl.startsWith("/")) return baseUrl.replace(/\/+$/, "");
  let url;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError("`baseUrl` must be an absolute http(s) URL, a path, or \"\".");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError("`baseUrl` must be an http(s) URL.");
  }
  return baseUrl.replace(/\/+$/, "");
}

/** @param {any} value */
export function isAbortSignal(value) {
  return typeof value === "object" && value !== null && typeof value.aborted === "boolean" &&
    typeof value.addEventListener === "function" && typeof value.throwIfAborted === "function";
}

/** @param {any} clock */
export function checkClock(clock) {
  const clockMethods = ["now", "setTimeout", "clearTimeout"];
  if (typeof clock !== "object" || clock === null || !clockMethods.every((name) => typeof clock[name] === "function")) {
    throw new TypeError("`clock` must be an object with now(), setTimeout() and clearTimeout().");
  }
}
