"""Receipts in queue answers (docs/draw.md): after the draw, each pre-queue
entrant's answers carry a signed receipt of their drawn rank that ``anteroom verify-draw``
accepts with the room's published receipt key; nobody else's answers carry one."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import Client
from werkzeug.wrappers import Response

from anteroom.queue.draw.receipt_keys import ReceiptSigner
from anteroom.queue.draw.room_receipts import ReceiptBook
from anteroom.sdk import draw
from anteroom.sdk.tokens import Keyring
from anteroom.service_container import Services
from anteroom.web.visitor.hot_path import HotPath
from helpers import make_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis

MINUTE = 60_000
START = 1_800_000_000_000
POLL = "/api/v1/queue/poll"


@pytest.fixture
def api_key(services: Services) -> str:
    return services.keystore.create("shop")[0].public_key


@pytest.fixture
def views(app: Flask) -> Client:
    """A client of the Flask views alone, behind the hot path."""
    hot = app.wsgi_app
    assert isinstance(hot, HotPath)
    return Client(hot.inner, Response)


def scheduled(services: Services) -> tuple[str, int]:
    room = make_room(services.engine, env="shop", slug="drop", ratePerMinute=6)
    services.engine.set_clock(room, START)
    services.engine.open(room, START + MINUTE)
    return room, START + MINUTE


def drawn(services: Services, room: str) -> None:
    """opensAt comes and the ticker's draw worker draws, and builds this process's receipt
    tree as it does; this process's directory sees it."""
    services.engine.shift_clock(room, MINUTE)
    draws = services.ticker.draws
    assert services.engine.tick(room, background=draws.submit).draw_due
    waited = time.monotonic()
    while draws.running():  # the worker's thread: until it is done, not a race
        assert time.monotonic() - waited < 10
        time.sleep(0.01)
    services.directory.refresh_once()


def fairness(client: FlaskClient, api_key: str) -> tuple[dict[str, Any], list[str]]:
    document = client.get(f"/queue/drop/fairness.json?key={api_key}").json
    return document, client.get("/queue/drop/" + document["entrantsUrl"]).json


def test_pre_queue_entrants_answers_carry_a_receipt_anyone_can_check(
    client: FlaskClient, views: Client, services: Services, api_key: str
) -> None:
    room, opens_at = scheduled(services)
    entrants = [Visitor(client, api_key) for _ in range(6)]
    for visitor in entrants:
        assert "receipt" not in visitor.enter("drop").json  # no draw yet: nothing to prove
    drawn(services, room)
    late = Visitor(client, api_key)
    assert late.enter("drop").json["status"] == "waiting"

    document, listed = fairness(client, api_key)
    check = draw.signature_checker(document["receiptKeys"])
    assert set(document["receiptKeys"]) == set(services.keyring)
    ranks = set()
    for visitor in entrants:
        body = {"apiKey": api_key, "ticket": visitor.ticket}
        hot, flask = client.post(POLL, json=body), views.post(POLL, json=body)
        receipt = hot.json["receipt"]
        # The hot path and the views give the same receipt: made once, kept.
        assert flask.json["receipt"] == receipt
        verdict = draw.check_receipt(document, listed, receipt, check)
        assert verdict.ok and verdict.signature_checked, verdict.detail
        claims = draw.read_receipt(receipt)
        assert (claims.room, claims.opening) == ("drop", opens_at)
        ranks.add(claims.rank)
    assert ranks == set(range(1, 7))
    # A later arrival is not in the draw: no receipt, in either path.
    body = {"apiKey": api_key, "ticket": late.ticket}
    assert "receipt" not in client.post(POLL, json=body).json
    assert "receipt" not in views.post(POLL, json=body).json


def test_a_forged_receipt_fails_the_check(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    room, _ = scheduled(services)
    visitor = Visitor(client, api_key)
    visitor.enter("drop")
    drawn(services, room)
    receipt = visitor.poll().json["receipt"]
    document, listed = fairness(client, api_key)
    check = draw.signature_checker(document["receiptKeys"])
    claims = draw.read_receipt(receipt)
    # Another keyring's receipt key signs the same claims: the signature is not this room's.
    other = ReceiptSigner(Keyring.generate("k1"))
    forged = draw.make_receipt(claims, other.kid, other.sign)
    assert draw.check_receipt(document, listed, forged, check).failure == "receipt-signature"
    assert draw.check_receipt(document, listed, receipt, check).ok


def test_rooms_without_a_draw_answer_as_before(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    room = make_room(services.engine, env="shop", slug="drop", ratePerMinute=6)
    services.engine.open(room)
    visitor = Visitor(client, api_key)
    visitor.enter("drop")
    assert "receipt" not in visitor.poll().json
    assert client.get(f"/queue/drop/fairness.json?key={api_key}").status_code == 404


def test_a_process_that_did_not_draw_builds_the_tree_in_the_background_not_in_a_request(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    room, _ = scheduled(services)
    visitor = Visitor(client, api_key)
    visitor.enter("drop")
    drawn(services, room)
    assert "receipt" in visitor.poll().json  # the drawing process built it as it drew
    # Another process's book (its own memory): its first answer after the draw waits for no
    # tree, and gives the receipt once the background build is done.
    other = ReceiptBook(services.redis, services.keys, ReceiptSigner(services.keyring))
    known = services.engine.get_room(room)
    (spot,) = services.engine.line(room)
    assert other.receipt(known, spot.visitor) is None
    waited = time.monotonic()
    while other.receipt(known, spot.visitor) is None:
        assert time.monotonic() - waited < 10
        time.sleep(0.01)  # the background build: until it is done, not a race
    made = draw.read_receipt(other.receipt(known, spot.visitor) or "")
    assert made == draw.read_receipt(visitor.poll().json["receipt"])
