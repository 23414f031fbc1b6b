// Creating a room (the rooms list) and deleting one (its page), through the management API.
import { call } from "./api.js";
import { MODE_WORDS, bounds, el, labelled, limits, number, showProblems } from "./fields.js";

/** @param {string} name @returns {string} a slug suggested from a name ("Spring drop!" → "spring-drop") */
export function slugFrom(name) {
  return name.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
    .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
}

/**
 * The form creating a room, in `host`; once created, the browser goes to its page.
 * @param {HTMLElement} host
 */
export function mountCreateRoom(host) {
  const bound = limits();
  /** @param {string} id @param {Record<string, string>} attrs */
  const input = (id, attrs) => /** @type {HTMLInputElement} */ (el("input", { id, ...attrs }));
  const name = input("new-name", { type: "text", autocomplete: "off" });
  const slug = input("new-slug", { type: "text", autocomplete: "off", spellcheck: "false" });
  const redirect = input("new-redirect", { type: "url", placeholder: "https://shop.example/drop" });
  const rate = input("new-rate", { type: "number", inputmode: "numeric" });
  const capacity = input("new-capacity", { type: "number", inputmode: "numeric" });
  const mode = /** @type {HTMLSelectElement} */ (el("select", { id: "new-mode" },
    Object.entries(MODE_WORDS).map(([value, words]) => el("option", { value }, [words]))));
  rate.value = String(bound.ratePerMinute?.default ?? 60);
  /** @type {Record<string, HTMLElement>} */
  const inputs = { name, slug, redirectUrl: redirect, ratePerMinute: rate, capacity, mode };
  const outcome = el("p", { id: "new-outcome", role: "alert" });
  const form = el("form", { class: "stack", id: "create-room", novalidate: "" }, [
    ...labelled(name, "Name", "Shown to visitors on the waiting page.").nodes,
    ...labelled(slug, "Address (slug)", "In the waiting page's address (/queue/<slug>): 3 to 64 lower-case letters, digits or -; fixed once created.").nodes,
    ...labelled(redirect, "Where admitted visitors are sent", "The shop's address: https (plain http only to this machine).").nodes,
    ...labelled(rate, "Rate (admitted per minute)", bounds(bound.ratePerMinute, "visitors a minute")).nodes,
    ...labelled(capacity, "Capacity (most visitors active at once)", "Empty for no limit. " + bounds(bound.capacity, "visitors")).nodes,
    ...labelled(mode, "How the line is served").nodes,
    el("p", { class: "hint" }, ["The room is created closed: open it from its page. Every other setting starts at its default and can be changed there."]),
    outcome,
    el("button", { type: "submit" }, ["Create room"]),
  ]);
  // The slug follows the name until it is typed in itself.
  name.addEventListener("input", () => {
    if (!slug.dataset.typed) slug.value = slugFrom(name.value);
  });
  slug.addEventListener("input", () => { slug.dataset.typed = "1"; });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    /** @type {Record<string, any>} */
    const body = {
      name: name.value,
      slug: slug.value.trim(),
      redirectUrl: redirect.value.trim(),
      ratePerMinute: rate.value === "" ? null : Number(rate.value),
      capacity: capacity.value === "" ? null : Number(capacity.value),
      mode: mode.value,
    };
    outcome.textContent = "Creating…";
    const reply = await call("POST", "/queues", body);
    if (showProblems(inputs, reply, outcome)) {
      outcome.textContent = `Created ${reply.body.name}; opening its page.`;
      window.location.assign(`/console/rooms/${reply.body.id}`);
    }
  });
  host.replaceChildren(form);
}

/**
 * Deleting the room, in `host`: what is lost, said from the room's own figures, and its slug
 * typed to confirm; then back to the rooms list.
 * @param {import("./settings.js").Page & {id: string}} page
 * @param {HTMLElement} host
 */
export function mountDeleteRoom(page, host) {
  const lost = el("p", { id: "delete-lost" });
  const typed = /** @type {HTMLInputElement} */ (el("input", { id: "delete-slug", type: "text", autocomplete: "off", spellcheck: "false" }));
  const label = el("label", { for: "delete-slug" }, ["Type the room's address (slug) to confirm"]);
  const outcome = el("p", { id: "delete-outcome", role: "alert" });
  const button = el("button", { type: "submit", class: "danger" }, ["Delete this room"]);
  const form = el("form", { class: "stack", id: "delete-room", novalidate: "" }, [lost, label, typed, outcome, button]);
  typed.setAttribute("aria-describedby", "delete-lost delete-outcome");
  page.fillers.push(() => {
    const room = page.room;
    const stats = room.stats || {};
    label.textContent = `Type the room's address, ${room.slug}, to confirm`;
    lost.textContent =
      `Deleting ${room.name} loses everything it holds now: its line (${number(stats.waiting ?? 0)} waiting and ` +
      `${number(stats.held ?? 0)} held visitors lose their places; their next check-in says the room no longer exists), ` +
      `its ${number(stats.active ?? 0)} active admissions' slots (none can be renewed; one already given stays valid at your site until it expires, ` +
      `at most ${number(room.admissionTtlSec)} seconds), its settings, scheduled events, charts and draw. ` +
      `Newcomers are told there is no such room, and its address (${room.slug}) is free for a new room. ` +
      "The audit log keeps its entries. This cannot be undone.";
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (typed.value.trim() !== page.room.slug) {
      typed.setAttribute("aria-invalid", "true");
      outcome.textContent = `That is not this room's address: type ${page.room.slug} to delete it.`;
      typed.focus();
      return;
    }
    typed.removeAttribute("aria-invalid");
    outcome.textContent = "Deleting…";
    const reply = await call("DELETE", `/queues/${page.id}`);
    if (reply.status === 204) {
      window.location.assign("/console");
      return;
    }
    showProblems({}, reply, outcome);
  });
  host.replaceChildren(form);
}
