"""Signed agents benchmark: what checking one Web Bot Auth request costs, in this process.

Side by side in one run, for one request signed as the tests' agent signs it (RFC 9421,
Ed25519, its key directory already fetched and kept): the whole check of the site SDK
(``AgentVerifier.verify``: the headers parsed, the signature base built, the nonce booked, the
Ed25519 signature verified with the SDK's own standard-library arithmetic); the parts before the
signature alone; and the same Ed25519 verification by ``cryptography`` (OpenSSL), which the
service has and the standard-library SDK may not import; and, for the record, the SDK's first
Ed25519 (double-and-add with the general addition for both products, kept here as
``plain_verify``) against the one it has now (a table of the base point's multiples and a
4-bit window with dedicated doubling). Figures are the best of ``--repeat``
timings, per request in microseconds, and requests a second on one core.

The Node edge's whole check (``frontend/node/signed-agents.js``: the same rules, Node's own
``crypto.verify``) is timed in the same run, over as many requests signed here, each with its
own nonce (``node_whole_check_us``).

Run: ``python bench/signed_agents.py [--repeat 5]``. Writes ``bench/results/signed_agents.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/http.py would stand for the standard library's http (urllib imports it): off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # noqa: E402

from anteroom.sdk import ed25519  # noqa: E402
from anteroom.sdk.message_signatures import (  # noqa: E402
    SignedRequest,
    signature_base,
    signatures_of,
)
from anteroom.sdk.signed_agents import AgentVerifier, Directories, Nonces  # noqa: E402
from signed_agent import Agent  # noqa: E402

NOW = 1_800_000_000
DIRECTORY = "https://agent.example/.well-known/http-message-signatures-directory"


def plain_multiply(scalar: int, point: ed25519.Point) -> ed25519.Point:
    """The SDK's first scalar product: one general addition per bit, and one per set bit."""
    result = ed25519._IDENTITY
    while scalar > 0:
        if scalar & 1:
            result = ed25519._add(result, point)
        point = ed25519._add(point, point)
        scalar >>= 1
    return result


def plain_verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """The SDK's first verify, the same checks with ``plain_multiply`` for both products."""
    point_a, point_r = ed25519._decode(public), ed25519._decode(signature[:32])
    assert point_a is not None and point_r is not None
    s = int.from_bytes(signature[32:], "little")
    k = ed25519._hash_int(signature[:32], public, message) % ed25519._L
    return same(plain_multiply(s, ed25519._BASE), ed25519._add(point_r, plain_multiply(k, point_a)))


def same(p: ed25519.Point, q: ed25519.Point) -> bool:
    """The first verify's comparison of two points, without inverting."""
    prime = ed25519._P
    return (p[0] * q[2] - q[0] * p[2]) % prime == 0 and (p[1] * q[2] - q[1] * p[2]) % prime == 0


NODE_TIMING = """
import { readFileSync } from "node:fs";
import { AgentVerifier, Directories, Nonces } from "./frontend/node/signed-agents.js";
const [path, repeat] = process.argv.slice(1);
const { now, body, requests } = JSON.parse(readFileSync(path, "utf8"));
const fetch = async () => ({ status: 200, cacheControl: "max-age=86400", body });
const directories = new Directories(fetch, () => now);
let best = Infinity;
for (let r = 0; r < Number(repeat); r++) {
  const verifier = new AgentVerifier(directories, new Nonces(), () => now);
  await verifier.verify(requests[0]); // the directory fetched and kept, as in a running edge
  const started = performance.now();
  for (const request of requests.slice(1)) await verifier.verify(request);
  best = Math.min(best, ((performance.now() - started) * 1000) / (requests.length - 1));
}
console.log(JSON.stringify({ us: best }));
"""


def node_whole_check_us(agent: Agent, body: bytes, repeat: int, number: int) -> float | None:
    """The Node edge's whole check per request (µs), or None without node."""
    node = shutil.which("node")
    if node is None:
        return None
    requests = []
    for i in range(number + 1):
        headers = agent.sign("GET", "shop.example", "/drop", NOW, nonce=f"bench-{i}")
        requests.append({"method": "GET", "scheme": "https", "authority": "shop.example",
                         "path": "/drop", "query": "", "headers": headers})  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".json") as out:
        json.dump({"now": NOW, "body": body.decode(), "requests": requests}, out)
        out.flush()
        done = subprocess.run(
            [node, "--input-type=module", "-e", NODE_TIMING, out.name, str(repeat)],
            cwd=ROOT, capture_output=True, text=True, check=True,
        )  # fmt: skip
    return float(json.loads(done.stdout)["us"])


def per_call_us(fn: Callable[[], object], repeat: int, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=50)
    args = parser.parse_args()

    agent = Agent("https://agent.example")
    body = agent.directory_body()
    directories = Directories(lambda url: (200, "max-age=86400", body), lambda: NOW)
    headers = agent.sign("GET", "shop.example", "/drop", NOW)

    def request() -> SignedRequest:
        return SignedRequest("GET", "https", "shop.example", "/drop", "", headers)

    def whole() -> None:
        # A fresh nonce book each time: the same signature again would be a replay.
        AgentVerifier(directories, Nonces(), lambda: NOW).verify(request())

    [signed] = signatures_of(request())
    public = ed25519.public_key(agent.secret)
    base = signature_base(request(), signed.covered)
    openssl_key = Ed25519PublicKey.from_public_bytes(public)

    def parts() -> None:
        [s] = signatures_of(request())
        signature_base(request(), s.covered)

    assert plain_verify(public, base, signed.signature)
    assert ed25519.verify(public, base, signed.signature)  # and the base table is built
    figures = {
        "sdk_whole_check_us": per_call_us(whole, args.repeat, args.number),
        "parse_and_base_us": per_call_us(parts, args.repeat, args.number * 10),
        "sdk_ed25519_verify_us": per_call_us(
            lambda: ed25519.verify(public, base, signed.signature), args.repeat, args.number
        ),
        "sdk_ed25519_verify_new_key_us": per_call_us(
            lambda: (ed25519._keys.clear(), ed25519.verify(public, base, signed.signature)),
            args.repeat,
            args.number,
        ),
        "plain_ed25519_verify_us": per_call_us(
            lambda: plain_verify(public, base, signed.signature), args.repeat, args.number
        ),
        "openssl_ed25519_verify_us": per_call_us(
            lambda: openssl_key.verify(signed.signature, base), args.repeat, args.number * 10
        ),
    }
    node = node_whole_check_us(agent, body, args.repeat, args.number * 4)
    if node is not None:
        figures["node_whole_check_us"] = node
    figures = {k: round(v, 1) for k, v in figures.items()}
    figures["sdk_checks_per_sec"] = round(1e6 / figures["sdk_whole_check_us"])
    figures["sdk_vs_openssl_verify"] = round(
        figures["sdk_ed25519_verify_us"] / figures["openssl_ed25519_verify_us"], 1
    )
    figures["plain_vs_sdk_verify"] = round(
        figures["plain_ed25519_verify_us"] / figures["sdk_ed25519_verify_us"], 2
    )
    figures["plain_vs_sdk_verify_new_key"] = round(
        figures["plain_ed25519_verify_us"] / figures["sdk_ed25519_verify_new_key_us"], 2
    )
    started = timeit.default_timer()
    ed25519._comb(ed25519._BASE)
    figures["comb_build_ms"] = round((timeit.default_timer() - started) * 1e3, 1)
    print(json.dumps(figures, indent=2))
    out = ROOT / "bench" / "results" / "signed_agents.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
