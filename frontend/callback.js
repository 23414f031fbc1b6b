/**
 * Calling a visitor back to a background tab: the tab's title and favicon when they reach the
 * front ten and when admitted, and, only after they asked for it with a click, a browser
 * notification and a short sound. And the rule for when the redirect waits for the tab to be seen.
 */

/** The front of the line, where a background tab starts calling its visitor back. */
export const FRONT = 10;
/**
 * An admission dealt to a hidden tab with less life left than this would likely expire before
 * its visitor comes back to it: the page holds it (refreshed) and redirects once the tab is seen.
 * One with more life is used at once, so the site's page is ready in the tab when they return.
 */
export const SEEN_WITHIN_MS = 120_000;
/** A held admission is refreshed this long before it expires, and held at most HOLD_MAX_MS. */
export const REFRESH_AHEAD_MS = 10_000;
export const HOLD_MAX_MS = 600_000;

/**
 * Expiry (epoch ms) of an admission token `ab1.<kid>.<payload>.<sig>`, read without checking
 * it (the server and the site check it; the page only times itself by it), or null.
 * @param {string} token
 * @returns {number | null}
 */
export function admissionExpiry(token) {
  const payload = String(token).split(".")[2];
  if (!payload) return null;
  try {
    const json = atob(payload.replace(/-/g, "+").replace(/_/g, "/"));
    const exp = JSON.parse(json).exp;
    return typeof exp === "number" ? exp * 1000 : null;
  } catch {
    return null;
  }
}

/**
 * Whether the redirect should wait until the tab is visible (see SEEN_WITHIN_MS).
 * @param {boolean} hidden
 * @param {number | null} expiresAt epoch ms
 * @param {number} now
 */
export function waitsForVisibility(hidden, expiresAt, now) {
  return hidden && expiresAt !== null && expiresAt - now < SEEN_WITHIN_MS;
}

/**
 * What a background tab shows: null (its own title and icon), "front" or "admitted".
 * @param {boolean} hidden
 * @param {string} state the page state
 * @param {number | null} position
 * @returns {"front" | "admitted" | null}
 */
export function callState(hidden, state, position) {
  if (!hidden) return null;
  if (state === "admitted") return "admitted";
  if (state === "waiting" && position !== null && position <= FRONT) return "front";
  return null;
}

/**
 * @param {object} options
 * @param {any} options.document
 * @param {import("./i18n.js").Translator} options.tr
 * @param {() => string} options.roomName
 * @param {any} [options.Notification] the browser's, by default
 * @param {any} [options.AudioContext] the browser's, by default
 */
export function createCallback({ document, tr, roomName, Notification, AudioContext }) {
  Notification = Notification === undefined ? globalThis.Notification : Notification;
  AudioContext = AudioContext === undefined ? (globalThis.AudioContext ?? globalThis.webkitAudioContext) : AudioContext;
  const ownTitle = document.title;
  const icon = document.getElementById("favicon");
  const ownIcon = icon?.getAttribute?.("href") ?? null;
  let wanted = false;
  /** @type {any} */
  let audio = null;
  /** @type {string | null} */
  let shown = null;
  /** @type {Set<string>} */
  const alerted = new Set();

  const button = document.getElementById("alert");
  if (button && (Notification || AudioContext)) {
    button.hidden = false;
    button.addEventListener?.("click", () => {
      // Asked only here, on the visitor's own click: never a prompt they did not ask for.
      wanted = true;
      try {
        if (AudioContext) audio = new AudioContext();
      } catch {
        audio = null;
      }
      if (Notification && Notification.permission === "default") {
        Promise.resolve(Notification.requestPermission()).catch(() => {});
      }
      button.disabled = true;
      button.textContent = tr.text("page.alertOn");
    });
  }

  const sound = () => {
    if (!audio) return;
    try {
      const tone = audio.createOscillator();
      const gain = audio.createGain();
      tone.frequency.value = 880;
      gain.gain.value = 0.15;
      tone.connect(gain).connect(audio.destination);
      tone.start();
      tone.stop(audio.currentTime + 0.35);
    } catch {
      // A muted or closed audio context: the title and the notification remain.
    }
  };

  return {
    /** @returns {boolean} whether the visitor asked to be alerted */
    get wanted() {
      return wanted;
    },
    /**
     * @param {"front" | "admitted" | null} call
     * @param {string} sentence what the page says now (the notification's body)
     */
    show(call, sentence) {
      if (call === shown) return;
      shown = call;
      const room = roomName();
      document.title = call ? tr.text(`title.${call}`, { room }) : ownTitle;
      if (icon && ownIcon) icon.setAttribute("href", call ? ownIcon.replace(/favicon\.svg$/, "favicon-turn.svg") : ownIcon);
      if (!call || !wanted || alerted.has(call)) return;
      alerted.add(call);
      sound();
      if (Notification?.permission === "granted") {
        try {
          new Notification(tr.text(`title.${call}`, { room }), { body: sentence, tag: "anteroom" });
        } catch {
          // Some browsers allow notifications from a service worker only.
        }
      }
    },
  };
}
