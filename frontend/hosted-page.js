import { createApi } from "./api.js";
import {
  HOLD_MAX_MS,
  REFRESH_AHEAD_MS,
  admissionExpiry,
  callState,
  createCallback,
  waitsForVisibility,
} from "./callback.js";
import { enterQueue } from "./enter-queue.js";
import { createTranslator, readCatalog } from "./i18n.js";
import { storageKey } from "./storage.js";
import { realClock } from "./timers.js";
import {
  aheadText,
  countdownText,
  etaRange,
  etaText,
  localText,
  localTextWithLanguage,
  observedRates,
  oddsText,
  pageState,
  progressValue,
  receiptDownload,
  shouldAnnounce,
  statusText,
  withAdmission,
} from "./view.js";

// A room found idle is asked again after this (plus up to as much again of jitter), so a
// visitor who arrived before the operator opened the room gets in without reloading.
const IDLE_RECHECK_MS = 30_000;

/**
 * Runs the hosted waiting page. Its configuration is the `data-*` of `<main id="anteroom">`:
 * `data-room` (slug), `data-key` (pk_…), `data-base-url` (default "": same origin),
 * `data-room-name`, `data-redirect-url` (used when an answer carries none), `data-return-url`
 * (where to go back to, already checked by the server against the room's origin), `data-lang`
 * (the page's language; its catalog is the JSON of #anteroom-i18n). It sets `data-state` on
 * that element and fills, when present, #room-name, #position, #ahead, #estimate (shown while
 * the place is the agent's estimate between polls), #eta, #countdown,
 * #progress, #status-text, #notice (shown with its section, `.notice`, when the room has one),
 * #announce (aria-live) and #retry-at, with textContent only; #receipt (a link whose parent
 * is shown once an answer carries a draw receipt) gets the receipt as a download.
 *
 * In a background tab it calls the visitor back (callback.js): title and favicon at the front
 * ten and on admission, a notification and a sound if they asked with a click on #alert.
 *
 * @param {{document?: Document, location?: Location, sessionStorage?: Storage | null, fetch?: typeof fetch, clock?: import("./timers.js").Clock, catalog?: import("./i18n.js").Catalog, Notification?: any, AudioContext?: any}} [environment]
 *   the page's globals by default; tests pass their own
 * @returns {AbortController | null} aborting it stops the page's queue, or null without #anteroom
 */
export function startHostedPage(environment = {}) {
  const document = environment.document ?? globalThis.document;
  const location = environment.location ?? globalThis.location;
  const sessionStorage =
    environment.sessionStorage === undefined ? safeSessionStorage() : environment.sessionStorage;
  const clock = environment.clock ?? realClock;
  const root = document.getElementById("anteroom");
  if (!root) return null;
  const config = {
    room: root.dataset.room ?? "",
    apiKey: root.dataset.key ?? "",
    baseUrl: root.dataset.baseUrl ?? "",
    roomName: root.dataset.roomName ?? "",
    redirectUrl: root.dataset.redirectUrl ?? "",
    // Set by the server only after checking it lies on the room's own origin.
    returnUrl: root.dataset.returnUrl ?? "",
    // An invite link's token (`&invite=iv1.…`): the entry takes its lane.
    invite: new URLSearchParams(location?.search).get("invite"),
  };
  const byId = (/** @type {string} */ id) => document.getElementById(id);
  const tr = createTranslator(readCatalog(document) ?? environment.catalog ?? {}, root.dataset.lang || "en");
  const hidden = () => document.visibilityState === "hidden";
  const callback = createCallback({
    document,
    tr,
    roomName: () => config.roomName || answer?.roomName || "",
    Notification: environment.Notification,
    AudioContext: environment.AudioContext,
  });
  /** @type {{state: string, position: number | null, sentence: string}} */
  let shownNow = { state: "connecting", position: null, sentence: "" };
  /** @type {(() => void) | null} */
  let onVisible = null;
  document.addEventListener?.("visibilitychange", () => {
    callback.show(callState(hidden(), shownNow.state, shownNow.position), shownNow.sentence);
    onVisible?.();
  });
  const controller = new AbortController();
  const startKey = `${storageKey(config.baseUrl, config.room)}:start`;
  /** @type {any} */
  let answer = null;
  /** @type {{state: string, position: number | null} | null} */
  let announced = null;
  const lang = root.dataset.lang || "en";
  /** @type {string | null} */
  let noticeShown = null;
  /** @type {{text: string, lang: string | null} | null} */
  let noticeLocal = null;
  /** @type {{at: number, position: number}[]} positions seen while the line moved (or not) */
  let samples = [];
  let parked = false; // the visitor left an address: the spot is kept without this page
  /** @type {unknown} */
  let countdownTimer;
  /** @type {unknown} */
  let recheckTimer;
  /** @type {unknown} */
  let holdTimer;
  controller.signal.addEventListener("abort", () => {
    clock.clearTimeout(countdownTimer);
    clock.clearTimeout(recheckTimer);
    clock.clearTimeout(holdTimer);
    onVisible = null;
  });

  const setText = (/** @type {string} */ id, /** @type {string | null} */ text) => {
    const element = byId(id);
    if (!element) return;
    element.hidden = text === null;
    if (element.textContent !== (text ?? "")) element.textContent = text ?? "";
  };

  const startPosition = (/** @type {number} */ position) => {
    try {
      const stored = Number(sessionStorage?.getItem(startKey));
      if (stored >= 1) return stored;
      sessionStorage?.setItem(startKey, String(position));
    } catch {
      // No sessionStorage: progress counts from this page load.
    }
    return position;
  };

  const tickCountdown = () => {
    clock.clearTimeout(countdownTimer);
    const opensAt = answer?.opensAt;
    if (root.dataset.state !== "prequeue" || typeof opensAt !== "number") {
      setText("countdown", null);
      setText("opens-at", null);
      return;
    }
    if (controller.signal.aborted) return;
    const left = opensAt - clock.now();
    setText("countdown", countdownText(left, tr));
    // Before the opening there is no wait to estimate, and the countdown says it once.
    setText("eta", null);
    // The opening in the visitor's own time zone, beside the countdown.
    setText("opens-at", tr.text("opens.at", { time: tr.time(opensAt, clock.now()) }));
    // Ticks on the second boundaries of the time left, so the display never skips a second.
    if (left > 0) countdownTimer = clock.setTimeout(tickCountdown, left % 1000 || 1000);
    else render(answer);
  };

  /** @param {any} update */
  function render(update) {
    // A 429 RateLimited is the pace of polling, not trouble worth showing.
    if (update.status === "error" && update.error === "RateLimited") return;
    const state = pageState(update, clock.now());
    if (update.status !== "error") answer = update;
    root.dataset.state = state;
    if (update.status === "error") root.dataset.error = update.error ?? "";
    else delete root.dataset.error;

    // The server's name wins: it is the theme's title when the room has one.
    const roomName = config.roomName || answer?.roomName;
    if (roomName) setText("room-name", roomName);
    const position = typeof answer?.position === "number" ? answer.position : null;
    // In a pre-queue no place is drawn yet (it is drawn at random at the opening).
    if (state === "prequeue") setText("position", null);
    else setText("position", position === null ? "" : tr.number(position));
    // A random room's spot has no place: its odds in words instead, where the place would be.
    const odds = state === "waiting" && oddsText(answer?.odds, tr);
    setText("ahead", state === "waiting" ? odds || aheadText(position, tr) : null);
    root.dataset.draw = odds ? "1" : ""; // "1": the stylesheet hides the place, ETA and bar
    // Between polls the agent moves the place at the room's pace (estimate.js): say so.
    const estimate = Boolean(update.estimate);
    setText("estimate", estimate ? tr.text("page.estimate") : null);
    if (estimate) {
      // Neither a measure of the pace (it is the pace) nor news worth reading out.
    } else if (state === "waiting" && position !== null) {
      const now = clock.now();
      samples.push({ at: now, position });
      samples = samples.filter((sample) => now - sample.at <= 15 * 60_000);
    } else if (state !== "error") {
      samples = []; // a pause or a pre-queue is no measure of the pace
    }
    const range = state === "waiting" ? etaRange(answer?.etaSeconds, position, observedRates(samples)) : null;
    if (state !== "prequeue") setText("eta", state === "error" ? null : etaText(answer?.etaSeconds, tr, range));
    tickCountdown();

    const progress = /** @type {HTMLProgressElement | null} */ (byId("progress"));
    if (progress) {
      progress.max = 1;
      if (state === "admitted") progress.value = 1;
      else if (position !== null) progress.value = progressValue(startPosition(position), position);
      else if (state !== "error") progress.removeAttribute("value");
    }

    // A closed room says what its operator wrote ("Sold out — thank you for waiting").
    const closed = state === "idle" ? localText(answer?.closedMessage, lang) : null;
    // (a random room's draw: "You're in the draw", its odds where the place would be)
    // (parked: the e-mail will come, so the page need not stay open: it says so)
    const told = parked && state === "waiting" && position !== null ? tr.text("status.parked", { position }) : null;
    const sentence = closed ?? (odds ? tr.text("status.draw") : told ?? statusText(state, update, roomName, tr));
    setText("status-text", sentence);
    const next = { state, position, at: clock.now() };
    const spoken = [];
    if (!estimate && shouldAnnounce(announced, next)) {
      announced = next;
      spoken.push(sentence);
      if (state === "prequeue" && typeof answer?.opensAt === "number") {
        spoken.push(tr.text("opens.at", { time: tr.time(answer.opensAt, clock.now()) }));
      }
    }
    // The notice is read out once when it appears or changes, through the one polite region.
    const local = update.status === "error" ? noticeLocal : localTextWithLanguage(answer?.notice, lang);
    const notice = local?.text ?? null;
    if (notice !== noticeShown) {
      noticeShown = notice;
      noticeLocal = local;
      const element = byId("notice");
      const section = element?.parentElement;
      if (section) section.hidden = notice === null;
      setText("notice", notice ?? "");
      // Its own direction (an English notice on an Arabic page keeps its full stop at its
      // end) and, when known, its own language.
      element?.setAttribute("dir", "auto");
      if (local?.lang) element?.setAttribute("lang", local.lang);
      else element?.removeAttribute("lang");
      if (notice !== null) spoken.push(tr.text("page.noticeSpoken", { label: tr.text("page.notice"), notice }));
    }
    if (spoken.length) setText("announce", spoken.join(" "));
    shownNow = { state, position, sentence };
    callback.show(callState(hidden(), state, position), sentence);

    // The draw receipt, once an answer carries one, as a file (the link text is the catalog's).
    const proof = receiptDownload(answer?.receipt, config.room);
    const link = /** @type {HTMLAnchorElement | null} */ (byId("receipt"));
    if (link?.parentElement) {
      if (proof) {
        link.href = proof.href;
        link.download = proof.filename;
      }
      link.parentElement.hidden = proof === null;
    }

    showNotifyForm(state);

    const retryAt = byId("retry-at");
    if (retryAt) {
      const when = state === "error" && typeof update.retryAt === "number" ? new Date(update.retryAt) : null;
      setText("retry-at", when ? when.toLocaleTimeString(tr.locale) : null);
      // "Next attempt at" only with a time: a refusal that is final (QueueDenied, revoked) has none
      if (retryAt.parentElement) retryAt.parentElement.hidden = !when;
      if (when && "dateTime" in retryAt) /** @type {HTMLTimeElement} */ (retryAt).dateTime = when.toISOString();
    }
  }

  // "Tell me when it's my turn" (a room with notify on: the server renders #notify-form, its
  // texts and #notify-parked): offered while waiting; once the address is taken the spot keeps
  // its place without this page, and the page says so (it may still poll meanwhile).
  const notifyForm = /** @type {HTMLFormElement | null} */ (byId("notify-form"));
  const showNotifyForm = (/** @type {string} */ state) => {
    if (notifyForm) notifyForm.hidden = parked || state !== "waiting" || typeof answer?.queueToken !== "string";
  };
  notifyForm?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = /** @type {HTMLElement} */ (byId("notify-error"));
    const button = /** @type {HTMLButtonElement} */ (notifyForm.querySelector("button"));
    button.disabled = true;
    try {
      // The server checks the address (a 400 names it); the page only says what it answered.
      const email = /** @type {HTMLInputElement} */ (byId("notify-email")).value.trim();
      await createApi({ ...config, fetch: environment.fetch ?? globalThis.fetch.bind(globalThis), clock })
        .post("/api/v1/queue/notify", { queueToken: answer?.queueToken, email, lang }, controller.signal);
      parked = notifyForm.hidden = error.hidden = true;
      const keepOpen = byId("keep-open");
      if (keepOpen) keepOpen.hidden = true; // "Keep this page open" no longer holds
      setText("notify-parked", byId("notify-parked")?.textContent ?? "");
    } catch (failure) {
      error.hidden = false;
      error.textContent = error.dataset[/** @type {any} */ (failure)?.code === "BadRequest" ? "invalid" : "failed"] ?? "";
    }
    button.disabled = false;
  });

  const fail = (/** @type {any} */ error) => {
    if (controller.signal.aborted) return;
    if (error?.code === "RoomClosed") {
      // A room taking no new entries (mode reject) reads as a closed one, and is asked again
      // as one is: its operator may take entries again.
      render({ status: "idle", closedMessage: error.closedMessage ?? null });
      recheckTimer = clock.setTimeout(join, IDLE_RECHECK_MS * (1 + Math.random()));
      return;
    }
    render({ status: "error", error: error?.code ?? error?.name ?? "Error" });
  };

  const join = () => {
    let waiting;
    try {
      waiting = enterQueue(config.room, {
        apiKey: config.apiKey,
        baseUrl: config.baseUrl,
        onUpdate: render,
        signal: controller.signal,
        fetch: environment.fetch,
        clock,
        invite: config.invite,
      });
    } catch (error) {
      fail(error);
      return;
    }
    waiting.then((final) => {
      render(final);
      if (final.status === "idle") {
        recheckTimer = clock.setTimeout(join, IDLE_RECHECK_MS * (1 + Math.random()));
      } else if (final.status === "admitted") {
        const target = config.returnUrl || final.redirectUrl || config.redirectUrl;
        if (target && typeof final.token === "string") admit(target, final.token);
        else fail({ code: "BadResponse" });
      }
    }, fail);
  };

  /**
   * Goes to the site with the admission, at once unless the tab is hidden and the admission
   * would likely expire before the visitor sees it (callback.SEEN_WITHIN_MS): then it is held,
   * refreshed before it expires, and used as soon as the tab is visible (or after HOLD_MAX_MS).
   * @param {string} target
   * @param {string} token
   */
  const admit = (target, token) => {
    const go = () => {
      clock.clearTimeout(holdTimer);
      onVisible = null;
      if (!controller.signal.aborted) location.assign(withAdmission(target, token));
    };
    if (!waitsForVisibility(hidden(), admissionExpiry(token), clock.now())) return go();
    const heldSince = clock.now();
    const api = createApi({
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      fetch: environment.fetch ?? globalThis.fetch.bind(globalThis),
      clock,
    });
    const refresh = async () => {
      if (clock.now() - heldSince >= HOLD_MAX_MS) return go();
      try {
        const fresh = await api.post("/api/v1/admission/refresh", { token }, controller.signal);
        if (typeof fresh?.token !== "string") return go();
        token = fresh.token;
      } catch {
        return go(); // what we hold is still the visitor's best chance
      }
      if (!hidden()) return go();
      schedule();
    };
    const schedule = () => {
      const expiresAt = admissionExpiry(token) ?? clock.now();
      holdTimer = clock.setTimeout(refresh, Math.max(0, expiresAt - REFRESH_AHEAD_MS - clock.now()));
    };
    onVisible = () => {
      if (!hidden()) go();
    };
    schedule();
  };

  root.dataset.state = "connecting";
  setText("status-text", statusText("connecting", null, config.roomName, tr));
  join();
  return controller;
}

function safeSessionStorage() {
  try {
    return globalThis.sessionStorage ?? null;
  } catch {
    return null;
  }
}
