"""anteroom.edge as WSGI middleware: what the adapter adds to the decision.

What the edge decides (paths, refusals, hand-over, renewal, queue-through, the cache) is the
shared table, tests/fixtures/edge_cases.json (test_edge_contract.py). Here: that a WSGI request
is read into the right facts and the decision is carried out on the WSGI response.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import Client, EnvironBuilder

from anteroom.edge import AnteroomEdge, AnteroomMiddleware
from anteroom.sdk import tokens
from anteroom.sdk import wsgi_edge as edge
from helpers import TEST_KEYS

KEYS = tokens.Keyring.parse(TEST_KEYS)


def site(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain"), ("Set-Cookie", "cart=1")])
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
NAV = {"Accept": "text/html,application/xhtml+xml", "Sec-Fetch-Mode": "navigate"}


@pytest.fixture
def client() -> Client:
    return Client(AnteroomMiddleware(site, **OPTIONS))


def test_unprotected_paths_pass_untouched(client: Client) -> None:
    assert client.get("/products").get_data() == b"the shop"


def test_a_refusal_is_a_whole_wsgi_response(client: Client) -> None:
    response = client.post("/api/cart", headers={"Accept": "application/json"})
    assert response.status == "429 Too Many Requests"
    assert int(response.headers["Content-Length"]) == len(response.get_data())
    assert response.get_json()["error"] == "QueueRequired"
    navigation = client.get("/checkout/pay?x=1", headers=NAV)
    assert navigation.status == "303 See Other" and navigation.get_data() == b""
    assert "checkout%2Fpay%3Fx%3D1" in navigation.headers["Location"]


def test_the_app_sees_the_admission_it_was_let_in_with() -> None:
    seen: list[Any] = []

    def shop(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(edge.admission(environ))
        return site(environ, start_response)

    protected = Client(AnteroomMiddleware(shop, **OPTIONS))
    protected.get("/checkout", headers={"Anteroom-Admission": admission(vid="v7")})
    protected.get("/products")
    assert seen[0]["vid"] == "v7" and seen[1] is None


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


def test_hand_over_reads_scheme_host_and_path_from_the_request(client: Client) -> None:
    token = admission()
    response = client.get(f"/checkout?a=1&abq={token}", headers={"Host": "localhost"})
    assert response.status_code == 307
    assert response.headers["Location"] == "http://localhost/checkout?a=1"
    # An attacker's (or a proxy's) Host: localhost does not take Secure away.
    assert response.headers["Set-Cookie"].endswith("; Secure")
    local = Client(AnteroomMiddleware(site, **OPTIONS, secure_cookie=False))
    plain = local.get(f"/checkout?abq={token}")
    assert "Secure" not in plain.headers["Set-Cookie"]
    https = local.get(f"/checkout?abq={token}", base_url="https://shop.example")
    assert https.headers["Location"] == "https://shop.example/checkout"
    assert https.headers["Set-Cookie"].endswith("; Secure")


def test_headers_the_decision_adds_go_after_the_apps_own() -> None:
    fresh = admission(exp=int(time.time()) + 600)
    middleware = AnteroomMiddleware(site, **OPTIONS, refresh_after=1)
    middleware.anteroom.transport = lambda path, body: (200, {"token": fresh})
    browser = Client(middleware, use_cookies=False)  # sends the Cookie header as given
    response = browser.get("/checkout", headers={"Cookie": f"_abq={admission(iat=0)}"})
    assert response.headers.getlist("Set-Cookie")[0] == "cart=1"
    assert response.headers.getlist("Set-Cookie")[1].startswith(f"_abq={fresh};")


def test_the_raw_target_is_read_for_encoded_slashes() -> None:
    protected = AnteroomMiddleware(site, **OPTIONS)
    environ = EnvironBuilder(path="/").get_environ()
    environ["PATH_INFO"] = "//checkout"  # as werkzeug and gunicorn decode /%2Fcheckout
    environ["RAW_URI"] = environ["REQUEST_URI"] = "/%2Fcheckout"
    status: list[str] = []
    protected(environ, lambda s, headers, exc=None: status.append(s))
    assert status == ["400 Bad Request"]
    assert protected.room_for("//CHECKOUT/x") == "drop" and protected.room_for("/x") is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"base_url": "queue.example"}, "base_url"),
        ({"public_key": "sk_secret"}, "public_key"),
        ({"routes": {}}, "routes"),
        ({"routes": {"checkout": "drop"}}, "routes"),
        ({"refresh_after": 0}, "refresh_after"),
        ({"mount": "shop"}, "mount"),
        ({"languages": "fr"}, "languages"),
        ({"preflight_headers": {"Access-Control-Max-Age": 60}}, "preflight_headers"),
    ],
)
def test_bad_options_are_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AnteroomMiddleware(site, **(OPTIONS | change))


def test_flask_extension_reads_its_config_and_names_what_is_missing() -> None:
    app = Flask("shop")
    app.config.update({f"ANTEROOM_EDGE_{k.upper()}": v for k, v in OPTIONS.items()})
    app.config["ANTEROOM_EDGE_SECURE_COOKIE"] = False
    app.config["ANTEROOM_EDGE_LANGUAGES"] = ["fr"]
    app.get("/checkout")(lambda: "checkout")
    app.get("/fr/checkout", endpoint="fr")(lambda: "checkout")
    extension = AnteroomEdge(app)
    assert app.test_client().get("/checkout", headers=NAV).status_code == 303
    assert app.test_client().get("/fr/checkout", headers=NAV).status_code == 303
    assert extension.middleware and extension.middleware.config.secure_cookie is False
    with pytest.raises(ValueError, match="ANTEROOM_EDGE_PUBLIC_KEY"):
        AnteroomEdge(Flask("bare"), keys=TEST_KEYS, base_url="http://q.example", routes={"/": "x"})


def test_bypass_rules_from_the_flask_config_read_their_header_off_the_request() -> None:
    monitor = "monitor-secret-0123456789"
    app = Flask(__name__)
    app.config |= {"ANTEROOM_EDGE_" + name.upper(): value for name, value in OPTIONS.items()} | {
        "ANTEROOM_EDGE_BYPASS": [{"kind": "header", "name": "X-Monitor", "secret": monitor}]
    }
    app.add_url_rule("/checkout", "checkout", lambda: "checkout")
    AnteroomEdge(app)
    client = app.test_client()
    assert client.get("/checkout", headers={"X-Monitor": monitor}).get_data() == b"checkout"
    assert client.get("/checkout", headers={"X-Monitor": monitor[:-1]}).status_code == 429
