// The hosted waiting page's script (built to static/hosted.js). No inline code is needed: the
// page's CSP allows only this file and blob: workers.
import { startHostedPage } from "./hosted-page.js";

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", () => startHostedPage(), { once: true });
} else {
  startHostedPage();
}
