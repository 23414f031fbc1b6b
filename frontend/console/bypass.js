// A room's bypass rules on its page: listed in words (a secret is never shown: the API keeps it
// hashed and answers only an id that changes with it), one added, one removed. The API takes the
// whole list at each change: a rule kept is sent back by its secretId, which keeps its stored
// secret, so nobody types another rule's secret again.
import { el, labelled, showProblems } from "./fields.js";

/** @typedef {import("./settings.js").Page} Page */

/** @type {Record<string, string>} */
const KINDS = {
  "address-range": "Visitors from a network range",
  header: "Requests carrying a header with a secret",
  cookie: "Requests carrying a cookie with a secret",
  "path-prefix": "A path and everything below it (checked by your site's edge)",
};

/** @param {any} rule @returns {string} one rule in words, never its secret */
export function ruleWords(rule) {
  if (rule.kind === "path-prefix") return `Paths ${rule.value} and below pass at your site's edge`;
  if (rule.kind === "address-range") return `Visitors from addresses in ${rule.value} skip the line`;
  const id = rule.secretId ? ` (secret ${rule.secretId}…, never shown)` : "";
  return `Requests whose ${rule.kind} ${rule.name} carries the secret skip the line${id}`;
}

/** @param {any} rule */
const hasSecret = (rule) => rule.kind === "header" || rule.kind === "cookie";

/**
 * The rules' list and forms, in `host`.
 * @param {Page} page
 * @param {HTMLElement} host
 */
export function mountBypass(page, host) {
  const list = el("ul", { id: "bypass-rules", class: "rules" });
  const outcome = el("p", { id: "bypass-outcome", role: "alert" });
  const kind = /** @type {HTMLSelectElement} */ (el("select", { id: "bypass-kind" },
    Object.entries(KINDS).map(([value, words]) => el("option", { value }, [words]))));
  const value = /** @type {HTMLInputElement} */ (el("input", { id: "bypass-value", type: "text", autocomplete: "off" }));
  const name = /** @type {HTMLInputElement} */ (el("input", { id: "bypass-name", type: "text", autocomplete: "off" }));
  const secret = /** @type {HTMLInputElement} */ (el("input", { id: "bypass-secret", type: "password", autocomplete: "new-password" }));
  const valuePart = el("div", { class: "stack" }, labelled(value, "Address range or path", "An address range as address/length (203.0.113.0/24), or a path starting with / (/static/).").nodes);
  const secretPart = el("div", { class: "stack" }, [
    ...labelled(name, "Header or cookie name", "Letters, digits and - _ (X-Monitor).").nodes,
    ...labelled(secret, "Its secret", "16 to 256 printable characters. Stored hashed: it is never shown again, so keep it where your monitoring is configured.").nodes,
  ]);
  const add = el("form", { class: "stack", id: "bypass-add", novalidate: "" }, [
    ...labelled(kind, "Kind of rule").nodes,
    valuePart,
    secretPart,
    el("button", { type: "submit" }, ["Add rule"]),
  ]);
  const showKind = () => {
    const secretKind = kind.value === "header" || kind.value === "cookie";
    valuePart.hidden = secretKind;
    secretPart.hidden = !secretKind;
  };
  kind.addEventListener("change", showKind);
  showKind();

  /** @type {string} the rules last drawn: a refresh redraws only a change */
  let drawn = "";
  const draw = () => {
    const rules = page.room.bypass || [];
    const key = JSON.stringify(rules);
    if (key === drawn) return;
    drawn = key;
    const items = rules.map((/** @type {any} */ rule, /** @type {number} */ i) => {
      const remove = el("button", { type: "button", class: "quiet", "data-rule": String(i) }, ["Remove"]);
      remove.setAttribute("aria-label", `Remove: ${ruleWords(rule)}`);
      remove.addEventListener("click", () => change(rules, i, null));
      return el("li", { "data-rule": String(i) }, [ruleWords(rule), " ", remove]);
    });
    if (!items.length) items.push(el("li", {}, ["No bypass rules: everyone queues."]));
    list.replaceChildren(...items);
  };
  page.fillers.push(draw);

  /**
   * Send the list less rule `removed` (or plus `added`), the rules kept by their secretId.
   * @param {any[]} rules as the API shows them
   * @param {number | null} removed
   * @param {any} added
   */
  const change = (rules, removed, added) => {
    /** @type {Record<string, HTMLElement>} */
    const inputs = {};
    /** @type {Record<number, Record<string, HTMLElement>>} where the API's bypass[i].part goes */
    const at = {};
    const next = [];
    for (const [i, rule] of rules.entries()) {
      if (i === removed) continue;
      next.push(hasSecret(rule)
        ? { kind: rule.kind, name: rule.name, secretId: rule.secretId }
        : { kind: rule.kind, value: rule.value });
    }
    const addInputs = { kind, value, name, secret };
    Object.assign(inputs, { kind, value, name, secret });
    if (added) {
      at[next.length] = addInputs;
      next.push(added);
    }
    showProblems(inputs, { status: 200, body: null }, outcome);
    const text = added
      ? `Add a bypass rule: ${ruleWords(added)}. The room then has ${next.length} rule${next.length === 1 ? "" : "s"}.`
      : `Remove the bypass rule "${ruleWords(rules[/** @type {number} */ (removed)])}": such requests queue like everyone else from now.`;
    page.confirmThen(text, { bypass: next }, (reply) => {
      // The API names the rule and its part ("bypass[2].value: not a CIDR"): shown by that input.
      /** @type {Record<string, string>} */
      const fields = {};
      /** @type {Record<string, HTMLElement>} */
      const byName = { ...inputs };
      for (const [field, why] of Object.entries(reply.body?.fields || {})) {
        const found = /^bypass\[(\d+)\]\.(\w+): (.*)$/.exec(String(why));
        const target = found && at[Number(found[1])]?.[found[2]];
        if (target) {
          const key = Object.keys(byName).find((k) => byName[k] === target) || field;
          fields[key] = found ? found[3] : String(why);
        } else fields[field] = String(why);
      }
      if (showProblems(byName, { status: reply.status, body: { ...(reply.body || {}), fields } }, outcome)) {
        for (const input of [value, name, secret]) input.value = "";
        outcome.textContent = added ? "Rule added." : "Rule removed.";
      }
    });
  };
  add.addEventListener("submit", (event) => {
    event.preventDefault();
    const rule = hasSecret({ kind: kind.value })
      ? { kind: kind.value, name: name.value.trim(), secret: secret.value }
      : { kind: kind.value, value: value.value.trim() };
    change(page.room.bypass || [], null, rule);
  });
  host.replaceChildren(
    el("p", { class: "hint" }, ["A request that matches a rule skips the line (over and above the rate). For your monitoring, a partner, your staff."]),
    list, outcome, add,
  );
}
