"""HTML pages: the hosted waiting page and the error pages, under a strict CSP."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import quote, urlsplit

from flask import Blueprint, Response, current_app, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import NotFound

from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.rooms import room_config as rooms
from anteroom.service_container import Services
from anteroom.visit import room_lookup, turn_notice
from anteroom.visit.agents import agent_verdict
from anteroom.visit.crawlers import RETRY_AFTER_SEC, crawler_verdict
from anteroom.visit.refusals import Refusal
from anteroom.web.pages import page_languages as languages
from anteroom.web.serving import http_errors as errors
from anteroom.web.serving import metrics
from anteroom.web.visitor.visit_door import caller

bp = Blueprint("pages", __name__)

# No inline script anywhere; the agent's proof-of-work worker is started from a blob: URL and
# searches in WebAssembly, which 'wasm-unsafe-eval' allows to compile (it allows no JS eval).
CSP = (
    "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; worker-src blob:; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
THEME_CSS_MAX_AGE = 3600  # its URL carries a hash of the colours, so a change is a new URL


def services() -> Services:
    return current_app.extensions["anteroom"]  # type: ignore[no-any-return]


def secure(response: Response, logo_origin: str | None = None) -> Response:
    """Headers every HTML page carries; a themed room's logo origin joins its img-src only."""
    csp = CSP
    if logo_origin:
        csp = csp.replace("img-src 'self' data:", f"img-src 'self' data: {logo_origin}")
    response.headers["Content-Security-Policy"] = csp
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


def error_page(status: int, which: str, code: str, home: bool = False) -> Response:
    """A plain HTML error page in the visitor's language (``which``: ``notfound``…)."""
    context = language_context(page_language())
    title, message = context["t"](f"{which}.title"), context["t"](f"{which}.message")
    html = render_template(
        "error.html", title=title, message=message, code=code, home=home, **context
    )
    return secure(Response(html, status=status, mimetype="text/html"))


def not_found(exc: NotFound) -> Response:
    """An unknown path: a page for a browser, the JSON error for an API client (by ``Accept``).

    Under ``/api/`` it is always JSON; elsewhere HTML only when the client prefers it to JSON,
    as a browser's navigation does (``text/html`` first, JSON at most ``*/*``).
    """
    wanted = request.accept_mimetypes.best_match(["application/json", "text/html"])
    if request.path.startswith("/api/") or wanted != "text/html":
        return errors.http_error(exc)
    return error_page(404, "missing", "NotFound", home=True)


@bp.get("/queue/<slug>")
def queue_page(slug: str) -> ResponseReturnValue:
    """The hosted waiting page of room ``slug`` for the environment of ``?key=pk_…``."""
    api_key = request.args.get("key", "")
    s = services()
    try:
        env = room_lookup.environment_of(s, api_key)
        room = room_lookup.room_by_slug(s, env, slug)
    except Refusal as refusal:
        if refusal.refused.code == "RoomNotFound":
            return error_page(404, "notfound", "RoomNotFound")
        return error_page(401, "badkey", "Unauthorized")
    except StorageError:
        return error_page(503, "unavailable", "Unavailable")
    return_url = safe_return_url(request.args.get("return", ""), room["redirectUrl"])
    crawler = crawler_answer(s, room, return_url)
    if crawler is not None:
        return crawler
    refused = agent_refusal(s, room)
    if refused is not None:
        return refused
    lang = page_language()
    theme = room.get("theme") or {}
    logo = theme.get("logoUrl")
    colours = theme_colours(theme)
    html = render_template(
        "queue.html",
        room=room,
        title=theme.get("title") or room["name"],
        theme=theme,
        theme_css=(
            url_for("pages.theme_css", slug=slug, key=api_key, v=colours_version(colours))
            if colours
            else None
        ),
        api_key=api_key,
        return_url=return_url,
        # The way in without JavaScript (web/pages/plain_page.py), for the <noscript> parts.
        plain_url=url_for(
            "plain.plain_page", slug=slug, key=api_key, lang=lang, **plain_return(return_url)
        ),
        languages=languages.choices(),
        # Embedded as JSON (|tojson escapes <, > and &) for the script: the one catalog.
        catalog=languages.catalog(lang),
        **language_context(lang),
    )
    logo_origin = rooms.logo_origin(logo) if logo else None
    response = secure(Response(html, mimetype="text/html"), logo_origin)
    # The line is never a page of the site: an engine's crawler that was not verified (or a
    # room that queues them) must not index the waiting page in the shop's place.
    response.headers["X-Robots-Tag"] = "noindex"
    return response


@bp.get("/queue/<slug>/return")
def return_page(slug: str) -> ResponseReturnValue:
    """A turn e-mail's return link (visit/turn_notice.py): a page with one button that spends
    it. Opening the link spends nothing: mail scanners and link previews fetch the links of an
    e-mail before its reader does, and a single-use link spent by them would lock the visitor
    out. A link that is not ours says so at once."""
    link = request.args.get("t", "")
    if not turn_notice.readable(services(), link):
        return returned_page("invalid", None, 400)
    return returned_page("ready", None, 200, link=link)


@bp.post("/queue/<slug>/return")
def return_go(slug: str) -> ResponseReturnValue:
    """The return page's button: admitted once, within the room's return window, to the room's
    redirectUrl with the admission; else a page saying why (late, used, not valid) that offers
    the line again."""
    s = services()
    try:
        outcome = turn_notice.come_back(s, request.form.get("t") or request.args.get("t", ""))
    except StorageError:
        return error_page(503, "unavailable", "Unavailable")
    room = outcome.room
    if outcome.kind == "admitted" and room is not None and outcome.body is not None:
        target = with_admission(room["redirectUrl"], outcome.body["token"])
        return secure(redirect(target, 303))  # type: ignore[arg-type]
    again = None
    if room is not None and room["slug"] == slug:
        key = s.parking.entry_key(room["id"])
        again = url_for("pages.queue_page", slug=slug, key=key) if key else room["redirectUrl"]
    kind = outcome.kind if outcome.kind in ("late", "used") else "invalid"
    return returned_page(kind, again, 410 if kind != "invalid" else 400)


def returned_page(kind: str, again: str | None, status: int, link: str = "") -> Response:
    """The return link's page: ``ready`` (its button), ``late``, ``used`` or ``invalid``."""
    context = language_context(page_language())
    html = render_template(
        "returned.html",
        kind=kind,
        title=context["t"](f"return.{kind}.title"),
        message=context["t"](f"return.{kind}.message"),
        again=again,
        link=link,
        **context,
    )
    response = secure(Response(html, status=status, mimetype="text/html"))
    response.headers["X-Robots-Tag"] = "noindex"
    return response


def crawler_answer(s: Services, room: dict[str, Any], return_url: str | None) -> Response | None:
    """A verified search crawler's answer (visit/crawlers.py): sent on to the site (302) when
    the room lets it through, else 503 with Retry-After; None for anyone else."""
    verdict = crawler_verdict(s, room, request.remote_addr, request.headers.get("User-Agent"))
    if verdict is None:
        return None
    if verdict == "pass":
        response = secure(redirect(return_url or room["redirectUrl"], 302))
    else:
        response = error_page(503, "crawler", "CrawlerQueued")
        response.headers["Retry-After"] = str(RETRY_AFTER_SEC)
    response.headers["X-Robots-Tag"] = "noindex"  # the line is never a page of the site
    return response


def agent_refusal(s: Services, room: dict[str, Any]) -> Response | None:
    """A signed agent's refusal (visit/agents.py): 403 AgentRefused when the room's agents
    setting refuses it, 401 SignatureRefused for a signature that does not hold, as JSON (an
    agent reads no page); None for anyone else, a queued agent included (the page is its way
    in, as anyone's)."""
    verdict = agent_verdict(s, room, caller())
    if verdict is None:
        return None
    metrics.AGENTS.labels(verdict.outcome).inc()
    if verdict.refusal is None:
        return None
    refusal = verdict.refusal
    return errors.to_response(errors.by_code(refusal.code, refusal.message, fields=refusal.fields))


@bp.get("/queue/<slug>/theme.css")
def theme_css(slug: str) -> ResponseReturnValue:
    """The colours of room ``slug``'s theme as CSS custom properties (the CSP allows no inline
    style, so a themed page links this). Only checked colours ever reach it."""
    s = services()
    try:
        room = room_lookup.room_by_slug(
            s, room_lookup.environment_of(s, request.args.get("key", "")), slug
        )
    except (Refusal, StorageError):
        return Response("/* no such theme */", status=404, mimetype="text/css")
    css = theme_stylesheet(theme_colours(room.get("theme") or {}))
    response = Response(css, mimetype="text/css")
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = f"public, max-age={THEME_CSS_MAX_AGE}"
    return response


def theme_colours(theme: dict[str, Any]) -> dict[str, str]:
    """The theme's accent and background with the page's defaults for what it leaves out, or
    {} when it sets no colour (the page keeps its own light and dark schemes then)."""
    if "accentColor" not in theme and "backgroundColor" not in theme:
        return {}
    return {
        "accent": theme.get("accentColor", rooms.DEFAULT_ACCENT),
        "background": theme.get("backgroundColor", rooms.DEFAULT_BACKGROUND),
    }


def colours_version(colours: dict[str, str]) -> str:
    """A short hash naming these colours, so a cached stylesheet is never a stale one."""
    return hashlib.sha256(repr(sorted(colours.items())).encode()).hexdigest()[:12]


def theme_stylesheet(colours: dict[str, str]) -> str:
    """CSS giving the page the operator's colours in both schemes, with the text colour
    (black or white) that reads best on each: the room rules already refused unreadable pairs."""
    if not colours:
        return ""
    accent, background = colours["accent"], colours["background"]
    ink = readable_ink(background)
    on_accent = readable_ink(accent)
    scheme = "dark" if ink == INK_LIGHT else "light"
    return (
        f":root {{ color-scheme: {scheme}; --accent: {accent}; "
        f"--bg: {background}; --card: {background}; --ink: {ink}; --muted: {ink}; "
        f"--on-accent: {on_accent}; }}\n"
    )


INK_DARK, INK_LIGHT, INK_BLACK = "#111111", "#ffffff", "#000000"


def readable_ink(background: str) -> str:
    """Near-black or white, whichever contrasts more with ``background``, and pure black where
    neither reaches 4.5:1: on a mid grey such as #7a7a7a, #111111 gives 4.41:1 and white 4.29:1,
    while black or white always reaches sqrt(21) = 4.58:1 on one side or the other."""
    dark, light = rooms.contrast(INK_DARK, background), rooms.contrast(INK_LIGHT, background)
    if max(dark, light) < rooms.MIN_CONTRAST:
        return INK_BLACK if rooms.contrast(INK_BLACK, background) >= light else INK_LIGHT
    return INK_DARK if dark >= light else INK_LIGHT


def plain_return(return_url: str | None) -> dict[str, str]:
    """The ``return`` query argument handed on to the plain page, if any."""
    return {"return": return_url} if return_url else {}


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


def with_admission(url: str, token: str) -> str:
    """``url`` with ``abq=<token>`` added to its query, before any #fragment (existing query
    kept as it is), as the page's script does (view.js)."""
    base, hash_mark, fragment = url.partition("#")
    separator = "?" if "?" not in base else "" if base.endswith(("?", "&")) else "&"
    return f"{base}{separator}abq={quote(token, safe='')}{hash_mark}{fragment}"
