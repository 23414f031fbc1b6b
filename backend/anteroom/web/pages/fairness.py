"""A room's draw in public (docs/draw.md): the fairness document and the
entrant list ``anteroom verify-draw --fairness <url>`` checks, for the environment of
``?key=pk_…`` as the hosted page takes it.

Before the draw the document carries the commitment (and any withdrawn ones) with ``seed``,
``root``, ``entrants`` and ``entrantsUrl`` null: the seed is never in an answer until the pool is
drawn. The salt behind the entrant ids is never in one.

Both documents are public (a public key suffices) and the list is megabytes at a big opening,
so both are built once per process and state and answered from memory (public_documents.py):
the list once per draw, read through ``Engine.drawn_entrants``; the report once per change of
its draw and at most once a second for its figures (which move while the room admits: a
process may show them up to a second old, never a draw older than Redis's). Each address is
limited (``ANTEROOM_LIMIT_FAIRNESS``, counted in each worker's memory: a refusal costs Redis
nothing). ``entrantsUrl`` names its draw's root: that URL's list never changes, so it is
served immutable; the room's plain list URL follows its latest draw and is revalidated.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, current_app, render_template, request, url_for
from flask.typing import ResponseReturnValue

from anteroom.queue.connection.storage_errors import StorageError
from anteroom.service_container import Services
from anteroom.visit import room_lookup
from anteroom.web.api import api_routes as routes
from anteroom.web.manage.management_api import (
    Call,
    engine_call,
    load_room,
    management_call,
    storage,
)
from anteroom.web.pages import hosted_pages as pages
from anteroom.web.pages import page_languages as languages
from anteroom.web.pages.fairness_models import Fairness
from anteroom.web.pages.fairness_report import figures
from anteroom.web.pages.public_documents import DocumentCache, answer
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving.http_errors import ApiError
from anteroom.web.visitor import address_limits as limits

bp = Blueprint("fairness", __name__)
EXTENSION = "anteroom.web.pages.public_documents"
CHARGED = "anteroom.fairness.charged"  # environ: this request's limit is counted already
FIGURES_SECONDS = 1.0  # the report's figures are read at most this often per process and room
IMMUTABLE = "public, max-age=31536000, immutable"  # a drawn list named by its root
REVALIDATE = "public, no-cache"  # kept by a cache, asked about (ETag) before each reuse
clock: Callable[[], float] = time.monotonic  # tests drive it


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


def documents() -> DocumentCache:
    """This process's built documents (one cache per app)."""
    found = current_app.extensions.get(EXTENSION)
    if found is None:
        egress = services().settings.fairness_egress_mb * 2**20
        found = current_app.extensions.setdefault(EXTENSION, DocumentCache(egress))
    return found  # type: ignore[no-any-return]


def drawn_room(slug: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The room ``slug`` of ``?key=``'s environment and its draw; 404 when it has none."""
    return room_and_draw(services(), request.args.get("key", ""), slug)


def room_and_draw(s: Services, key: str, slug: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The room ``slug`` of ``key``'s environment and its draw; 404 when it has none.

    Its draw is read from Redis, not from this process's directory, which may be ~0.2 s behind
    another process's: a document must not go back to "not drawn" on the next request, nor link
    a list that the next worker says is not made yet. One HGETALL; this is no visitor's poll.
    """
    with storage():
        env = room_lookup.environment_of(s, key)
        room_id = room_lookup.room_by_slug(s, env, slug)["id"]
    room = engine_call(lambda: s.engine.get_room(room_id))
    if not room["publicFairness"]:
        # The operator keeps this room's report to the management API: as if there were none.
        raise errors.NotFound("This room's fairness report is not public.")
    if room.get("draw") is None:
        raise errors.NotFound("This room's opening has no draw (it has no pre-queue).")
    return room, room["draw"]


def document_key(room: dict[str, Any], draw: dict[str, Any], key: str) -> tuple[Hashable, str]:
    """The cache key of ``room``'s fairness document (everything it reads from the room: a
    change of any is a new document at once) and the URL of its list, for ``?key=key``."""
    # Relative to this document (/queue/<slug>/fairness.json), as verify-draw resolves it;
    # naming the draw's root, so the list there never changes.
    listed = f"fairness/entrants.json?{urlencode({'key': key, 'root': draw.get('root') or ''})}"
    stated = json.dumps(
        [room["id"], room["slug"], room.get("opensAt"), room.get("status"),
         room.get("ratePerMinute"), draw, listed], sort_keys=True, default=str,
    )  # fmt: skip
    return ("fairness", stated), listed


def list_key(room: dict[str, Any], draw: dict[str, Any], named: str | None) -> Hashable:
    """The cache key of ``room``'s drawn list (``named``: the ``?root=`` asked for); 404 before
    the draw, or for a root that is not the room's latest."""
    if draw.get("seed") is None:
        raise errors.NotFound("The draw is not made yet: its entrants are listed after opensAt.")
    root = str(draw.get("root") or "")
    if named is not None and named != root:
        raise errors.NotFound("That draw's list is gone: the room has drawn again since.")
    return ("entrants", room["id"], root)


@routes.view(bp, routes.GET_FAIRNESS)
def fairness(slug: str) -> ResponseReturnValue:
    """The opening's fairness document: commitment at once; seed, root and list once drawn."""
    if not request.environ.get(CHARGED):  # the hot path counted it before handing it over
        limits.charge("fairness")
    room, draw = drawn_room(slug)
    cache_key, listed = document_key(room, draw, request.args.get("key", ""))

    def build() -> bytes:
        return _bytes(document(room, draw, listed).model_dump(mode="json", exclude_unset=True))

    cache, now = documents(), clock()
    built = cache.get(cache_key, build, now, FIGURES_SECONDS)
    return answer(built, REVALIDATE, cache, now)


def _bytes(value: Any) -> bytes:
    """JSON as every process writes it alike (the tag is a hash of these bytes)."""
    return (json.dumps(value, separators=(",", ":")) + "\n").encode("utf-8")


def document(room: dict[str, Any], draw: dict[str, Any], listed: str | None) -> Fairness:
    """The fairness document of ``room``'s opening; ``listed``: its list's URL, once drawn."""
    drawn = draw.get("seed") is not None
    with storage():
        return Fairness(
            room=room["slug"],
            opensAt=room["opensAt"],
            commitment=draw["commitment"],
            committedAt=draw["committedAt"],
            withdrawn=draw.get("withdrawn", []),
            seed=draw.get("seed"),
            root=draw.get("root"),
            entrants=draw.get("entrants"),
            entrantsUrl=listed if drawn else None,
            beacon=draw.get("beacon"),
            guarantee="commitment + beacon" if draw.get("beacon") else "commitment",
            receiptKeys=services().receipts.signer.public_keys,
            **figures(services(), room),
            # a draw across regions: its region, and the regions' parts once all have drawn
            **{k: draw[k] for k in ("region", "regions", "globalRoot") if k in draw},
        )


@management_call(routes.GET_QUEUE_FAIRNESS)
def queue_fairness(call: Call[None], room_id: str) -> ResponseReturnValue:
    """The opening's fairness document, public or not (404 for a room with no draw)."""
    room = load_room(call.key, room_id)
    if room.get("draw") is None:
        raise errors.NotFound("This room's opening has no draw (it has no pre-queue).")
    return document(room, room["draw"], None)


@routes.view(bp, routes.GET_DRAWN_ENTRANTS)
def entrants(slug: str) -> ResponseReturnValue:
    """The entrant ids in drawn order, once drawn (404 before: the list is not frozen yet)."""
    if not request.environ.get(CHARGED):  # the hot path counted it before handing it over
        limits.charge("fairness")
    room, draw = drawn_room(slug)
    cache_key = list_key(room, draw, request.args.get("root"))

    def build() -> bytes:
        with storage():
            ids = services().engine.drawn_entrants(room["id"])
        if len(ids) != draw.get("entrants"):
            # Read while a new opening replaced the draw: not this root's list, not kept.
            raise errors.Unavailable("The room's draw is changing; ask again.", retry_after=1)
        return _bytes(ids)  # strs as Redis holds them: no model to validate 50,000 of them

    cache, now = documents(), clock()
    built = cache.get(cache_key, build, now)
    return answer(built, list_cache_control(request.args.get("root")), cache, now)


def list_cache_control(named: str | None) -> str:
    """A list named by its draw's root never changes; the room's plain list URL does."""
    return IMMUTABLE if named is not None else REVALIDATE


def _moment(ms: int | None) -> str | None:
    """An epoch-ms time as ISO 8601 UTC (the page is no place for a visitor's time zone)."""
    if not ms:
        return None
    return (
        datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


@bp.get("/queue/<slug>/fairness")
def fairness_page(slug: str) -> ResponseReturnValue:
    """The opening's fairness report as a page in the visitor's language, with how to check it
    (the same document as fairness.json; 404 where that answers 404)."""
    try:
        room, draw = drawn_room(slug)
        doc = document(room, draw, None)
    except ApiError as exc:
        if exc.code == 404:
            return pages.error_page(404, "missing", "NotFound", home=True)
        if exc.code == 401:
            return pages.error_page(401, "badkey", "Unauthorized")
        return pages.error_page(503, "unavailable", "Unavailable")
    except StorageError:
        return pages.error_page(503, "unavailable", "Unavailable")
    key = request.args.get("key", "")
    json_url = url_for("fairness.fairness", slug=slug, key=key, _external=True)
    waits = doc.waitSeconds
    lang = pages.page_language()
    html = render_template(
        "fairness.html",
        room_name=(room.get("theme") or {}).get("title") or room["name"],
        doc=doc,
        opens_at=_moment(doc.opensAt),
        committed_at=_moment(doc.committedAt),
        waits=" / ".join("—" if w is None else f"{w:g}" for w in (waits.p50, waits.p90, waits.p99)),
        json_url=json_url,
        # The in-browser check fetches the same document from this page's own origin.
        json_path=url_for("fairness.fairness", slug=slug, key=key),
        # Its script's texts only, embedded as JSON (|tojson escapes <, > and &).
        catalog={k: v for k, v in languages.catalog(lang).items() if k.startswith("fairness.")},
        **pages.language_context(lang),
    )
    return pages.secure(Response(html, mimetype="text/html"))
