// Revoking a visitor or one session in every room of the environment, confirmed first; the
// API's answer (rooms holding it, spots dropped now, when it ends) said in words.
import { call } from "./api.js";
import { el, labelled, number, showProblems } from "./fields.js";
import { when, zone } from "./format.js";

/** @type {Record<string, string>} */
const KINDS = {
  vid: "A visitor (every session of theirs)",
  jti: "One session",
};

/**
 * @param {string} text
 * @returns {Promise<boolean>} whether the operator confirmed
 */
function confirmed(text) {
  const cancel = el("button", { value: "cancel", class: "quiet", id: "revoke-cancel" }, ["Cancel"]);
  const dialog = /** @type {HTMLDialogElement} */ (el("dialog", { "aria-labelledby": "revoke-confirm-title", id: "revoke-confirm" }, [
    el("form", { method: "dialog", class: "stack" }, [
      el("h3", { id: "revoke-confirm-title" }, ["Confirm"]),
      el("p", {}, [text]),
      el("div", { class: "row" }, [cancel, el("button", { value: "ok" }, ["Confirm"])]),
    ]),
  ]));
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok");
      dialog.remove();
    });
    dialog.showModal();
    cancel.focus();
  });
}

/**
 * The answer of a revocation in words.
 * @param {any} answer
 * @returns {string}
 */
export function revocationWords(answer) {
  const who = answer.vid ? `Visitor ${answer.vid}` : `Session ${answer.jti}`;
  const dropped = answer.vid
    ? `${number(answer.droppedNow)} waiting place${answer.droppedNow === 1 ? "" : "s"} dropped now`
    : "its waiting places go at their next check-in";
  return `${who} is revoked in ${number(answer.rooms)} room${answer.rooms === 1 ? "" : "s"}: ${dropped}; ` +
    `its admissions can no longer be renewed and it cannot enter again until ${when(answer.expiresAt)} (${zone()}), ` +
    "when the revocation ends by itself. An admission already given stays valid at your site until it expires.";
}

/**
 * The revocation form, in `host`.
 * @param {HTMLElement} host
 */
export function mountRevoke(host) {
  const kind = /** @type {HTMLSelectElement} */ (el("select", { id: "revoke-kind" },
    Object.entries(KINDS).map(([value, words]) => el("option", { value }, [words]))));
  const value = /** @type {HTMLInputElement} */ (el("input", { id: "revoke-value", type: "text", autocomplete: "off", spellcheck: "false" }));
  const reason = /** @type {HTMLInputElement} */ (el("input", { id: "revoke-reason", type: "text", maxlength: "200" }));
  const outcome = el("p", { id: "revoke-outcome", role: "alert" });
  const form = el("form", { class: "stack", id: "revoke-form", novalidate: "" }, [
    ...labelled(kind, "Revoke").nodes,
    ...labelled(value, "Its id", "A visitor's id (as the line on a room's page shows it) or a session's id: letters, digits, - and _.").nodes,
    ...labelled(reason, "Reason (kept in the audit log)").nodes,
    outcome,
    el("button", { type: "submit", class: "danger" }, ["Revoke"]),
  ]);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const id = value.value.trim();
    const which = kind.value === "vid" ? `the visitor ${id}` : `the session ${id}`;
    const ok = await confirmed(
      `Revoke ${which} in every room of this environment: ${kind.value === "vid" ? "their waiting places are dropped now" : "its waiting places go at their next check-in"}, ` +
      "their admissions can no longer be renewed and they cannot enter again for some hours.",
    );
    if (!ok) return;
    /** @type {Record<string, string>} */
    const body = { [kind.value]: id };
    if (reason.value.trim()) body.reason = reason.value.trim();
    // The API names the id's field (vid or jti): both point at the one input.
    const reply = await call("POST", "/sessions/revoke", body);
    if (showProblems({ vid: value, jti: value, reason }, reply, outcome)) {
      outcome.textContent = revocationWords(reply.body);
      value.value = reason.value = "";
    }
  });
  host.replaceChildren(form);
}
