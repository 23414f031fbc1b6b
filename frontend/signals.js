/**
 * The browser facts sent with `identify`. The server scores them; the browser sends its
 * user agent on every request anyway, so it is not repeated here. Kept small on purpose: each
 * field is cheap to read, stable, and documented on the server's side.
 *
 * @param {any} [nav] the navigator to read (tests pass their own)
 * @returns {{webdriver: boolean, languages: number, hardwareConcurrency: number, timezone: string, plugins: number}}
 */
export function collectSignals(nav = globalThis.navigator) {
  return {
    webdriver: nav?.webdriver === true,
    languages: nav?.languages?.length ?? 0,
    hardwareConcurrency: Number(nav?.hardwareConcurrency) || 0,
    timezone: readTimezone(),
    plugins: nav?.plugins?.length ?? 0,
  };
}

function readTimezone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone ?? "";
  } catch {
    return "";
  }
}
