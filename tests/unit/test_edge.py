"""anteroom.edge around a plain WSGI app: offline checks, hand-over and refusals."""

from __future__ import annotations

import time
from typing import Any

import pytest
from werkzeug.test import Client

from anteroom import tokens
from anteroom.edge import AnteroomMiddleware
from helpers import TEST_KEYS

KEYS = tokens.Keyring.parse(TEST_KEYS)


def site(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"the shop"]


def admission(room: str = "drop", **claims: Any) -> str:
    now = int(time.time())
    base = {"q": room, "qr": "q1", "qj": "s1", "vid": "v1", "env": "web", "jti": "j1"}
    return tokens.sign(KEYS, tokens.ADMISSION, base | {"iat": now, "exp": now + 300} | claims)


@pytest.fixture
def client() -> Client:
    middleware = AnteroomMiddleware(
        site,
        keys=TEST_KEYS,
        base_url="http://127.0.0.1:9",  # nothing listens: admitted visitors must not need it
        public_key="pk_test",
        routes={"/checkout": "drop", "/api/cart": "drop"},
    )
    return Client(middleware)


NAV = {"Accept": "text/html,application/xhtml+xml", "Sec-Fetch-Mode": "navigate"}


def test_unprotected_paths_pass_untouched(client: Client) -> None:
    assert client.get("/products").get_data() == b"the shop"


def test_navigation_without_admission_goes_to_the_hosted_page(client: Client) -> None:
    response = client.get("/checkout/pay?x=1", headers=NAV)
    assert response.status_code == 303
    assert response.headers["Anteroom-Enforcement"] == "queue:no-admission"
    location = response.headers["Location"]
    assert location.startswith("http://127.0.0.1:9/queue/drop?key=pk_test&return=")
    assert "checkout%2Fpay%3Fx%3D1" in location


def test_api_request_gets_429_queue_required(client: Client) -> None:
    response = client.post("/api/cart", headers={"Accept": "application/json"})
    assert response.status_code == 429 and int(response.headers["Retry-After"]) > 0
    body = response.get_json()
    assert body["error"] == "QueueRequired" and body["room"] == "drop"
    assert body["api"] == "http://127.0.0.1:9/api/v1" and "queuePage" in body


def test_valid_cookie_or_header_passes_offline(client: Client) -> None:
    client.set_cookie("_abq", admission(), domain="localhost")
    assert client.get("/checkout").get_data() == b"the shop"
    fresh = Client(client.application)
    assert fresh.get("/api/cart", headers={"Anteroom-Admission": admission()}).status_code == 200


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (admission(room="other"), "queue:wrong-room"),
        (admission(exp=int(time.time()) - 5), "queue:admission-expired"),
        ("ab1.k1.bm90.c2ln", "queue:admission-forged"),
        ("garbage", "queue:admission-malformed"),
        (tokens.sign(tokens.Keyring.generate("k9"), tokens.ADMISSION, {"exp": 2**31}),
         "queue:admission-unknown-key"),
    ],
)  # fmt: skip
def test_refusals_name_their_reason(client: Client, token: str, reason: str) -> None:
    response = client.get("/api/cart", headers={"Anteroom-Admission": token})
    assert response.status_code == 429
    assert response.headers["Anteroom-Enforcement"] == reason


def test_abq_hand_over_sets_the_cookie_and_cleans_the_url(client: Client) -> None:
    token = admission()
    response = client.get(f"/checkout?a=1&abq={token}&b=2", headers=NAV)
    assert response.status_code == 307
    assert response.headers["Location"] == "http://localhost/checkout?a=1&b=2"
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith(f"_abq={token};") and "HttpOnly" in cookie
    assert "SameSite=Lax" in cookie and "Secure" not in cookie  # localhost
    assert 290 <= int(cookie.split("Max-Age=")[1].split(";")[0]) <= 300


def test_invalid_abq_sets_nothing(client: Client) -> None:
    response = client.get("/checkout?abq=forged", headers=NAV)
    assert response.status_code == 303 and "Set-Cookie" not in response.headers
