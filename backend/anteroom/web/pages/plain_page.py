"""The hosted page without JavaScript: server-rendered, refreshing itself, no proof of work.

``GET /queue/<slug>/plain?key=pk_…`` is where the hosted page sends a browser with JavaScript
off (a ``<noscript>`` refresh and link). A first visit queues the visitor at once, at the
room's ``noScriptScore`` (default just below ``holdScore``; at or above it they are held), or at
the score the signal rules give the request if that is worse, within the same per-address
limits as the visitor API's identify and enter. The spot's ticket (a signed ``qt1``) rides in an
HttpOnly cookie scoped to this page; each refresh (``<meta http-equiv="refresh">``, at the
server's ``pollAfterMs``) polls it, unless the visitor turned the refresh off (``refresh=off``:
a page that reloads on its own moves a screen reader back to its top, so the visitor may check
by a link instead, told how often to keep the place); once admitted, a ``303`` sends the
visitor to the room's ``redirectUrl`` (or the checked return URL) with ``?abq=<token>``
appended, as the script does.
"""

from __future__ import annotations

import math
from typing import Any

from flask import Blueprint, Response, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.rooms import room_config as rooms
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import arrival, outcomes, room_lookup, waiting
from anteroom.visit.refusals import Refusal
from anteroom.web.pages import hosted_pages as pages
from anteroom.web.pages import page_languages as languages
from anteroom.web.serving.http_errors import (
    AddressRequired,
    ApiError,
    QueueDenied,
    RateLimited,
    RoomClosed,
)
from anteroom.web.visitor.visit_door import WebDoor, caller, refused

bp = Blueprint("plain", __name__)
COOKIE = "_abt"  # the plain page's queue ticket
MIN_REFRESH_SEC, MAX_REFRESH_SEC = 2, 120


@bp.get("/queue/<slug>/plain")
def plain_page(slug: str) -> ResponseReturnValue:
    """The no-JavaScript waiting page of room ``slug`` (module docstring)."""
    s = pages.services()
    api_key = request.args.get("key", "")
    try:
        env = room_lookup.environment_of(s, api_key)
        room = room_lookup.room_by_slug(s, env, slug)
    except Refusal as refusal:
        if refusal.refused.code == "RoomNotFound":
            return pages.error_page(404, "notfound", "RoomNotFound")
        return pages.error_page(401, "badkey", "Unauthorized")
    except StorageError:
        return pages.error_page(503, "unavailable", "Unavailable")
    target = pages.safe_return_url(request.args.get("return", ""), room["redirectUrl"])
    crawler = pages.crawler_answer(s, room, target)
    if crawler is not None:
        return crawler  # before the spot is taken: a crawler is never in the line
    lang = pages.page_language()
    context = pages.language_context(lang)
    try:
        answer = _poll(s, env, room) or _enter(s, env, room)
    except QueueDenied:
        return _page(room, context, "error.QueueDenied", None, status=403, ticket="")
    except AddressRequired:
        return _page(room, context, "error.AddressRequired", None, status=403, ticket="")
    except RoomClosed:  # mode reject: said as an idle room says it, asked again later
        return _page(room, context, "status.idle", MAX_REFRESH_SEC, status=403, ticket="")
    except RateLimited as exc:
        return _page(room, context, "status.queueFull", exc.retry_after, status=429)
    except (ApiError, StorageError) as exc:
        retry = getattr(exc, "retry_after", None) or 5
        return _page(room, context, "status.unreachable", retry, status=503)
    if answer["status"] == "admitted" and answer.get("token"):
        target = pages.safe_return_url(request.args.get("return", ""), room["redirectUrl"])
        response = redirect(with_admission(target or room["redirectUrl"], answer["token"]), 303)
        response.delete_cookie(COOKIE, path=request.path)
        return pages.secure(response)
    refresh = refresh_seconds(answer.get("pollAfterMs"))
    key, values = status_text(answer)
    return _page(
        room,
        context,
        key,
        refresh,
        values=values,
        eta=eta_text(lang, answer.get("etaSeconds")),
        odds=odds_text(context["t"], answer.get("odds")),
        ticket=answer.get("queueToken") or "",
    )


def _poll(s: Services, env: str, room: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to the cookie's ticket (visit.waiting.poll), or None when there is none
    worth polling: none, not ours, of another room, or gone (a new visit starts afresh)."""
    ticket = request.cookies.get(COOKIE, "")
    if not ticket:
        return None
    try:
        claims = tokens.TicketClaims.from_wire(tokens.decode(s.keyring, ticket, tokens.TICKET))
    except tokens.TokenError:
        return None
    if claims.environment != env or claims.room_id != room["id"]:
        return None
    # A fresh ticket on every answer (polled=None): the cookie lasts as long as the ticket.
    answer = waiting.poll(s, claims, request.remote_addr)
    if isinstance(answer, outcomes.Refused):
        if answer.code == "TicketGone":
            return None
        refused(answer)
    return answer.body


def _enter(s: Services, env: str, room: dict[str, Any]) -> dict[str, Any]:
    """Queue a visitor without a proof of work (visit.arrival.enter_without_script)."""
    answer = arrival.enter_without_script(s, WebDoor(s), env, caller(), room)
    if isinstance(answer, outcomes.Refused):
        refused(answer)
    return answer.body


def _page(
    room: dict[str, Any],
    context: dict[str, Any],
    key: str,
    refresh: int | None,
    *,
    values: dict[str, Any] | None = None,
    eta: str | None = None,
    odds: str | None = None,
    status: int = 200,
    ticket: str | None = None,
) -> Response:
    title = (room.get("theme") or {}).get("title") or room["name"]
    text = context["t"](key, room=title, **(values or {}))
    # The links keep the page's query (key, lang, return) and say only whether it refreshes.
    args = {k: v for k, v in request.args.items() if k != "refresh"}
    args["slug"] = (request.view_args or {}).get("slug", room.get("slug", ""))
    html = render_template(
        "queue_plain.html",
        room=room,
        title=title,
        status_text=text,
        eta=eta,
        odds=odds,
        refresh=refresh,
        manual=request.args.get("refresh") == "off",
        manual_url=url_for("plain.plain_page", **(args | {"refresh": "off"})),
        auto_url=url_for("plain.plain_page", **args),
        keep_minutes=max(1, rooms.quiet_spot_kept_sec(room) // 60),
        **context,
    )
    response = pages.secure(Response(html, status=status, mimetype="text/html"))
    response.headers["X-Robots-Tag"] = "noindex"  # as the waiting page: never indexed
    if refresh is not None:
        response.headers["Retry-After"] = str(refresh)
    if ticket is not None:
        life = rooms.queue_token_life(room)
        secure = request.is_secure
        if ticket:
            response.set_cookie(
                COOKIE,
                ticket,
                max_age=life,
                path=request.path,
                secure=secure,
                httponly=True,
                samesite="Lax",
            )
        else:
            response.delete_cookie(COOKIE, path=request.path)
    return response


def refresh_seconds(poll_after_ms: Any) -> int:
    """How often the page refreshes itself: the server's poll cadence, within bounds."""
    if not isinstance(poll_after_ms, int) or poll_after_ms <= 0:
        return 5
    return min(MAX_REFRESH_SEC, max(MIN_REFRESH_SEC, math.ceil(poll_after_ms / 1000)))


def status_text(answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The catalog key (and its values) saying where the visitor stands."""
    status = answer["status"]
    if status == "waiting":
        if answer.get("roomStatus") == "paused":
            return "status.paused", {}
        if answer.get("odds") is not None:  # a random room's draw: no place to tell
            return "status.draw", {}
        if answer.get("position"):
            return "status.waiting", {"position": answer["position"]}
        return "status.waitingNoPosition", {}
    if status == "held":
        return "status.held", {}
    if status == "admitted":
        return "status.admitted", {}
    return "status.idle", {}


def odds_text(translate: Any, odds: Any) -> str | None:
    """A random room's odds in words, as the page's script says them (view.js oddsText):
    "about a 1 in 40 chance in the next minute"; None without odds."""
    if not isinstance(odds, int | float) or isinstance(odds, bool):
        return None
    n = round(1 / odds) if odds > 0 else 0
    return str(translate(f"odds.{min(n, 2) if odds > 0 else 0}", n=n))


def eta_text(lang: str, seconds: Any) -> str | None:
    """The wait in words (the catalog's counting forms: one, else other), or None."""
    if not isinstance(seconds, int | float) or seconds < 0:
        return None
    if seconds < 60:
        return languages.translate(lang, "eta.soon")
    key, count = (
        ("eta.minutes", math.ceil(seconds / 60))
        if seconds < 3600
        else ("eta.hours", round(seconds / 3600))
    )
    forms = languages.catalog(lang).get(key) or languages.catalog("en")[key]
    form = forms.get("one") if count == 1 and "one" in forms else forms.get("other")
    return str(form).replace("{count}", str(count))


# The one writer of it is the hosted pages' (the return link admits the same way).
with_admission = pages.with_admission
