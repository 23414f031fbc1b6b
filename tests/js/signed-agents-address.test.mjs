import assert from "node:assert/strict";
import { test } from "node:test";

import { isPublicAddress } from "../../frontend/node/signed-agents.js";

test("a key directory is fetched only from a public address", () => {
  for (const address of ["8.8.8.8", "1.1.1.1", "192.0.43.10", "198.51.99.1", "2606:4700::1111", "::ffff:8.8.8.8"]) {
    assert.equal(isPublicAddress(address), true, address);
  }
  for (const address of [
    "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
    "0.0.0.0", "224.0.0.1", "255.255.255.255", "192.0.2.7", "198.51.100.7", "203.0.113.7", "198.18.0.1",
    "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "2001:db8::1", "::ffff:127.0.0.1", "not an address",
  ]) {
    assert.equal(isPublicAddress(address), false, address);
  }
});
