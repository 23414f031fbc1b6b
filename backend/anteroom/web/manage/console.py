"""The operator console at ``/console`` (issue 14, item 4): pages, sign-in, and its JSON calls.

The pages are shells; ``static/console.js`` fills them from ``/console/api/…``, which runs the
management API's own views as the signed-in key (same scopes, same audit log), so the console can
do nothing the key could not do with ``curl``. Every change needs the session's CSRF token in a
header, and comes from this origin (``Origin``/``Sec-Fetch-Site``), besides the cookie being
``SameSite=Strict``.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from flask import Blueprint, Response, current_app, g, redirect, render_template, request
from flask.typing import ResponseReturnValue

from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.rooms import room_config as rooms
from anteroom.queue.series import room_series
from anteroom.service_container import Services
from anteroom.store.setup_tokens import SetupRefused, SetupTokens
from anteroom.web.manage import console_session as sessions
from anteroom.web.manage import event_api, invite_api, key_api
from anteroom.web.manage import management_api as management
from anteroom.web.pages import fairness
from anteroom.web.serving import http_errors as errors

bp = Blueprint("console", __name__, url_prefix="/console")

# As the hosted page's, without the worker: no inline script or style, nothing from elsewhere.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
CSRF_HEADER = "X-Anteroom-CSRF"


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


def _page(template: str, status: int = 200, **context: Any) -> Response:
    html = render_template(template, **context)
    response = Response(html, status=status, mimetype="text/html")
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


def _same_origin() -> bool:
    """The request was sent by a page of this origin (not a form or script elsewhere)."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None:
        return site == "same-origin"
    origin = request.headers.get("Origin")
    if origin is None:
        return False
    here = urlsplit(request.host_url)
    there = urlsplit(origin)
    return (there.scheme, there.netloc) == (here.scheme, here.netloc)


def _session() -> sessions.ConsoleSession | None:
    cookie = request.cookies.get(sessions.COOKIE, "")
    return sessions.load(services(), cookie) if cookie else None


def _sign_in_page(status: int = 200, error: str = "", setup_error: str = "") -> Response:
    try:
        setup = bool(setup_error) or _setup_tokens().needed()
    except StorageError:
        setup = False
    return _page(
        "console_sign_in.html",
        status=status,
        error=error,
        setup=setup,
        setup_error=setup_error,
        # said from the session's own limits, so the page cannot tell another
        idle_minutes=sessions.IDLE_SEC // 60,
        max_hours=sessions.MAX_SEC // 3600,
    )


def _setup_tokens() -> SetupTokens:
    return SetupTokens(services().redis, services().keys)


def _signed_in(response: Response, cookie: str) -> Response:
    response.set_cookie(
        sessions.COOKIE,
        cookie,
        httponly=True,
        samesite="Strict",
        secure=request.is_secure,
        path="/console",
    )
    return response


@bp.get("")
def home() -> ResponseReturnValue:
    """The rooms of the key's environment, or the sign-in form."""
    try:
        session = _session()
    except StorageError:
        return _sign_in_page(503, "The console cannot reach its storage; try again shortly.")
    if session is None:
        return _sign_in_page()
    return _page(
        "console.html", session=session, page="rooms", room_id="", room_now=0, limits=_limits()
    )


@bp.get("/rooms/<room_id>")
def room_page(room_id: str) -> ResponseReturnValue:
    """One room: charts, summaries, actions, the line and the audit log."""
    session = _session()
    if session is None:
        return redirect("/console", code=303)
    try:
        g.console_key = session.key
        room = management.load_room(session.key, room_id)
    except (errors.RoomNotFound, errors.Forbidden):
        return _page("console.html", status=404, session=session, page="missing", room_id="")
    # The report's public page, as visitors reach it (with the environment's public key), when
    # the room shows it; the console's JSON copy is there either way.
    public_report = None
    has_draw = room.get("draw") is not None  # without one, the report's pages answer 404
    if has_draw and room["publicFairness"]:
        query = urlencode({"key": session.key.public_key})
        public_report = f"/queue/{quote(room['slug'])}/fairness?{query}"
    return _page(
        "console.html",
        session=session,
        page="room",
        room_id=room_id,
        languages=" ".join(rooms.PAGE_LANGUAGES),
        public_report=public_report,
        has_draw=has_draw,
        # The room's clock now: the charts' first span starts from it (without it the series
        # answers its default hour until the next refresh has read the clock).
        room_now=_room_now(room_id),
        # "waiting for beacon round N": the pre-queue waits with the draw; the operator sees why
        draw_waiting=(room.get("draw") or {}).get("waiting"),
        limits=_limits(),
    )


def _limits() -> str:
    """Each integer setting's bounds and default, as JSON, so the forms say them (and the
    API's own check, which the forms show when it refuses, stays the one rule)."""
    out: dict[str, dict[str, Any]] = {}
    for f in rooms.FIELDS:
        if isinstance(f.check, rooms.IntRange):
            check = f.check
            out[f.api] = {"lo": check.lo, "hi": check.hi, "nullable": check.nullable}
            out[f.api]["default"] = f.default
    out |= {f"safetyNet.{k}": {"lo": v.lo, "hi": v.hi} for k, v in rooms.SAFETY_NET_LIMITS.items()}
    return json.dumps(out, separators=(",", ":"))


def _room_now(room_id: str) -> int:
    """The room's clock (epoch ms), or 0 when storage cannot say it now."""
    try:
        with management.storage():
            return int(services().series.now_ms(room_id))
    except errors.ApiError:
        return 0


@bp.post("/sign-in")
def sign_in() -> ResponseReturnValue:
    """Check the secret key once; keep only a session naming it."""
    if not _same_origin():
        return _sign_in_page(403, "Sign in from this console's own page.")
    secret = request.form.get("secret", "").strip()
    try:
        key = services().keystore.authenticate(secret) if secret else None
        if key is None:
            return _sign_in_page(401, "That secret key is not valid (or was revoked).")
        cookie, _ = sessions.start(services(), key)
    except StorageError:
        return _sign_in_page(503, "The console cannot reach its storage; try again shortly.")
    return _signed_in(redirect("/console", code=303), cookie)


@bp.post("/setup")
def setup() -> ResponseReturnValue:
    """Exchange the first start's setup token, once, for the deployment's first secret key."""
    if not _same_origin():
        return _sign_in_page(403, setup_error="Use the setup form on this console's own page.")
    token = request.form.get("setup_token", "")
    environment = request.form.get("environment", "").strip() or "production"
    try:
        record, secret = _setup_tokens().exchange(token, environment)
        cookie, _ = sessions.start(services(), record)
    except SetupRefused as exc:
        return _sign_in_page(403, setup_error=str(exc))
    except ValueError as exc:
        return _sign_in_page(400, setup_error=f"Environment: {exc}.")
    except StorageError:
        return _sign_in_page(503, setup_error="The console cannot reach its storage; try again.")
    page = _page("console_setup_done.html", status=201, record=record, secret=secret)
    return _signed_in(page, cookie)


@bp.post("/sign-out")
def sign_out() -> ResponseReturnValue:
    """End the session (the form carries its CSRF token)."""
    session = _session()
    token = request.form.get("csrf", "")
    if session is not None and _same_origin() and hmac.compare_digest(token, session.csrf):
        sessions.end(services(), session)
    response = redirect("/console", code=303)
    response.delete_cookie(sessions.COOKIE, path="/console")
    return response


# -- the JSON calls of console.js --------------------------------------------------------------


def _as_key(view: Callable[..., ResponseReturnValue]) -> Callable[..., ResponseReturnValue]:
    """Run a management view as the session's key; changes need the CSRF header too."""

    def run(**url: Any) -> ResponseReturnValue:
        session = _session()
        if session is None:
            raise errors.Unauthorized("Sign in again: the console session has ended.")
        if request.method != "GET":
            given = request.headers.get(CSRF_HEADER, "")
            if not _same_origin() or not hmac.compare_digest(given, session.csrf):
                raise errors.Forbidden("This change did not come from the console's page.")
        g.console_key = session.key
        return view(**url)

    run.__name__ = f"console_{view.__name__}"
    return run


@bp.after_request
def no_store(response: Response) -> Response:
    response.headers["Cache-Control"] = "no-store"
    return response


def held_by_score() -> ResponseReturnValue:
    """Held visitors per score, so a holdScore change can say how many it would release."""
    room_id = request.view_args["room_id"] if request.view_args else ""
    key = g.console_key
    management.load_room(key, room_id)
    with management.storage():
        held = room_series.held_by_score(services().redis, services().keys, room_id)
    return {"byScore": {str(score): count for score, count in sorted(held.items())}}


bp.add_url_rule("/api/queues", view_func=_as_key(management.list_queues))
bp.add_url_rule("/api/queues", view_func=_as_key(management.create_queue), methods=["POST"])
bp.add_url_rule(
    "/api/queues/<room_id>", view_func=_as_key(management.delete_queue), methods=["DELETE"]
)
bp.add_url_rule(
    "/api/sessions/revoke", view_func=_as_key(management.revoke_session), methods=["POST"]
)
bp.add_url_rule("/api/queues/<room_id>", view_func=_as_key(management.get_queue))
bp.add_url_rule(
    "/api/queues/<room_id>", view_func=_as_key(management.update_queue), methods=["PATCH"]
)
bp.add_url_rule("/api/queues/<room_id>/series", view_func=_as_key(management.queue_series))
bp.add_url_rule(
    "/api/queues/<room_id>/held",
    view_func=_as_key(lambda room_id: held_by_score()),
    endpoint="console_held",
)
bp.add_url_rule("/api/audit", view_func=_as_key(management.audit))
bp.add_url_rule("/api/queues/<room_id>/events", view_func=_as_key(event_api.list_events))
bp.add_url_rule(
    "/api/queues/<room_id>/events",
    view_func=_as_key(event_api.create_event),
    methods=["POST"],
    endpoint="console_create_event",
)
bp.add_url_rule(
    "/api/queues/<room_id>/events/<event_id>",
    view_func=_as_key(event_api.cancel_event),
    methods=["DELETE"],
)
bp.add_url_rule("/api/queues/<room_id>/fairness", view_func=_as_key(fairness.queue_fairness))
bp.add_url_rule(
    "/api/queues/<room_id>/invites",
    view_func=_as_key(management.create_invites),
    methods=["POST"],
    endpoint="console_create_invites",
)
bp.add_url_rule("/api/queues/<room_id>/invites", view_func=_as_key(invite_api.list_invites))
bp.add_url_rule(
    "/api/queues/<room_id>/invites/<invite_id>",
    view_func=_as_key(invite_api.withdraw_invite),
    methods=["DELETE"],
)
bp.add_url_rule("/api/keys", view_func=_as_key(key_api.list_keys))
bp.add_url_rule(
    "/api/keys",
    view_func=_as_key(key_api.create_key),
    methods=["POST"],
    endpoint="console_create_key",
)
bp.add_url_rule("/api/keys/<key_id>", view_func=_as_key(key_api.revoke_key), methods=["DELETE"])
