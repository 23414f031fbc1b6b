"""anteroom.edge around a plain WSGI app: offline checks, hand-over and refusals."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import Client

from anteroom import edge, tokens
from anteroom.edge import AnteroomEdge, AnteroomMiddleware
from helpers import TEST_KEYS

KEYS = tokens.Keyring.parse(TEST_KEYS)


def site(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"the shop"]


def admission(room: str = "drop", **claims: Any) -> str:
    now = int(time.time())
    base = {"q": room, "qr": "q1", "qj": "s1", "vid": "v1", "env": "web", "jti": "j1"}
    return tokens.sign(KEYS, tokens.ADMISSION, base | {"iat": now, "exp": now + 300} | claims)


OPTIONS: dict[str, Any] = {
    "keys": TEST_KEYS,
    "base_url": "http://127.0.0.1:9",  # nothing listens: admitted visitors must not need it
    "public_key": "pk_test",
    "routes": {"/checkout": "drop", "/api/cart": "drop"},
}


@pytest.fixture
def client() -> Client:
    return Client(AnteroomMiddleware(site, **OPTIONS))


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


def test_hand_over_keeps_the_other_parameters_verbatim(client: Client) -> None:
    response = client.get(f"/checkout?b=x+y&abq={admission()}&c&d=%2F", headers=NAV)
    assert response.headers["Location"] == "http://localhost/checkout?b=x+y&c&d=%2F"
    assert response.headers["Referrer-Policy"] == "no-referrer"


def test_a_refused_hand_over_does_not_carry_the_token_along(client: Client) -> None:
    response = client.get("/checkout?a=1&abq=forged", headers=NAV)
    assert response.headers["Anteroom-Enforcement"] == "queue:admission-malformed"
    assert "abq" not in response.headers["Location"]
    assert response.headers["Location"].endswith("return=http%3A%2F%2Flocalhost%2Fcheckout%3Fa%3D1")


def test_the_app_sees_the_admission_it_was_let_in_with() -> None:
    seen: list[Any] = []

    def shop(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(edge.admission(environ))
        return site(environ, start_response)

    protected = Client(AnteroomMiddleware(shop, **OPTIONS))
    protected.get("/checkout", headers={"Anteroom-Admission": admission(vid="v7")})
    protected.get("/products")
    assert seen[0]["vid"] == "v7" and seen[1] is None


def test_cors_preflights_pass_to_the_app(client: Client) -> None:
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    assert client.options("/api/cart", headers=preflight).get_data() == b"the shop"
    assert client.options("/api/cart").status_code == 429  # a plain OPTIONS is no preflight


def test_an_old_admission_passes_while_anteroom_is_unreachable() -> None:
    clock = [time.time() + 60]  # a minute on: due for renewal, and nothing listens on port 9
    protected = Client(AnteroomMiddleware(site, **OPTIONS, clock=lambda: clock[0]))
    response = protected.get("/checkout", headers={"Anteroom-Admission": admission()})
    assert response.status_code == 200 and "Anteroom-Admission" not in response.headers


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"base_url": "queue.example"}, "base_url"),
        ({"public_key": "sk_secret"}, "public_key"),
        ({"routes": {}}, "routes"),
        ({"routes": {"checkout": "drop"}}, "routes"),
        ({"refresh_after": 0}, "refresh_after"),
    ],
)
def test_bad_options_are_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AnteroomMiddleware(site, **(OPTIONS | change))


def test_flask_extension_reads_its_config_and_names_what_is_missing() -> None:
    app = Flask("shop")
    app.config.update({f"ANTEROOM_EDGE_{k.upper()}": v for k, v in OPTIONS.items()})
    app.get("/checkout")(lambda: "checkout")
    AnteroomEdge(app)
    assert app.test_client().get("/checkout", headers=NAV).status_code == 303
    with pytest.raises(ValueError, match="ANTEROOM_EDGE_PUBLIC_KEY"):
        AnteroomEdge(Flask("bare"), keys=TEST_KEYS, base_url="http://q.example", routes={"/": "x"})


def test_a_remembered_admission_is_still_checked_for_time_and_binding() -> None:
    clock = [time.time()]
    session = ["s1"]
    protected = Client(
        AnteroomMiddleware(
            site, **OPTIONS, clock=lambda: clock[0], session_jti=lambda environ: session[0]
        )
    )
    token = {"Anteroom-Admission": admission(qj="s1")}
    assert protected.get("/api/cart", headers=token).status_code == 200
    session[0] = "s2"  # another session shows the same token
    refused = protected.get("/api/cart", headers=token)
    assert refused.headers["Anteroom-Enforcement"] == "queue:session-mismatch"
    session[0] = "s1"
    clock[0] += 301  # past its exp, although it verified a moment ago
    expired = protected.get("/api/cart", headers=token)
    assert expired.headers["Anteroom-Enforcement"] == "queue:admission-expired"


def test_the_app_cannot_change_the_remembered_claims() -> None:
    def meddling(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        claims = edge.admission(environ) or {}
        seen.append(claims.get("q"))
        claims["q"] = "changed"
        return site(environ, start_response)

    seen: list[Any] = []
    protected = Client(AnteroomMiddleware(meddling, **OPTIONS))
    token = {"Anteroom-Admission": admission()}
    protected.get("/checkout", headers=token)
    protected.get("/checkout", headers=token)
    assert seen == ["drop", "drop"]
