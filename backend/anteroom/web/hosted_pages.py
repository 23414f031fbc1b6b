"""HTML pages: the hosted waiting page and the error pages, under a strict CSP."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, render_template, request
from flask.typing import ResponseReturnValue

from anteroom.queue.redis_link import StorageError
from anteroom.service_container import Services
from anteroom.web import page_languages as languages
from anteroom.web import queue_answers as visitor
from anteroom.web.http_errors import ApiError

bp = Blueprint("pages", __name__)

# No inline script anywhere; the agent's proof-of-work worker is started from a blob: URL.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


def secure(response: Response) -> Response:
    """Headers every HTML page carries."""
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


def page_language() -> str:
    """The visitor's language: ``?lang=``, else ``Accept-Language``, else English."""
    return languages.negotiate(request.args.get("lang"), request.accept_languages)


def language_context(lang: str) -> dict[str, Any]:
    """What every page template gets to speak ``lang``: ``lang``, ``dir`` and ``t(key, …)``."""

    def t(key: str, **values: Any) -> str:
        return languages.translate(lang, key, **values)

    return {"lang": lang, "dir": languages.direction(lang), "t": t}


def error_page(status: int, which: str, code: str) -> Response:
    """A plain HTML error page in the visitor's language (``which``: ``notfound``…)."""
    context = language_context(page_language())
    title, message = context["t"](f"{which}.title"), context["t"](f"{which}.message")
    html = render_template("error.html", title=title, message=message, code=code, **context)
    return secure(Response(html, status=status, mimetype="text/html"))


@bp.get("/queue/<slug>")
def queue_page(slug: str) -> ResponseReturnValue:
    """The hosted waiting page of room ``slug`` for the environment of ``?key=pk_…``."""
    api_key = request.args.get("key", "")
    s = services()
    try:
        env = visitor.environment_of(s, api_key)
        room = visitor.room_by_slug(s, env, slug)
    except ApiError as exc:
        if exc.code == 404:
            return error_page(404, "notfound", "RoomNotFound")
        return error_page(401, "badkey", "Unauthorized")
    except StorageError:
        return error_page(503, "unavailable", "Unavailable")
    return_url = safe_return_url(request.args.get("return", ""), room["redirectUrl"])
    lang = page_language()
    html = render_template(
        "queue.html",
        room=room,
        title=room["name"],
        api_key=api_key,
        return_url=return_url,
        languages=languages.choices(),
        # Embedded as JSON (|tojson escapes <, > and &) for the script: the one catalog.
        catalog=languages.catalog(lang),
        **language_context(lang),
    )
    return secure(Response(html, mimetype="text/html"))


def safe_return_url(candidate: str, redirect_url: str) -> str | None:
    """``candidate`` when it is an absolute URL on the origin of the room's ``redirectUrl``.

    Anything else (another origin, a scheme-relative or relative URL, javascript:) is dropped,
    so the page can never be turned into an open redirect.
    """
    if not candidate or len(candidate) > 2000:
        return None
    try:
        want, got = urlsplit(redirect_url), urlsplit(candidate)
        same = (got.scheme, got.hostname, got.port) == (want.scheme, want.hostname, want.port)
    except ValueError:
        return None
    plain = got.username is None and got.password is None  # no user@host tricks
    return candidate if same and plain and got.scheme in ("http", "https") else None
