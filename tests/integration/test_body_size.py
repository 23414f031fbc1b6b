"""Body size through the real app: a chunked body (no Content-Length) is held to the same limit.

Gunicorn hands the app a chunked body as a terminated stream without a length; these tests
build the same WSGI environ (``wsgi.input_terminated``) that it does.
"""

from __future__ import annotations

import io
import json

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from anteroom.service_container import Services
from anteroom.web.app_factory import MAX_BODY_BYTES

pytestmark = pytest.mark.redis


def chunked(client: FlaskClient, path: str, body: bytes, **headers: str) -> TestResponse:
    """POST ``body`` the way gunicorn passes on ``Transfer-Encoding: chunked``."""
    return client.post(
        path,
        input_stream=io.BytesIO(body),
        headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"} | headers,
        environ_overrides={"wsgi.input_terminated": True},
    )


def over_long(field: str) -> bytes:
    return json.dumps({field: "x" * (4 * MAX_BODY_BYTES)}).encode()


def test_an_over_long_chunked_visitor_body_is_413(client: FlaskClient) -> None:
    response = chunked(client, "/api/v1/queue/poll", over_long("apiKey"))
    assert response.status_code == 413, response.json
    assert response.json is not None and response.json["error"] == "PayloadTooLarge"


def test_an_over_long_chunked_management_body_is_413(
    client: FlaskClient, services: Services
) -> None:
    _, secret = services.keystore.create("prod")
    response = chunked(
        client, "/api/management/v1/queues", over_long("name"), Authorization=f"Bearer {secret}"
    )
    assert response.status_code == 413, response.json
    assert response.json is not None and response.json["error"] == "PayloadTooLarge"


def test_a_chunked_body_within_the_limit_is_read(client: FlaskClient, services: Services) -> None:
    record, _ = services.keystore.create("shop")
    padding = " " * (MAX_BODY_BYTES - 100)  # JSON whitespace: near the limit, still under it
    body = ('{"apiKey": "' + record.public_key + '"' + padding + "}").encode()
    assert len(body) < MAX_BODY_BYTES
    response = chunked(client, "/api/v1/challenge", body)
    assert response.status_code == 200, response.json
    assert response.json is not None and response.json["challenge"].startswith("pc1.")
