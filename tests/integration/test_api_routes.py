"""Routes declared once (web/api/api_routes.py): the app serves every route as it is declared, and
an answer model's JSON holds just the fields its view gave (what a client reads today)."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from anteroom.service_container import Services
from anteroom.web.api import api_routes as routes
from helpers import make_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis


def test_every_declared_route_is_served_at_its_path_and_method(app: Flask) -> None:
    served = {(rule.rule, m) for rule in app.url_map.iter_rules() for m in rule.methods or ()}
    for route in routes.ROUTES:
        assert (route.rule, route.method.upper()) in served, route.operation_id


def test_a_queue_answer_says_fail_open_only_when_it_is(
    client: FlaskClient, services: Services
) -> None:
    record, _ = services.keystore.create("shop")
    room_id = make_room(services.engine, env="shop", slug="drop")
    services.engine.open(room_id)
    answer = Visitor(client, record.public_key).enter("drop")
    assert answer.status_code == 200 and answer.json["status"] in ("waiting", "admitted")
    assert "failOpen" not in answer.json  # a documented field with a default, left unsaid


def test_a_revocation_names_only_what_it_revoked(client: FlaskClient, services: Services) -> None:
    _, secret = services.keystore.create("shop")
    response = client.post(
        "/api/management/v1/sessions/revoke",
        json={"jti": "abc123"},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 200
    assert response.json["jti"] == "abc123" and "vid" not in response.json
