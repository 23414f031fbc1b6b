"""Signed agents at the edge (``agents=``; docs/edge.md, "Signed agents"): the Python WSGI and
ASGI middlewares and the Node one verify Web Bot Auth signatures against a key directory served
over real HTTPS by a test CA (tests/key_directory.py). The shared edge table holds the rules with
canned directories; here the directory is fetched for real, by each language's own client."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from anteroom.edge import AnteroomASGIMiddleware, AnteroomMiddleware
from helpers import TEST_KEYS, in_own_loop
from key_directory import WELL_KNOWN, KeyDirectory
from signed_agent import Agent

OPTIONS: dict[str, Any] = {
    "keys": TEST_KEYS,
    "base_url": "http://127.0.0.1:9",  # nothing listens: no case here needs Anteroom
    "public_key": "pk_test",
    "routes": {"/checkout": "drop"},
}
API = {"Accept": "application/json"}


@pytest.fixture
def directory(tmp_path: Path) -> Iterator[KeyDirectory]:
    served = KeyDirectory(tmp_path)
    yield served
    served.close()


@pytest.fixture
def agent(directory: KeyDirectory) -> Agent:
    signer = Agent(directory.origin)
    directory.pages[WELL_KNOWN] = (200, "max-age=300", signer.directory_body())
    return signer


def site(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"the shop"]


def signed(agent: Agent, **options: Any) -> dict[str, str]:
    now = options.pop("now", int(time.time()))
    return agent.sign("GET", "shop.example", "/checkout", now, scheme="http", **options)


def cases(agent: Agent, directory: KeyDirectory) -> list[tuple[str, dict[str, str]]]:
    """(what is expected, the signed headers): the verdicts both languages must reach."""
    good = signed(agent)
    other = "B" if good["signature"][8] == "A" else "A"  # another signature of the same length
    forged = good | {"signature": good["signature"][:8] + other + good["signature"][9:]}
    return [
        ("anyone", good),
        ("signature-refused:replayed", good),
        ("signature-refused:forged", forged),
        ("signature-refused:expired", signed(agent, now=int(time.time()) - 120, expires_in=60)),
        ("signature-refused:unknown-key", signed(Agent(directory.origin))),
        ("signature-refused:malformed", good | {"signature-input": 'sig1=("@authority"'}),
    ]


def verdict(status: int, body: dict[str, Any]) -> str:
    if status == 401:
        return f"signature-refused:{body['reason']}"
    return {403: "agent-refused", 429: "anyone", 200: "passed"}.get(status, str(status))


def test_the_wsgi_edge_verifies_agents_through_the_https_directory(
    agent: Agent, directory: KeyDirectory
) -> None:
    host = directory.origin.removeprefix("https://")
    edge = AnteroomMiddleware(
        site,
        **OPTIONS,
        agents={"*": "queue"},
        agent_ca_file=str(directory.ca_file),
        agent_private_directories=True,
    )
    got = []
    for expected, headers in cases(agent, directory):
        answer = Client(edge).get("/checkout", headers=API | headers | {"Host": "shop.example"})
        got.append((expected, verdict(answer.status_code, answer.json or {})))
    assert [g for _, g in got] == [e for e, _ in got]
    assert directory.hits == [WELL_KNOWN]  # fetched once, kept for its max-age
    refusing = AnteroomMiddleware(
        site,
        **OPTIONS,
        agents={host: "refuse"},
        agent_ca_file=str(directory.ca_file),
        agent_private_directories=True,
    )
    answer = Client(refusing).get(
        "/checkout", headers=API | signed(agent) | {"Host": "shop.example"}
    )
    assert answer.status_code == 403 and answer.json["error"] == "AgentRefused"


def test_without_the_test_ca_the_directory_verifies_nobody(
    agent: Agent, directory: KeyDirectory
) -> None:
    edge = AnteroomMiddleware(site, **OPTIONS, agents={"*": "queue"})
    answer = Client(edge).get("/checkout", headers=API | signed(agent) | {"Host": "shop.example"})
    assert answer.status_code == 401 and answer.json["reason"] == "directory"


def test_a_ca_file_that_is_not_there_is_named_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="agent_ca_file"):
        AnteroomMiddleware(
            site, **OPTIONS, agents={"*": "queue"}, agent_ca_file=str(tmp_path / "none.pem")
        )
    node = shutil.which("node")
    assert node
    script = (
        'import { anteroomMiddleware } from "./frontend/node/index.js";'
        "try { anteroomMiddleware({ keys: 'k1:' + Buffer.alloc(32).toString('base64'),"
        " baseUrl: 'http://127.0.0.1:9', publicKey: 'pk_test', routes: { '/checkout': 'd' },"
        f" agents: {{ '*': 'queue' }}, agentCaFile: {json.dumps(str(tmp_path / 'none.pem'))} }});"
        " } catch (e) { console.log(e.message); }"
    )
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], cwd=Path(__file__).resolve().parents[2],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert "`agentCaFile` is not a readable PEM file" in done.stdout, done.stderr


def test_the_asgi_edge_verifies_off_the_event_loop(agent: Agent, directory: KeyDirectory) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"the shop"})

    edge = AnteroomASGIMiddleware(
        app,
        **OPTIONS,
        agents={"*": "queue"},
        agent_ca_file=str(directory.ca_file),
        agent_private_directories=True,
    )

    def status(headers: dict[str, str]) -> int:
        sent: list[dict[str, Any]] = []
        scope = {
            "type": "http", "method": "GET", "path": "/checkout", "raw_path": b"/checkout",
            "query_string": b"", "scheme": "http", "server": ("shop.example", 80),
            "client": ("198.51.100.9", 50_000),
            "headers": [(b"host", b"shop.example"), (b"accept", b"application/json")]
            + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        }  # fmt: skip

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        in_own_loop(edge(scope, receive, send))
        return int(sent[0]["status"])

    good = signed(agent)
    assert status(good) == 429  # verified, and refused as anyone without an admission
    assert status(good) == 401  # the same nonce again


NODE_CHECK = """
import http from "node:http";
import { anteroomMiddleware } from "./frontend/node/index.js";
const [caFile, privateDirectories, routesJson, ...asks] = process.argv.slice(1);
const edge = anteroomMiddleware({
  keys: "k1:" + Buffer.alloc(32).toString("base64"), baseUrl: "http://127.0.0.1:9",
  publicKey: "pk_test", routes: { "/checkout": "drop" }, agents: JSON.parse(routesJson),
  agentCaFile: caFile, agentPrivateDirectories: privateDirectories === "1",
});
const server = http.createServer((req, res) => edge(req, res, () => res.end("the shop")));
server.listen(0, "127.0.0.1", async () => {
  const out = [];
  for (const ask of asks) {
    const headers = JSON.parse(ask);
    const answer = await new Promise((resolve) => {
      http.get({ host: "127.0.0.1", port: server.address().port, path: "/checkout",
                 headers: { ...headers, host: "shop.example", accept: "application/json" } },
        (res) => { let body = ""; res.on("data", (c) => (body += c));
                   res.on("end", () => resolve([res.statusCode, body])); });
    });
    out.push([answer[0], answer[1] ? JSON.parse(answer[1]) : {}]);
  }
  console.log(JSON.stringify(out));
  server.close();
});
"""


def test_the_node_edge_verifies_agents_through_the_same_https_directory(
    agent: Agent, directory: KeyDirectory
) -> None:
    node = shutil.which("node")
    assert node, "node is needed (make test installs it)"
    asked = cases(agent, directory)
    got = node_verdicts(directory, True, {"*": "queue"}, [headers for _, headers in asked])
    assert got == [expected for expected, _ in asked]
    assert directory.hits == [WELL_KNOWN]


def node_verdicts(
    directory: KeyDirectory, private: bool, agents: dict[str, str], asks: list[dict[str, str]]
) -> list[str]:
    """The Node edge's verdicts on ``asks`` (signed headers), its key directories fetched over
    real HTTPS trusting the test CA (on a private address: allowed only when ``private``)."""
    node = shutil.which("node")
    assert node, "node is needed (make test installs it)"
    done = subprocess.run(
        [node, "--input-type=module", "-e", NODE_CHECK, str(directory.ca_file),
         "1" if private else "0", json.dumps(agents), *(json.dumps(h) for h in asks)],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [verdict(status, body) for status, body in json.loads(done.stdout)]


def test_no_edge_fetches_a_directory_on_a_private_address_or_one_the_room_does_not_name(
    agent: Agent, directory: KeyDirectory
) -> None:
    """Anyone names a key directory in Signature-Agent: neither edge may be made to fetch into
    the site's own network (the test's directory is on 127.0.0.1), nor a directory the
    setting does not name (its request is anyone's, nothing fetched)."""
    host = directory.origin.removeprefix("https://")
    good = signed(agent)
    assert node_verdicts(directory, False, {"*": "queue"}, [good]) == [
        "signature-refused:directory"
    ]
    assert node_verdicts(directory, True, {"other.example": "refuse"}, [good]) == ["anyone"]
    assert directory.hits == []
    for agents in ({"*": "queue"}, {"other.example": "refuse"}):
        edge = AnteroomMiddleware(
            site, **OPTIONS, agents=agents, agent_ca_file=str(directory.ca_file),
            agent_private_directories=agents == {"other.example": "refuse"},
        )  # fmt: skip
        answer = Client(edge).get(
            "/checkout", headers=API | signed(agent) | {"Host": "shop.example"}
        )
        want = "signature-refused:directory" if "*" in agents else "anyone"
        assert verdict(answer.status_code, answer.json or {}) == want
    assert directory.hits == []
    assert host not in ("other.example",)  # the directory's own host is named by neither
