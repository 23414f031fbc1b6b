// The environment's keys on the rooms page (a key with keys:write): the list, a new key with
// its scopes (its secret shown this once, to copy), and revoking one, confirmed in words.
import { el } from "./fields.js";
import { call, problem } from "./api.js";
import { SCOPE_WORDS, scopeWords, when } from "./format.js";

/**
 * Ask in `dialog` (the console's confirmation: #confirm-text, Confirm and Cancel buttons).
 * @param {HTMLDialogElement} dialog
 * @param {string} text
 * @returns {Promise<boolean>} whether the operator confirmed
 */
export function ask(dialog, text) {
  const said = /** @type {HTMLElement} */ (dialog.querySelector("#confirm-text"));
  said.textContent = text;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    /** @type {HTMLElement | null} */ (dialog.querySelector("#confirm-cancel"))?.focus();
  });
}

/**
 * A text field shown once, with a button copying it (the clipboard, or a selection to copy by hand).
 * @param {string} id
 * @param {string} label
 * @param {string} value
 * @param {boolean} many one value a line
 * @returns {HTMLElement}
 */
export function copyable(id, label, value, many = false) {
  const field = /** @type {HTMLInputElement | HTMLTextAreaElement} */ (
    el(many ? "textarea" : "input", { id, readonly: "", spellcheck: "false", ...(many ? { rows: "4" } : { type: "text" }) }));
  field.value = value;
  const said = el("p", { class: "hint", role: "status" });
  const copy = el("button", { type: "button" }, ["Copy"]);
  copy.addEventListener("click", async () => {
    field.focus();
    field.select();
    try {
      await navigator.clipboard.writeText(value);
      said.textContent = "Copied.";
    } catch {
      said.textContent = "Selected: copy it with your keyboard (Ctrl+C or ⌘C).";
    }
  });
  return el("div", { class: "stack" }, [el("label", { for: id }, [label]), field, el("div", { class: "row" }, [copy]), said]);
}

export class KeysPanel {
  /**
   * @param {HTMLElement} host the section the list and the form go in
   * @param {{me: string, scopes: string[], dialog: HTMLDialogElement}} options the signed-in
   *   key's id and scopes; the confirmation dialog
   */
  constructor(host, { me, scopes, dialog }) {
    this.me = me;
    this.dialog = dialog;
    this.status = el("p", { class: "hint", id: "keys-status", role: "status" });
    this.body = el("tbody");
    this.table = el("table", { id: "keys" }, [
      el("caption", { class: "sr-only" }, ["Secret keys of this environment"]),
      el("thead", {}, [el("tr", {}, ["Key", "May", "Public key", "Created", "State", ""].map((h) => el("th", { scope: "col" }, [h])))]),
      this.body,
    ]);
    this.listError = el("p", { id: "keys-list-error", role: "alert" });
    this.boxes = Object.keys(SCOPE_WORDS).map((scope) => {
      const id = `new-key-${scope.replace(":", "-")}`;
      const held = scopes.includes(scope);
      const box = /** @type {HTMLInputElement} */ (el("input", { type: "checkbox", id, value: scope }));
      if (!held) box.disabled = true;
      const words = `${scopeWords(scope)} (${scope})${held ? "" : ", which this key lacks"}`;
      return { box, nodes: el("div", { class: "check" }, [box, el("label", { for: id }, [words])]) };
    });
    this.formError = el("p", { id: "new-key-error", role: "alert" });
    this.secret = el("div", { id: "new-key-secret" });
    const form = el("form", { class: "stack", id: "new-key" }, [
      el("fieldset", {}, [el("legend", {}, ["What the new key may do"]), ...this.boxes.map((b) => b.nodes)]),
      el("p", { class: "hint" }, ["A key may grant only what it may do itself. Its secret is shown once, here."]),
      this.formError,
      el("button", { type: "submit" }, ["Create key"]),
    ]);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.create();
    });
    host.append(this.status, this.listError, el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Keys (scrolls)" }, [this.table]),
      el("h3", {}, ["New key"]), form, this.secret);
  }

  async refresh() {
    const reply = await call("GET", "/keys");
    if (reply.status !== 200) {
      this.listError.textContent = problem(reply);
      this.listError.className = "error";
      return;
    }
    this.listError.textContent = "";
    /** @type {any[]} */
    const keys = reply.body.keys;
    this.body.replaceChildren(...keys.map((k) => {
      const you = k.id === this.me;
      /** @type {(Node | string)[]} */
      let act = [you ? "the key you signed in with" : "–"];
      if (!you && !k.revoked) {
        const revoke = el("button", { type: "button", class: "danger", "data-revoke": k.id }, ["Revoke"]);
        revoke.addEventListener("click", () => this.revoke(k.id));
        act = [revoke];
      }
      return el("tr", { "data-key": k.id, "data-state": k.revoked ? "revoked" : "live" }, [
        el("th", { scope: "row" }, [k.id]),
        el("td", {}, [k.scopes.map(scopeWords).join(", ")]),
        el("td", {}, [el("code", {}, [k.publicKey])]),
        el("td", {}, [when(k.createdAt)]),
        el("td", {}, [k.revoked ? "revoked" : "live"]),
        el("td", {}, act),
      ]);
    }));
    const live = keys.filter((k) => !k.revoked).length;
    this.status.textContent = `${live} live key${live === 1 ? "" : "s"}, ${keys.length - live} revoked.`;
  }

  async create() {
    const scopes = this.boxes.filter((b) => b.box.checked).map((b) => b.box.value);
    const reply = await call("POST", "/keys", { scopes });
    if (reply.status !== 201) {
      this.formError.textContent = problem(reply);
      this.formError.className = "error";
      return;
    }
    this.formError.textContent = "";
    for (const b of this.boxes) b.box.checked = false;
    const { key, secret } = reply.body;
    this.secret.dataset.key = key.id;
    this.secret.replaceChildren(
      el("p", { class: "error", role: "alert" }, [
        `Key ${key.id} is made. Copy its secret now: it is shown only this once and cannot be shown again (Anteroom keeps only its hash).`,
      ]),
      copyable("new-key-secret-value", `Secret key of ${key.id}`, secret),
      el("p", { class: "hint" }, [`Its public key, for pages and apps: ${key.publicKey}`]),
    );
    await this.refresh();
  }

  /** @param {string} id */
  async revoke(id) {
    if (!(await ask(this.dialog, `Revoke key ${id}? Sites and scripts using it stop working at once: its secret key, its public key (${this.publicKeyOf(id)}) and its console sessions.`))) return;
    const reply = await call("DELETE", `/keys/${encodeURIComponent(id)}`);
    if (reply.status !== 204) {
      this.listError.textContent = problem(reply);
      this.listError.className = "error";
    } else {
      this.listError.textContent = "";
      if (this.secret.dataset.key === id) this.secret.replaceChildren(); // its secret is no use now
    }
    await this.refresh();
    this.status.textContent = reply.status === 204 ? `Key ${id} is revoked. ${this.status.textContent}` : this.status.textContent;
  }

  /** @param {string} id */
  publicKeyOf(id) {
    return this.body.querySelector(`tr[data-key="${CSS.escape(id)}"] code`)?.textContent || "its public key";
  }
}
