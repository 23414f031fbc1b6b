/**
 * The hosted page's messages and formatting. The catalog is the page's language's
 * `translations/<lang>.json`, embedded by the server as JSON in `<script type="application/json"
 * id="anteroom-i18n">` (the one source of every text, for Jinja and for this script). A counting
 * message maps `Intl.PluralRules` categories (`one`, `few`, `many`, `other`…) to its forms.
 */

/** @typedef {Record<string, string | Record<string, string>>} Catalog */

/**
 * @typedef {object} Translator
 * @property {string} locale the BCP 47 tag everything is formatted for
 * @property {(key: string, values?: Record<string, unknown>) => string} text a message, its `{name}`s filled (numbers formatted)
 * @property {(key: string, count: number, values?: Record<string, unknown>) => string} count the form of a counting message for `count` (its `{count}`)
 * @property {(n: number, options?: Intl.NumberFormatOptions) => string} number `n` grouped as the locale writes it
 * @property {(epochMs: number, now: number) => string} time a moment in the visitor's own time zone (with its date unless within a day)
 */

/**
 * The catalog embedded in `document`, or null when there is none or it is not JSON.
 * @param {{getElementById(id: string): any}} document
 * @returns {Catalog | null}
 */
export function readCatalog(document) {
  const element = document.getElementById("anteroom-i18n");
  if (!element) return null;
  try {
    const parsed = JSON.parse(element.textContent ?? "");
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * @param {Catalog} catalog
 * @param {string} locale the page's language (a tag Intl knows; an unknown one falls back)
 * @returns {Translator}
 */
export function createTranslator(catalog, locale) {
  const tag = supported(locale);
  const plurals = new Intl.PluralRules(tag);
  const numbers = new Intl.NumberFormat(tag);
  /** @type {Map<string, Intl.NumberFormat>} */
  const formats = new Map();

  /** @param {number} n @param {Intl.NumberFormatOptions} [options] */
  const number = (n, options) => {
    if (!options) return numbers.format(n);
    const id = JSON.stringify(options);
    let format = formats.get(id);
    if (!format) formats.set(id, (format = new Intl.NumberFormat(tag, options)));
    return format.format(n);
  };

  /** @param {string} template @param {Record<string, unknown>} values */
  const fill = (template, values) =>
    template.replace(/\{(\w+)\}/g, (whole, name) => {
      const value = values[name];
      if (value === undefined || value === null) return whole;
      return typeof value === "number" ? number(value) : String(value);
    });

  return {
    locale: tag,
    number,
    text(key, values = {}) {
      const message = catalog[key];
      // A missing key shows as itself: visible in tests, never an exception on a live page.
      if (typeof message !== "string") return key;
      return fill(message, values);
    },
    count(key, count, values = {}) {
      const forms = catalog[key];
      if (!forms || typeof forms !== "object") return key;
      const form = forms[plurals.select(count)] ?? forms.other;
      return typeof form === "string" ? fill(form, { count, ...values }) : key;
    },
    time(epochMs, now) {
      const withinDay = Math.abs(epochMs - now) < 86_400_000;
      const options = withinDay ? { timeStyle: "short" } : { dateStyle: "medium", timeStyle: "short" };
      return new Intl.DateTimeFormat(tag, /** @type {Intl.DateTimeFormatOptions} */ (options)).format(epochMs);
    },
  };
}

/**
 * `locale` when Intl knows it, else "en".
 * @param {string} locale
 */
function supported(locale) {
  try {
    return Intl.NumberFormat.supportedLocalesOf([locale]).length ? locale : "en";
  } catch {
    return "en"; // not even a well-formed tag
  }
}
