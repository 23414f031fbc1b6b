import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { receiptDownload } from "../../frontend/view.js";

const b64url = (text) => Buffer.from(text).toString("base64url");
const receiptOf = (claims) => `rc1.k1.${b64url(JSON.stringify(claims))}.${b64url("s".repeat(64))}`;

describe("the hosted page's proof of your place", () => {
  test("a receipt becomes a text file named after the room and the drawn rank", () => {
    const receipt = receiptOf({ room: "drop", opening: 1, entrant: "ab", rank: 37, proof: [] });
    const download = receiptDownload(receipt, "drop");
    assert.equal(download.filename, "receipt-drop-37.txt");
    assert.ok(download.href.startsWith("data:text/plain;charset=utf-8,"));
    // The file holds the receipt exactly, as `anteroom verify-draw --receipt` reads it.
    const text = decodeURIComponent(download.href.slice(download.href.indexOf(",") + 1));
    assert.equal(text, `${receipt}\n`);
  });

  test("no receipt, or one the page cannot read, offers nothing", () => {
    for (const bad of [undefined, null, 5, "", "rc1.k1.x", "ab1.k1.e30.AA", "rc1.k1.%%%.AA", receiptOf({ rank: 0 }), receiptOf({ rank: "3" })]) {
      assert.equal(receiptDownload(bad, "drop"), null, String(bad));
    }
  });

  test("a file name keeps only the slug's own characters", () => {
    const receipt = receiptOf({ rank: 2 });
    assert.equal(receiptDownload(receipt, "../etc").filename, "receipt-etc-2.txt");
    assert.equal(receiptDownload(receipt, "").filename, "receipt-room-2.txt");
  });

  test("every catalog words the link", () => {
    const folder = new URL("../../translations/", import.meta.url);
    for (const file of readdirSync(folder).filter((name) => name.endsWith(".json"))) {
      const catalog = JSON.parse(readFileSync(new URL(file, folder), "utf8"));
      assert.equal(typeof catalog["page.receipt"], "string", file);
      assert.ok(catalog["page.receipt"].length > 0, file);
    }
  });
});
