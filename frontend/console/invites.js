// A room's invites on its page: issue some (their links shown this once, to copy), the list
// with how much each was used and its state, and withdrawing one, confirmed in words.
import { el } from "./fields.js";
import { call, problem } from "./api.js";
import { count, when, zone } from "./format.js";
import { ask, copyable } from "./keys.js";

const PAGE = 100; // invites read at a time, newest first
/** @type {Record<string, string>} each lane, as the form and the list say it */
const LANES = {
  skip: "straight in (skips the line, within capacity)",
  priority: "ahead of the public line",
};
/** @type {Record<string, string>} */
const STATES = {
  open: "usable",
  spent: "used up",
  expired: "expired",
  withdrawn: "withdrawn",
};

/**
 * A datetime-local input's value for `ms`, in the browser's time zone.
 * @param {number} ms
 */
function localInput(ms) {
  const d = new Date(ms);
  const two = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`;
}

export class InvitesPanel {
  /**
   * @param {HTMLElement} host the section the form and the list go in
   * @param {{roomId: string, canWrite: boolean, publicKey: string, dialog: HTMLDialogElement,
   *   room: () => any, clockAheadMs: () => number}} options the room's slug is read from
   *   `room()`; `clockAheadMs()` is how far the room's clock runs ahead (0 but in a rehearsal)
   */
  constructor(host, { roomId, canWrite, publicKey, dialog, room, clockAheadMs }) {
    this.roomId = roomId;
    this.canWrite = canWrite;
    this.publicKey = publicKey;
    this.dialog = dialog;
    this.room = room;
    this.clockAheadMs = clockAheadMs;
    this.limit = PAGE;
    this.status = el("p", { class: "hint", id: "invites-status", role: "status" });
    this.listError = el("p", { id: "invites-list-error", role: "alert" });
    this.body = el("tbody");
    this.table = el("table", { id: "invites" }, [
      el("caption", { class: "sr-only" }, ["Invites issued for this room, newest first"]),
      el("thead", {}, [el("tr", {}, ["Invite", "Lane", "Used", "Issued", "Expires", "State", ""].map((h) => el("th", { scope: "col" }, [h])))]),
      this.body,
    ]);
    this.more = el("button", { type: "button", class: "quiet", id: "invites-more" }, ["Show older invites"]);
    this.more.hidden = true;
    this.more.addEventListener("click", () => {
      this.limit += PAGE;
      this.refresh();
    });
    this.links = el("div", { id: "invite-links" });
    /** @type {Node[]} */
    const parts = [];
    if (canWrite) parts.push(el("h3", {}, ["Issue invites"]), this.form(), this.links);
    host.append(...parts, el("h3", {}, ["Issued"]), this.status, this.listError,
      el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Invites issued (scrolls)" }, [this.table]), this.more);
  }

  form() {
    /** @param {string} id @param {string} label @param {Record<string, string>} attrs */
    const field = (id, label, attrs) => {
      const input = /** @type {HTMLInputElement} */ (el("input", { id, ...attrs }));
      return { input, nodes: [el("label", { for: id }, [label]), input] };
    };
    const howMany = field("invite-count", "How many invites (1 to 1,000; each its own link)", { type: "number", min: "1", max: "1000", value: "1", required: "", inputmode: "numeric" });
    const uses = field("invite-uses", "Visitors each invite lets in", { type: "number", min: "1", value: "1", required: "", inputmode: "numeric" });
    const expires = field("invite-expires", `Expires (${zone()})`, { type: "datetime-local", required: "" });
    expires.input.value = localInput(Date.now() + 86400000);
    const lane = /** @type {HTMLSelectElement} */ (el("select", { id: "invite-lane" },
      Object.entries(LANES).map(([value, words]) => el("option", { value }, [words]))));
    this.formError = el("p", { id: "invite-error", role: "alert" });
    const form = el("form", { class: "stack", id: "issue-invites" }, [
      ...howMany.nodes,
      el("label", { for: "invite-lane" }, ["Invited visitors go"]), lane,
      ...uses.nodes, ...expires.nodes,
      this.formError,
      el("button", { type: "submit" }, ["Issue invites"]),
    ]);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const typed = new Date(expires.input.value).getTime();
      // the typed wall time, onto the room's clock (ahead only in a rehearsal)
      const body = {
        count: Number(howMany.input.value),
        lane: lane.value,
        uses: Number(uses.input.value),
        expiresAt: Number.isFinite(typed) ? typed + this.clockAheadMs() : 0,
      };
      this.issue(body);
    });
    return form;
  }

  /** @param {{count: number, lane: string, uses: number, expiresAt: number}} body */
  async issue(body) {
    const reply = await call("POST", `/queues/${this.roomId}/invites`, body);
    if (reply.status !== 201) {
      this.formError.textContent = problem(reply);
      this.formError.className = "error";
      return;
    }
    this.formError.textContent = "";
    const slug = this.room()?.slug || "";
    const base = `${location.origin}/queue/${encodeURIComponent(slug)}?key=${encodeURIComponent(this.publicKey)}&invite=`;
    /** @type {string[]} */
    const links = reply.body.invites.map((/** @type {string} */ token) => base + encodeURIComponent(token));
    const n = links.length;
    this.links.replaceChildren(
      el("p", { class: "error", role: "alert" }, [
        `${count(n)} invite${n === 1 ? "" : "s"} issued, ${LANES[body.lane]}, until ${when(body.expiresAt - this.clockAheadMs())}. ` +
        `Copy ${n === 1 ? "its link" : "the links"} now: ${n === 1 ? "it is" : "they are"} shown only this once.`,
      ]),
      copyable("invite-links-value", n === 1 ? "Invite link" : "Invite links, one a line", links.join("\n"), true),
    );
    await this.refresh();
  }

  async refresh() {
    const reply = await call("GET", `/queues/${this.roomId}/invites?limit=${Math.min(this.limit, 500)}`);
    if (reply.status !== 200) {
      this.listError.textContent = problem(reply);
      this.listError.className = "error";
      return;
    }
    this.listError.textContent = "";
    const { invites, total } = reply.body;
    const skew = this.clockAheadMs(); // the room's times, shown as the operator's wall times
    this.body.replaceChildren(...invites.map((/** @type {any} */ i) => {
      /** @type {(Node | string)[]} */
      let act = ["–"];
      if (this.canWrite && (i.state === "open" || i.state === "spent")) {
        const withdraw = el("button", { type: "button", class: "quiet", "data-withdraw": i.id }, ["Withdraw"]);
        withdraw.addEventListener("click", () => this.withdraw(i));
        act = [withdraw];
      }
      const state = i.state === "withdrawn" && i.withdrawnAt ? `withdrawn ${when(i.withdrawnAt - skew)}` : STATES[i.state] || i.state;
      return el("tr", { "data-invite": i.id, "data-state": i.state }, [
        el("th", { scope: "row" }, [el("code", {}, [i.id])]),
        el("td", {}, [i.lane === "skip" ? "straight in" : "ahead of the line"]),
        el("td", {}, [`${count(i.spent)} of ${count(i.uses)}`]),
        el("td", {}, [when(i.issuedAt - skew)]),
        el("td", {}, [when(i.expiresAt - skew)]),
        el("td", {}, [state]),
        el("td", {}, act),
      ]);
    }));
    this.table.hidden = invites.length === 0;
    this.more.hidden = invites.length >= total || this.limit >= 500;
    this.status.textContent = total === 0 ? "No invites issued yet."
      : `${count(invites.length)} of ${count(total)} invite${total === 1 ? "" : "s"}, newest first; times in ${zone()}.`;
  }

  /** @param {any} invite */
  async withdraw(invite) {
    const used = invite.spent ? ` ${count(invite.spent)} visitor${invite.spent === 1 ? "" : "s"} already in with it keep${invite.spent === 1 ? "s" : ""} their place.` : "";
    const text = `Withdraw invite ${invite.id}? Its link stops working at once: visitors who have not used it yet are refused.${used} This cannot be undone.`;
    if (!(await ask(this.dialog, text))) return;
    const reply = await call("DELETE", `/queues/${this.roomId}/invites/${encodeURIComponent(invite.id)}`);
    await this.refresh();
    if (reply.status !== 204) {
      this.listError.textContent = problem(reply);
      this.listError.className = "error";
    } else {
      this.status.textContent = `Invite ${invite.id} is withdrawn. ${this.status.textContent}`;
    }
  }
}
