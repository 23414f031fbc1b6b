"""The front door ``GET /`` (issue 14, item 7) and ``GET /docs``, the API reference page.

The front door says what this server is and links what it serves; in demo mode it links the
demo rooms' hosted pages and says where the demo's secret key is (the terminal of
``anteroom serve``): a page never shows a secret key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, Response, current_app, render_template
from flask.typing import ResponseReturnValue

from anteroom import __version__
from anteroom.queue.connection.storage_errors import StorageError
from anteroom.service_container import Services
from anteroom.web.manage.console import CSP
from anteroom.web.pages.demo_shop import DEMO_ENV, DEMO_PUBLIC_KEY

bp = Blueprint("front_door", __name__)


def _page(template: str, **context: Any) -> Response:
    response = Response(render_template(template, **context), mimetype="text/html")
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


def _demo_rooms(s: Services) -> list[dict[str, str]]:
    """The demo environment's rooms (slug and name), or none when Redis cannot say."""
    try:
        ids = s.engine.list_rooms(DEMO_ENV)
        rooms = [s.engine.get_room(room_id) for room_id in ids.values()]
    except StorageError:
        return []
    except Exception:  # a room deleted between the two reads
        return []
    return sorted(({"slug": r["slug"], "name": r["name"]} for r in rooms), key=lambda r: r["slug"])


@bp.get("/")
def home() -> ResponseReturnValue:
    """What this server is, and links to everything it serves."""
    s: Services = current_app.extensions["anteroom"]
    demo = s.settings.demo_enabled
    rooms = _demo_rooms(s) if demo else []
    return _page(
        "front_door.html", version=__version__, demo=demo, rooms=rooms, public_key=DEMO_PUBLIC_KEY
    )


@bp.get("/favicon.ico")
def favicon() -> ResponseReturnValue:
    """Browsers ask for /favicon.ico whatever the page links: the SVG icon, not a 404."""
    icon = Path(current_app.static_folder or "", "favicon.svg").read_bytes()  # 200 bytes
    response = Response(icon, mimetype="image/svg+xml")
    response.headers["Cache-Control"] = "public, max-age=86400"
    return response


@bp.get("/docs")
def docs() -> ResponseReturnValue:
    """The API reference: Swagger UI, bundled in ``static/``, drawing ``/api/openapi.json``."""
    return _page("api_reference.html", document_url="/api/openapi.json")
