// The audit log as a table: who did what to which room, when, and the change in words;
// filtered by room and by action, kept while the page refreshes.
import { call } from "./api.js";
import { el } from "./fields.js";
import { auditRow } from "./format.js";

const SHOWN = 100; // newest entries read each refresh

/**
 * Keep a select's options to `options` ([value, label], the first "every …"), its choice kept.
 * @param {HTMLSelectElement} select
 * @param {[string, string][]} options
 */
function fill(select, options) {
  const chosen = select.value;
  const key = JSON.stringify(options);
  if (select.dataset.options === key) return;
  select.dataset.options = key;
  select.replaceChildren(...options.map(([value, label]) => el("option", { value }, [label])));
  if (options.some(([value]) => value === chosen)) select.value = chosen;
}

export class AuditTable {
  /**
   * @param {HTMLElement} host the section the table and its filters go in
   * @param {{me: string, room?: string}} options the signed-in key; the room a room's page
   *   starts filtered to
   */
  constructor(host, { me, room = "" }) {
    this.me = me;
    this.roomFilter = /** @type {HTMLSelectElement} */ (el("select", { id: "audit-room" }));
    this.actionFilter = /** @type {HTMLSelectElement} */ (el("select", { id: "audit-action" }));
    this.status = el("p", { class: "hint", id: "audit-status", role: "status" });
    this.body = el("tbody");
    this.table = el("table", { id: "audit", class: "audit" }, [
      el("caption", { class: "sr-only" }, ["Changes made in this environment, newest first"]),
      el("thead", {}, [el("tr", {}, ["When", "Who", "Room", "What", "Change"].map((h) => el("th", { scope: "col" }, [h])))]),
      this.body,
    ]);
    host.append(
      el("div", { class: "row filters" }, [
        el("label", { for: "audit-room" }, ["Room"]), this.roomFilter,
        el("label", { for: "audit-action" }, ["Action"]), this.actionFilter,
      ]),
      this.status,
      this.table,
    );
    fill(this.roomFilter, [["", "Every room"], ...(room ? [[room, "This room"]] : [])]);
    this.roomFilter.value = room;
    /** @type {ReturnType<typeof auditRow>[]} */
    this.rows = [];
    for (const select of [this.roomFilter, this.actionFilter]) select.addEventListener("change", () => this.draw());
  }

  /** Read the newest entries (room names from the rooms list) and draw them. */
  async refresh() {
    const [page, rooms] = await Promise.all([call("GET", `/audit?limit=${SHOWN}`), call("GET", "/queues")]);
    if (page.status !== 200) return;
    /** @type {Record<string, string>} */
    const names = {};
    for (const r of rooms.status === 200 ? rooms.body.queues : []) names[r.id] = r.name;
    this.rows = page.body.events.map((/** @type {any} */ e) => auditRow(e, { names, me: this.me }));
    /** @type {Map<string, string>} */
    const roomsSeen = new Map();
    for (const r of this.rows) if (r.roomId && !roomsSeen.has(r.roomId)) roomsSeen.set(r.roomId, r.room);
    if (this.roomFilter.value && !roomsSeen.has(this.roomFilter.value)) {
      roomsSeen.set(this.roomFilter.value, names[this.roomFilter.value] || "This room");
    }
    fill(this.roomFilter, [["", "Every room"], ...[...roomsSeen].sort((a, b) => a[1].localeCompare(b[1]))]);
    const actions = [...new Set(this.rows.map((r) => r.what))].sort();
    fill(this.actionFilter, [["", "Every action"], ...actions.map((a) => /** @type {[string, string]} */ ([a, a]))]);
    this.draw();
  }

  draw() {
    const room = this.roomFilter.value;
    const action = this.actionFilter.value;
    // a room's filter keeps what concerns every room (a revocation) beside the room's own
    const shown = this.rows.filter((r) => (!room || r.roomId === room || !r.roomId) && (!action || r.what === action));
    const cell = (/** @type {string} */ label, /** @type {(Node|string)[]} */ content) => el("td", { "data-label": label }, content);
    this.body.replaceChildren(...shown.map((r) =>
      el("tr", { "data-entry": r.id }, [
        cell("When", [r.when]),
        cell("Who", [r.who]),
        cell("Room", [r.room]),
        cell("What", [r.what]),
        cell("Change", r.changes.length ? [el("ul", {}, r.changes.map((c) => el("li", {}, [c])))] : ["–"]),
      ])));
    this.table.hidden = shown.length === 0;
    this.status.textContent = this.rows.length === 0 ? "Nothing recorded yet."
      : shown.length === 0 ? "Nothing recorded matches these filters."
        : `${shown.length} of the latest ${this.rows.length} entries.`;
  }
}
