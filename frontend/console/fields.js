// What the console's setting forms share: elements built with text only (escaped), labelled
// inputs with a hint of units and bounds, the API's refusal shown by the field it names, and
// settings and modes said in words.

/** @type {Record<string, string>} the queueing modes as the operator reads them */
export const MODE_WORDS = {
  fifo: "First come, first served",
  random: "Drawn at random",
  passthrough: "Everyone at once (no line)",
  reject: "No new entries",
};

/** @param {string} mode @returns {string} */
export function modeWords(mode) {
  return MODE_WORDS[mode] || mode;
}

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElement}
 */
export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

/** @typedef {{lo: number, hi: number, nullable?: boolean, default?: number | null}} Limit */

/** @returns {Record<string, Limit>} each integer setting's bounds, as the server checks them */
export function limits() {
  const main = document.getElementById("main");
  try {
    return JSON.parse(main?.dataset.limits || "{}");
  } catch {
    return {};
  }
}

/** @param {number | null | undefined} n */
export function number(n) {
  return n === null || n === undefined ? "(none)" : new Intl.NumberFormat("en").format(n);
}

/**
 * "Seconds, from 30 to 3,600 (default 300)."
 * @param {Limit | undefined} limit
 * @param {string} unit
 * @returns {string}
 */
export function bounds(limit, unit) {
  if (!limit) return unit ? `${unit}.` : "";
  const lead = unit ? `${unit.charAt(0).toUpperCase()}${unit.slice(1)}, from` : "From";
  // a default of "none" (null) is said by the field's own hint ("Empty for no limit")
  const fallback = limit.default === undefined || limit.default === null ? "" : ` (default ${number(limit.default)})`;
  return `${lead} ${number(limit.lo)} to ${number(limit.hi)}${fallback}.`;
}

/**
 * A labelled control with its hint and a place for the API's refusal, tied to it by
 * aria-describedby.
 * @param {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} input (with an id)
 * @param {string} label
 * @param {string} [hint]
 * @returns {{input: any, nodes: HTMLElement[], error: HTMLElement}}
 */
export function labelled(input, label, hint = "") {
  const id = input.id;
  const error = el("p", { id: `${id}-error`, class: "error field-error" });
  error.hidden = true;
  const nodes = [el("label", { for: id }, [label])];
  const described = [];
  if (hint) {
    nodes.push(el("p", { id: `${id}-hint`, class: "hint" }, [hint]));
    described.push(`${id}-hint`);
  }
  described.push(`${id}-error`);
  input.setAttribute("aria-describedby", described.join(" "));
  nodes.push(input, error);
  return { input, nodes, error };
}

/**
 * Show the API's refusal by each field it names (aria-invalid, the message beside it); what no
 * field of the form takes is said in ``rest``. Clears the earlier ones first.
 * @param {Record<string, HTMLElement>} inputs by the API's field name ("safetyNet.coolDownSec")
 * @param {{status: number, body: any}} reply
 * @param {HTMLElement} rest
 * @returns {boolean} whether the reply was a success
 */
export function showProblems(inputs, reply, rest) {
  for (const input of Object.values(inputs)) {
    input.removeAttribute("aria-invalid");
    const error = document.getElementById(`${input.id}-error`);
    if (error) {
      error.textContent = "";
      error.hidden = true;
    }
  }
  rest.textContent = "";
  if (reply.status < 300) return true;
  const fields = (reply.body && reply.body.fields) || {};
  const unplaced = [];
  let first = null;
  for (const [name, why] of Object.entries(fields)) {
    const input = inputs[name];
    const error = input && document.getElementById(`${input.id}-error`);
    if (!input || !error) {
      unplaced.push(String(why));
      continue;
    }
    input.setAttribute("aria-invalid", "true");
    error.textContent = `Refused: ${why}.`.replace(/\.\.$/, ".");
    error.hidden = false;
    first = first || input;
  }
  const message = (reply.body && reply.body.message) || `Failed (${reply.status}).`;
  rest.textContent = unplaced.length ? `${message} ${unplaced.join("; ")}` : message;
  first?.focus();
  return false;
}
