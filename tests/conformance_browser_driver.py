"""The conformance kit's driver for the browser agent: the agent in Debian's Chromium.

``python tests/conformance_browser_driver.py`` (the kit runs it once per case, with its
environment: docs/conformance.md) opens the kit's blank page in Chromium (Playwright, never a
downloaded browser), loads the agent from the server (``/static/anteroom.js``) and does in the
page what a site's script does: ``fetch`` the protected resource; on ``429 QueueRequired``,
``anteroom.enterQueue`` the room the refusal names; once admitted, ``fetch`` the resource again,
once, with the admission in ``Anteroom-Admission``. Each state change is printed as a JSON line;
the exit code is the contract's (0: the resource answered 200, 2: the room closed or refused us,
1: anything else).

With ``CONFORMANCE_CDP`` set (a running Chromium's DevTools WebSocket URL) it opens a fresh
browser context in that Chromium instead of starting one: the kit's tests start one for all
the cases, which saves a browser start per case.

The browser says what a visitor's would (a desktop user agent, no ``navigator.webdriver``): the
signal rules rightly refuse a headless one.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from playwright.sync_api import sync_playwright

from helpers import CHROMIUM, CHROMIUM_ARGS

USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0.0.0 Safari/537.36"
)
FINAL = ["RoomClosed", "QueueDenied", "SessionRevoked", "RoomNotFound"]
# What a site's script does; `say` prints a state line (exposed by the driver).
QUEUE_THROUGH = """
async ({resource, apiKey, final}) => {
  const json = {Accept: "application/json"};
  let answer = await fetch(resource, {headers: json});
  if (answer.status !== 429) return {exit: answer.status === 200 ? 0 : 1};
  const refusal = await answer.json().catch(() => ({}));
  if (refusal.error !== "QueueRequired") return {exit: 1};
  const baseUrl = String(refusal.api).replace(/\\/api\\/v1$/, "");
  let entered;
  try {
    entered = await anteroom.enterQueue(refusal.room, {apiKey, baseUrl, estimates: false,
      onUpdate: (a) => {
        const waiting = a.status === "waiting" || a.status === "held";
        if (waiting) say({state: "waiting", position: a.position});
        else if (a.status === "error") say({state: "error", code: a.error});
      }});
  } catch (error) {
    const closed = final.includes(error.code) || error.status === 403;
    say(closed ? {state: "closed", code: error.code} : {state: "error", code: String(error.code)});
    return {exit: closed ? 2 : 1};
  }
  if (entered.status !== "admitted") {
    say({state: "closed"});
    return {exit: 2};
  }
  say({state: "admitted"});
  answer = await fetch(resource, {headers: {...json, "Anteroom-Admission": entered.token}});
  say(answer.status === 200 ? {state: "done"} : {state: "error", code: "HTTP" + answer.status});
  return {exit: answer.status === 200 ? 0 : 1};
}
"""


def say(state: Any) -> None:
    print(json.dumps(state), flush=True)


def main() -> int:
    base = os.environ["ANTEROOM_URL"]
    shared = os.environ.get("CONFORMANCE_CDP")
    with sync_playwright() as playwright:
        if shared:
            browser = playwright.chromium.connect_over_cdp(shared)
        else:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
        context = browser.new_context(user_agent=USER_AGENT, locale="en-GB")
        try:
            page = context.new_page()
            page.expose_function("say", say)
            page.goto(f"{base}/kit/page")
            page.add_script_tag(url=f"{base}/static/anteroom.js")
            arguments = {"resource": os.environ["ANTEROOM_RESOURCE"],
                         "apiKey": os.environ["ANTEROOM_ROOM"], "final": FINAL}  # fmt: skip
            result = page.evaluate(QUEUE_THROUGH, arguments)
        finally:
            context.close()  # a shared browser stays up for the next case
            if not shared:
                browser.close()
    return int(result["exit"])


if __name__ == "__main__":
    sys.exit(main())
