/**
 * The fairness page's "Check this draw in your browser" (templates/fairness.html): fetches the
 * page's own fairness.json and entrant list, runs frontend/draw-check.js on them, and checks a
 * receipt pasted or picked as a file. The page reads whole without it: the section stays hidden.
 */
import { checkDraw, checkReceipt, readReceipt } from "./draw-check.js";
import { createTranslator, readCatalog } from "./i18n.js";

/** @typedef {import("./draw-check.js").Verdict} Verdict */

/**
 * The document and its list, fetched once; a failure to fetch or parse is an "unreadable" verdict.
 * @param {string} jsonUrl
 * @returns {Promise<{document: any, entrants: any} | Verdict>}
 */
async function fetchDraw(jsonUrl) {
  try {
    const base = new URL(jsonUrl, window.location.href);
    const answer = await fetch(base, { credentials: "omit" });
    if (!answer.ok) throw new Error(`${base.pathname}: HTTP ${answer.status}`);
    const document = await answer.json();
    if (typeof document?.entrantsUrl !== "string") {
      return { ok: false, failure: "seed-not-revealed", detail: "seed-not-revealed: no entrant list yet" };
    }
    const listed = await fetch(new URL(document.entrantsUrl, base), { credentials: "omit" });
    if (!listed.ok) throw new Error(`entrant list: HTTP ${listed.status}`);
    return { document, entrants: await listed.json() };
  } catch (error) {
    return { ok: false, failure: "unreadable", detail: `unreadable: ${/** @type {Error} */ (error).message}` };
  }
}

function start() {
  const section = document.getElementById("draw-check");
  if (!section || !globalThis.crypto?.subtle) return;
  const t = createTranslator(readCatalog(document) ?? {}, document.documentElement.lang || "en");
  const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const drawVerdict = $("draw-verdict");
  const receiptVerdict = $("receipt-verdict");
  /** @type {Promise<{document: any, entrants: any} | Verdict> | null} */
  let fetched = null;

  /** @param {HTMLElement} where @param {string} text @param {Verdict | null} verdict */
  const show = (where, text, verdict) => {
    where.dataset.verdict = verdict ? (verdict.ok ? "ok" : verdict.failure) : "";
    where.replaceChildren(text);
    if (verdict && !verdict.ok) {
      const detail = document.createElement("code");
      detail.dir = "ltr";
      detail.textContent = verdict.detail;
      where.append(" ", detail);
    }
  };

  /** The draw's verdict (and its document and list when it passed). */
  const drawChecked = async () => {
    fetched ??= fetchDraw(section.dataset.jsonUrl ?? "");
    const got = await fetched;
    if ("ok" in got) {
      fetched = null; // a fetch that failed is tried again on the next click
      return { verdict: got };
    }
    return { ...got, verdict: await checkDraw(got.document, got.entrants) };
  };

  $("check-draw").addEventListener("click", async () => {
    show(drawVerdict, t.text("fairness.checking"), null);
    const { verdict, document: doc } = await drawChecked();
    const text = verdict.ok
      ? t.text("fairness.drawPassed", { count: doc.entrants })
      : t.text("fairness.checkFailed", { failure: verdict.failure });
    show(drawVerdict, text, verdict);
  });

  const file = /** @type {HTMLInputElement} */ ($("receipt-file"));
  const pasted = /** @type {HTMLTextAreaElement} */ ($("receipt-text"));
  file.addEventListener("change", async () => {
    const picked = file.files?.[0];
    if (picked) pasted.value = (await picked.text()).slice(0, 64 * 1024).trim();
  });
  $("check-receipt").addEventListener("click", async () => {
    show(receiptVerdict, t.text("fairness.checking"), null);
    const drawn = await drawChecked();
    let verdict = drawn.verdict;
    if (verdict.ok) verdict = await checkReceipt(drawn.document, drawn.entrants, pasted.value);
    if (!verdict.ok) {
      show(receiptVerdict, t.text("fairness.checkFailed", { failure: verdict.failure }), verdict);
      return;
    }
    const { rank } = readReceipt(pasted.value.trim());
    let text = t.text("fairness.receiptPassed", { rank, count: drawn.entrants.length });
    if (verdict.signature === "unsupported") text += ` ${t.text("fairness.signatureUnsupported")}`;
    if (verdict.signature === "unchecked") text += ` ${t.text("fairness.signatureUnlisted")}`;
    show(receiptVerdict, text, verdict);
  });
  section.hidden = false;
}

start();
