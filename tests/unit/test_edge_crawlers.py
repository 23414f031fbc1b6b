"""The edge lets verified search crawlers through (``crawlers=``; docs/edge.md), verified by
reverse then forward DNS against a real DNS server the tests start (dnsmasq,
tests/dns_server.py): WSGI, Flask's extension and ASGI read the same facts."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import Client

from anteroom.edge import AnteroomASGIMiddleware, AnteroomEdge, AnteroomMiddleware
from dns_server import (
    BINGBOT,
    BINGBOT_UA,
    GOOGLEBOT,
    GOOGLEBOT_UA,
    NO_PTR,
    SPOOFED,
    DnsServer,
    silent_udp_port,
)
from helpers import TEST_KEYS, in_own_loop

OPTIONS: dict[str, Any] = {
    "keys": TEST_KEYS,
    "base_url": "http://127.0.0.1:9",  # nothing listens: a crawler let through never needs it
    "public_key": "pk_test",
    "routes": {"/checkout": "drop"},
}
NAV = {"Accept": "text/html,application/xhtml+xml"}


def site(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"the shop"]


def get(middleware: AnteroomMiddleware, address: str, user_agent: str) -> Any:
    return Client(middleware).get(
        "/checkout",
        headers=NAV | {"User-Agent": user_agent},
        environ_base={"REMOTE_ADDR": address},
    )


def test_a_verified_crawler_passes_with_no_admission(dns_server: DnsServer) -> None:
    edge = AnteroomMiddleware(site, **OPTIONS, crawlers="pass", dns_resolver=dns_server.resolver)
    answer = get(edge, GOOGLEBOT, GOOGLEBOT_UA)
    assert answer.status_code == 200 and answer.get_data() == b"the shop"
    assert "Set-Cookie" not in answer.headers
    assert get(edge, BINGBOT, BINGBOT_UA).status_code == 200


@pytest.mark.parametrize(
    ("address", "user_agent"),
    [(SPOOFED, GOOGLEBOT_UA), (NO_PTR, GOOGLEBOT_UA), (GOOGLEBOT, BINGBOT_UA)],
    ids=["spoofed-ptr", "no-ptr", "another-engine's-address"],
)
def test_a_claim_that_fails_is_refused_as_anyone_is(
    dns_server: DnsServer, address: str, user_agent: str
) -> None:
    edge = AnteroomMiddleware(site, **OPTIONS, crawlers="pass", dns_resolver=dns_server.resolver)
    answer = get(edge, address, user_agent)
    assert answer.status_code == 303
    assert answer.headers["Location"].startswith("http://127.0.0.1:9/queue/drop?")


def test_only_the_engines_named_pass_and_by_default_none(dns_server: DnsServer) -> None:
    bing_only = AnteroomMiddleware(
        site, **OPTIONS, crawlers=["bing"], dns_resolver=dns_server.resolver
    )
    assert get(bing_only, BINGBOT, BINGBOT_UA).status_code == 200
    assert get(bing_only, GOOGLEBOT, GOOGLEBOT_UA).status_code == 303
    default = AnteroomMiddleware(site, **OPTIONS)  # crawlers="queue": no DNS at all
    assert default.config.crawler_check is None
    assert get(default, GOOGLEBOT, GOOGLEBOT_UA).status_code == 303


def test_a_resolver_that_never_answers_refuses_promptly() -> None:
    with silent_udp_port() as silent:
        edge = AnteroomMiddleware(
            site, **OPTIONS, crawlers="pass", dns_resolver=silent, dns_timeout=0.3
        )
        started = time.monotonic()
        assert get(edge, GOOGLEBOT, GOOGLEBOT_UA).status_code == 303
        assert time.monotonic() - started < 1.0


def test_the_flask_extension_reads_the_crawler_options(dns_server: DnsServer) -> None:
    app = Flask("shop")
    app.config |= {f"ANTEROOM_EDGE_{k.upper()}": v for k, v in OPTIONS.items()} | {
        "ANTEROOM_EDGE_CRAWLERS": "pass",
        "ANTEROOM_EDGE_DNS_RESOLVER": dns_server.resolver,
    }
    app.get("/checkout")(lambda: "checkout")
    AnteroomEdge(app)
    client = app.test_client()
    ok = client.get("/checkout", headers=NAV | {"User-Agent": GOOGLEBOT_UA},
                    environ_base={"REMOTE_ADDR": GOOGLEBOT})  # fmt: skip
    assert ok.get_data() == b"checkout"


def test_the_asgi_middleware_verifies_off_the_event_loop(dns_server: DnsServer) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"the shop"})

    edge = AnteroomASGIMiddleware(app, **OPTIONS, crawlers="pass", dns_resolver=dns_server.resolver)

    def status(address: str, user_agent: str) -> int:
        sent: list[dict[str, Any]] = []
        scope = {
            "type": "http", "method": "GET", "path": "/checkout", "raw_path": b"/checkout",
            "query_string": b"", "scheme": "http", "server": ("shop.example", 80),
            "client": (address, 50_000),
            "headers": [(b"user-agent", user_agent.encode()), (b"accept", b"text/html")],
        }  # fmt: skip

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        in_own_loop(edge(scope, receive, send))
        return int(sent[0]["status"])

    assert status(GOOGLEBOT, GOOGLEBOT_UA) == 200
    assert status(SPOOFED, GOOGLEBOT_UA) == 303


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"crawlers": "yes"}, "crawlers"),
        ({"crawlers": ["google", "altavista"]}, "altavista"),
        ({"crawlers": "pass", "dns_resolver": "dns.example"}, "dns_resolver"),
        ({"crawlers": "pass", "dns_timeout": 0}, "dns_timeout"),
    ],
)
def test_bad_crawler_options_are_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AnteroomMiddleware(site, **(OPTIONS | change))


NODE_CHECK = """
import http from "node:http";
import { anteroomMiddleware } from "./frontend/node/index.js";
const [resolver, timeout, ...asks] = process.argv.slice(1);
const edge = anteroomMiddleware({
  keys: "k1:" + Buffer.alloc(32).toString("base64"), baseUrl: "http://127.0.0.1:9",
  publicKey: "pk_test", routes: { "/checkout": "drop" }, crawlers: "pass",
  dnsResolver: resolver, dnsTimeout: Number(timeout),
  clientIp: (req) => req.headers["x-test-peer"],
});
const server = http.createServer((req, res) => edge(req, res, () => res.end("the shop")));
server.listen(0, "127.0.0.1", async () => {
  const out = [];
  for (const ask of asks) {
    const [address, userAgent] = JSON.parse(ask);
    const started = performance.now();
    const answer = await fetch(`http://127.0.0.1:${server.address().port}/checkout`, {
      headers: { "x-test-peer": address, "user-agent": userAgent, accept: "text/html" },
      redirect: "manual",
    });
    out.push([answer.status, performance.now() - started]);
  }
  console.log(JSON.stringify(out));
  server.close();
});
"""


def node_statuses(resolver: str, timeout: float, *asks: tuple[str, str]) -> list[list[float]]:
    """[status, ms] of each (address, User-Agent) through the Node middleware in a node:http
    server, its crawler check asking ``resolver`` with Node's own DNS client."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    node = shutil.which("node")
    assert node, "node is needed (make test installs it)"
    done = subprocess.run(
        [node, "--input-type=module", "-e", NODE_CHECK, resolver, str(timeout),
         *(json.dumps(a) for a in asks)],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_node_middleware_verifies_crawlers_against_the_same_dns(
    dns_server: DnsServer,
) -> None:
    answers = node_statuses(
        dns_server.resolver, 1.0,
        (GOOGLEBOT, GOOGLEBOT_UA), (BINGBOT, BINGBOT_UA), (SPOOFED, GOOGLEBOT_UA),
        (NO_PTR, GOOGLEBOT_UA), (GOOGLEBOT, BINGBOT_UA), (f"::ffff:{GOOGLEBOT}", GOOGLEBOT_UA),
    )  # fmt: skip
    # Node's fetch says Sec-Fetch-Mode: cors, so a refusal is the API's 429, not a redirect.
    assert [int(status) for status, _ in answers] == [200, 200, 429, 429, 429, 200]


def test_the_node_middleware_refuses_promptly_when_the_resolver_never_answers() -> None:
    with silent_udp_port() as silent:
        [(status, ms)] = node_statuses(silent, 0.3, (GOOGLEBOT, GOOGLEBOT_UA))
    assert status == 429 and ms < 1000
