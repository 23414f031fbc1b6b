"""The ASGI and Django adapters in front of the real frameworks: what each adds to the decision.

What the edge decides is the shared table (test_edge_contract.py) and the framework matrix
(test_edge_matrix.py, over real servers). Here, in this process: that a FastAPI (Starlette) scope
and a Django request are read into the right facts, and the decision is carried out in ASGI
messages and on Django's response objects (the view sees the admission; a renewed one goes
beside the app's own cookie; a preflight is answered with no body).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import PlainTextResponse
from matrix_apps import EDGE
from starlette.routing import Mount

from anteroom.edge import AnteroomASGIMiddleware, AnteroomDjangoMiddleware, admission
from anteroom.sdk import tokens
from anteroom.sdk.edge_decision import EdgeConfig
from helpers import TEST_KEYS, in_own_loop

KEYS = tokens.Keyring.parse(TEST_KEYS)
NAV = {"accept": "text/html,application/xhtml+xml", "sec-fetch-mode": "navigate"}
PREFLIGHT = {"origin": "https://app.example", "access-control-request-method": "POST"}
CORS = {"Access-Control-Allow-Origin": ["https://app.example"], "Access-Control-Max-Age": "60"}


def token(**claims: Any) -> str:
    now = int(time.time())
    base = {"q": "drop", "qr": "q1", "qj": "s1", "vid": "v1", "env": "web", "jti": "j1"}
    return tokens.sign(KEYS, tokens.ADMISSION, base | {"iat": now, "exp": now + 300} | claims)


# -- ASGI: FastAPI ----------------------------------------------------------------------------


def shop() -> FastAPI:
    app = FastAPI()

    @app.get("/products", response_class=PlainTextResponse)
    def products() -> str:
        return "products"

    @app.api_route("/checkout", methods=["GET", "OPTIONS"], response_class=PlainTextResponse)
    def checkout(request: Request) -> PlainTextResponse:
        claims = admission(request.scope) or {}
        response = PlainTextResponse(f"checkout for {claims.get('vid')}")
        response.set_cookie("cart", "1")
        return response

    @app.websocket("/checkout/live")
    async def live(socket: WebSocket) -> None:
        await socket.accept()
        await socket.send_text("live")
        await socket.close()

    return app


def asgi_request(
    app: Any,
    path: str,
    headers: dict[str, str] | None = None,
    method: str = "GET",
    root_path: str = "",
) -> tuple[int, dict[str, list[str]], bytes]:
    """One HTTP request through ``app`` as uvicorn would send it: (status, headers, body)."""
    target, _, query = path.partition("?")
    raw = (root_path + target).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": root_path + target, "raw_path": raw, "root_path": root_path,
        "query_string": query.encode(), "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    in_own_loop(app(scope, receive, send))
    got: dict[str, list[str]] = {}
    for name, value in sent[0]["headers"]:
        got.setdefault(name.decode().lower(), []).append(value.decode())
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], got, body


def protected(app: FastAPI | None = None, **options: Any) -> AnteroomASGIMiddleware:
    return AnteroomASGIMiddleware(app or shop(), **(EDGE | options))


def test_asgi_unprotected_passes_and_protected_is_refused_as_a_whole_response() -> None:
    edge = protected()
    assert asgi_request(edge, "/products")[::2] == (200, b"products")
    status, headers, body = asgi_request(edge, "/checkout", {"accept": "application/json"})
    assert status == 429 and json.loads(body)["error"] == "QueueRequired"
    assert headers["content-length"] == [str(len(body))]
    assert headers["anteroom-enforcement"] == ["queue:no-admission"]
    status, headers, body = asgi_request(edge, "/checkout?x=1", NAV | {"host": "shop.example"})
    assert status == 303 and body == b""
    assert "return=http%3A%2F%2Fshop.example%2Fcheckout%3Fx%3D1" in headers["location"][0]


def test_asgi_the_view_sees_the_admission_and_a_renewal_goes_after_its_cookie() -> None:
    edge = protected()
    status, headers, body = asgi_request(edge, "/checkout", {"cookie": f"_abq={token(vid='v7')}"})
    assert (status, body) == (200, b"checkout for v7")
    assert headers["set-cookie"] == ["cart=1; Path=/; SameSite=lax"]
    fresh = token(exp=int(time.time()) + 600, jti="j2")
    renewing = protected(refresh_after=1)
    renewing.anteroom.transport = lambda path, body: (200, {"token": fresh})
    status, headers, _ = asgi_request(renewing, "/checkout", {"cookie": f"_abq={token(iat=0)}"})
    assert status == 200 and headers["set-cookie"][0].startswith("cart=1")
    assert headers["set-cookie"][1].startswith(f"_abq={fresh};")


def test_asgi_hand_over_and_preflight() -> None:
    edge = protected(preflight_headers=CORS)
    handed = token()
    status, headers, _ = asgi_request(edge, f"/checkout?a=1&abq={handed}", {"host": "shop.example"})
    assert status == 307 and headers["location"] == ["http://shop.example/checkout?a=1"]
    assert headers["set-cookie"][0].startswith(f"_abq={handed};")
    status, headers, body = asgi_request(edge, "/checkout", PREFLIGHT, method="OPTIONS")
    assert (status, body) == (204, b"")
    assert headers["access-control-allow-origin"] == ["https://app.example"]
    assert headers["access-control-max-age"] == ["60"]
    passing = protected(app_answers_options=True)
    status, _, body = asgi_request(passing, "/checkout", PREFLIGHT, method="OPTIONS")
    assert (status, body) == (200, b"checkout for None")  # the app said it answers OPTIONS


def test_asgi_mounted_app_is_matched_as_the_browser_sees_it() -> None:
    outer = FastAPI(routes=[Mount("/shop", app=shop())])
    edge = protected(outer, routes={"/shop/checkout": "drop"}, mount="")
    assert asgi_request(edge, "/shop/checkout")[0] == 429
    assert asgi_request(edge, "/shop/products")[::2] == (200, b"products")
    # Served under a root path (uvicorn --root-path /shop): routes named with it, mount=.
    inner = protected(routes={"/shop/checkout": "drop"}, mount="/shop")
    assert asgi_request(inner, "/checkout", root_path="/shop")[0] == 429
    assert asgi_request(inner, "/products", root_path="/shop")[::2] == (200, b"products")


def websocket(app: Any, path: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    """A WebSocket handshake through ``app``: the messages the app sent."""
    scope = {
        "type": "websocket", "asgi": {"version": "3.0"}, "scheme": "ws", "path": path,
        "raw_path": path.encode(), "root_path": "", "query_string": b"",
        "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000), "subprotocols": [],
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }  # fmt: skip
    incoming = [{"type": "websocket.connect"}, {"type": "websocket.disconnect", "code": 1000}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    in_own_loop(app(scope, receive, send))
    return sent


def test_asgi_a_websocket_to_a_protected_path_needs_an_admission_too() -> None:
    edge = protected()
    refused = websocket(edge, "/checkout/live", {})
    assert [m["type"] for m in refused] == ["websocket.close"]
    admitted = websocket(edge, "/checkout/live", {"cookie": f"_abq={token()}"})
    assert [m["type"] for m in admitted][:2] == ["websocket.accept", "websocket.send"]


# -- Django -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def factory() -> RequestFactory:
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            SECRET_KEY="adapters", ALLOWED_HOSTS=["*"], USE_I18N=True, ROOT_URLCONF=[]
        )
    return RequestFactory()


def django_view(request: HttpRequest) -> HttpResponse:
    claims = admission(request.META) or {}
    response = HttpResponse(f"checkout for {claims.get('vid')}")
    response.set_cookie("cart", "1")
    return response


def django_edge(**options: Any) -> AnteroomDjangoMiddleware:
    return AnteroomDjangoMiddleware(django_view, EdgeConfig(**(EDGE | options)))


def test_django_the_view_sees_the_admission_and_refusals_are_django_responses(
    factory: RequestFactory,
) -> None:
    edge = django_edge()
    admitted = edge(factory.get("/checkout/", HTTP_COOKIE=f"_abq={token(vid='v7')}"))
    assert (admitted.status_code, admitted.content) == (200, b"checkout for v7")
    refused = edge(factory.get("/checkout/", HTTP_ACCEPT="application/json"))
    assert refused.status_code == 429 and json.loads(refused.content)["error"] == "QueueRequired"
    assert refused["Anteroom-Enforcement"] == "queue:no-admission"
    navigation = edge(factory.get("/fr/checkout/", HTTP_ACCEPT="text/html"))
    assert navigation.status_code == 303 and navigation.content == b""
    # Django decodes the path as UTF-8 before it routes: the edge reads the same path.
    folded = edge(factory.get("/chec%E2%84%AAout/", HTTP_ACCEPT="application/json"))
    assert folded.status_code == 429


def test_django_a_renewal_goes_beside_the_views_cookie(factory: RequestFactory) -> None:
    fresh = token(exp=int(time.time()) + 600, jti="j2")
    edge = django_edge(refresh_after=1)
    edge.edge.anteroom.transport = lambda path, body: (200, {"token": fresh})
    response = edge(factory.get("/checkout", HTTP_COOKIE=f"_abq={token(iat=0)}"))
    assert response.cookies["cart"].value == "1"
    assert response.cookies["_abq"].value == fresh
    assert response.cookies["_abq"]["httponly"] and response.cookies["_abq"]["samesite"] == "Lax"


def test_django_a_preflight_is_answered_with_no_body(factory: RequestFactory) -> None:
    edge = django_edge(preflight_headers=CORS)
    headers = {"HTTP_ORIGIN": "https://app.example", "HTTP_ACCESS_CONTROL_REQUEST_METHOD": "POST"}
    response = edge(factory.options("/checkout/", **headers))
    assert (response.status_code, response.content) == (204, b"")
    assert response["Access-Control-Allow-Origin"] == "https://app.example"
    assert "Content-Type" not in response


def test_django_settings_are_named_when_missing(factory: RequestFactory) -> None:
    with pytest.raises(ValueError, match="ANTEROOM_EDGE"):
        AnteroomDjangoMiddleware(django_view)
