"""A room's draw in public (SPEC "A draw anyone can check"): the fairness document and the
entrant list ``anteroom verify-draw --fairness <url>`` checks, for the environment of
``?key=pk_…`` as the hosted page takes it.

Before the draw the document carries the commitment (and any withdrawn ones) with ``seed``,
``root``, ``entrants`` and ``entrantsUrl`` null: the seed is never in an answer until the pool is
drawn. The salt behind the entrant ids is never in one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, current_app, request
from flask.typing import ResponseReturnValue

from anteroom.service_container import Services
from anteroom.web import api_routes as routes
from anteroom.web import http_errors as errors
from anteroom.web import room_lookup
from anteroom.web.fairness_models import Entrants, Fairness
from anteroom.web.management_api import engine_call, storage

bp = Blueprint("fairness", __name__)


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


def drawn_room(slug: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The room ``slug`` of ``?key=``'s environment and its draw; 404 when it has none.

    Its draw is read from Redis, not from this process's directory, which may be ~0.2 s behind
    another process's: a document must not go back to "not drawn" on the next request, nor link
    a list that the next worker says is not made yet. One HGETALL; this is no visitor's poll.
    """
    s = services()
    with storage():
        env = room_lookup.environment_of(s, request.args.get("key", ""))
        room_id = room_lookup.room_by_slug(s, env, slug)["id"]
    room = engine_call(lambda: s.engine.get_room(room_id))
    if room.get("draw") is None:
        raise errors.NotFound("This room's opening has no draw (it has no pre-queue).")
    return room, room["draw"]


@routes.view(bp, routes.GET_FAIRNESS)
def fairness(slug: str) -> ResponseReturnValue:
    """The opening's fairness document: commitment at once; seed, root and list once drawn."""
    room, draw = drawn_room(slug)
    drawn = draw.get("seed") is not None
    # Relative to this document (/queue/<slug>/fairness.json), as verify-draw resolves it.
    listed = f"fairness/entrants.json?{urlencode({'key': request.args.get('key', '')})}"
    return Fairness(
        room=slug,
        opensAt=room["opensAt"],
        commitment=draw["commitment"],
        committedAt=draw["committedAt"],
        withdrawn=draw.get("withdrawn", []),
        seed=draw.get("seed"),
        root=draw.get("root"),
        entrants=draw.get("entrants"),
        entrantsUrl=listed if drawn else None,
        receiptKeys=services().receipts.signer.public_keys,
    )


@routes.view(bp, routes.GET_DRAWN_ENTRANTS)
def entrants(slug: str) -> ResponseReturnValue:
    """The entrant ids in drawn order, once drawn (404 before: the list is not frozen yet)."""
    room, draw = drawn_room(slug)
    if draw.get("seed") is None:
        raise errors.NotFound("The draw is not made yet: its entrants are listed after opensAt.")
    with storage():
        return Entrants(services().engine.drawn_entrants(room["id"]))
