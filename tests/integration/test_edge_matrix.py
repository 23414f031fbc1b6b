"""The framework matrix: no protected view answers without an admission, wherever the shop lives.

The same shop (matrix_apps.py) under Flask, Django, Bottle and Falcon, each under gunicorn sync,
gunicorn gthread and wsgiref, and under FastAPI on uvicorn, each served once per session in a
child process. Requests go over raw sockets, spelled exactly as listed (no client tidies them),
in classes of request that routers read in ways an edge could miss, and every request the shared
case table (tests/fixtures/edge_cases.json) refuses: the bodies of the protected views say
``PROTECTED``, and none may be seen without an admission. The legitimate paths still
reach their views with an admission and are queued without one.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from matrix_apps import ASGI_FRAMEWORKS, WSGI_FRAMEWORKS

from anteroom.sdk import tokens
from fixtures import make_edge_fixtures
from helpers import TEST_KEYS, free_port
from live_server import ServerProcess

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
COMBOS = [
    (server, framework)
    for framework in WSGI_FRAMEWORKS
    for server in ("sync", "gthread", "wsgiref")
] + [("uvicorn", framework) for framework in ASGI_FRAMEWORKS]
PREFLIGHT = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}

Request = tuple[str, bytes, dict[str, str]]  # method, target as sent, headers


def get(*targets: str | bytes, **headers: str) -> list[Request]:
    return [
        ("GET", t if isinstance(t, bytes) else t.encode("latin-1"), dict(headers)) for t in targets
    ]


# Each class of request that could reach a protected view past an edge that read it otherwise.
CLASSES: dict[str, list[Request]] = {
    "spellings": get(
        "//checkout", "///checkout/", "/./checkout", "/x/../checkout", "/%2Fcheckout",
        "/checkout%2F..", "/checkout/..", "/%2e%2e/checkout", "/api%2Fcart/1", "/checkout%00",
        "/CHECKOUT", "/checkOUT/", "/api/cart//1", "//api/cart/1", "/check%6Fut",
    ),
    "absolute-form": get("http://shop.example/checkout", "http://shop.example//api/cart/1"),
    "invalid-utf8": get(
        "/check%FFout", "/checkout%FF", "/checkout%FF/", "/%FFcheckout", "/check%C3out",
        "/api/cart%FF/1", "/api%80/cart/1", "/ap%E9i/cart/1", b"/check\xffout",
        "/check%ED%A0%80out",
    ),
    "no-leading-slash": [
        *get("checkout", "checkout/", "api/cart/1"),
        *get("/checkout", "/checkout/", "/api/cart/1", "//checkout", SCRIPT_NAME="/"),
    ],
    "script-name": [
        *get("/x/checkout", "/x/checkout/", SCRIPT_NAME="/x"),
        *get("/api/cart/1", SCRIPT_NAME="/api"),
        *get("/checkout", SCRIPT_NAME="/checkout"),
    ],
    "preflight": [
        ("OPTIONS", t.encode(), PREFLIGHT) for t in ("/checkout", "/checkout/", "/api/cart/1")
    ],
    "unicode-case": get(
        "/chec%E2%84%AAout/", "/CHEC%E2%84%AAOUT/", "/chec%E2%84%AAout", "/CHECKOUT%E2%84%AA/"
    ),
    "language-prefix": get("/fr/checkout/", "/fr//checkout/", "/fr/./checkout/"),
}  # fmt: skip


def table_requests() -> list[Request]:
    """The shared case table's refused requests on the table's own routes (the shop's are a
    subset: /checkout and /api/cart): sent to every shop, none may reach a view."""
    table = json.loads(make_edge_fixtures.PATH.read_text(encoding="utf-8"))
    found = []
    for case in table["cases"]:
        request, expect = case["steps"][0]["request"], case["steps"][0]["expect"]
        if "config" in case or request.get("scriptName") or expect["kind"] != "respond":
            continue
        headers = {k: v for k, v in request.get("headers", {}).items() if k != "Cookie"}
        found.append((request.get("method", "GET"), request["target"].encode("latin-1"), headers))
    return found


CLASSES["case-table"] = table_requests()


def admission() -> str:
    now = int(time.time())
    claims = {"q": "drop", "qr": "q1", "qj": "s1", "vid": "v1", "env": "web", "jti": "j1"}
    keyring = tokens.Keyring.parse(TEST_KEYS)
    return tokens.sign(keyring, tokens.ADMISSION, claims | {"iat": now, "exp": now + 300})


def send(port: int, method: str, target: bytes, headers: dict[str, str]) -> tuple[int, str]:
    """One request exactly as spelled, on its own connection: (status, body)."""
    head = b"%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n" % (
        method.encode(),
        target,
        port,
    )
    head += b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items())
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + b"\r\n")
        response = http.client.HTTPResponse(sock, method=method)
        try:
            response.begin()
        except (http.client.HTTPException, ConnectionError):
            return 0, ""  # the server refused to parse it: nothing reached a view
        return response.status, response.read().decode("utf-8", "replace")


@pytest.fixture(scope="module", params=COMBOS, ids=[f"{f}-{s}" for s, f in COMBOS])
def shop(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The shop of one framework under one server, for every test of the module: its port."""
    server, framework = request.param
    port = free_port()
    tests = HERE.parent
    path = os.pathsep.join([str(HERE), str(tests), str(tests.parent / "backend")])
    command = [sys.executable, str(HERE / "matrix_apps.py"), server, framework, str(port)]
    log = tmp_path_factory.mktemp(f"{framework}-{server}") / "server.log"
    env = os.environ | {"PYTHONPATH": path}
    with ServerProcess(command, port, log, env=env, cwd=HERE, name=f"{framework}-{server}"):
        yield port


@pytest.mark.parametrize("name", list(CLASSES))
def test_no_protected_view_answers_without_an_admission(shop: int, name: str) -> None:
    reached = []
    for method, target, headers in CLASSES[name]:
        status, body = send(shop, method, target, headers | {"Accept": "application/json"})
        if "PROTECTED" in body:
            reached.append((target, headers, status, body))
    assert reached == []


def test_legitimate_paths_pass_with_an_admission_and_are_queued_without(shop: int) -> None:
    cookie = {"Cookie": f"_abq={admission()}"}
    expected = {
        b"/checkout": "PROTECTED checkout",
        b"/checkout/": "PROTECTED checkout",
        b"/api/cart/1": "PROTECTED cart 1",
        b"/api/cart/%C3%A9": "PROTECTED cart é",
    }
    for target, body in expected.items():
        assert send(shop, "GET", target, cookie) == (200, body), target
        status, refusal = send(shop, "GET", target, {"Accept": "application/json"})
        assert status == 429 and "QueueRequired" in refusal, (target, status, refusal)
    assert send(shop, "GET", b"/products", {}) == (200, "products")
