"""The edge's decision: request facts in, what to do out. No WSGI, no sockets, no HTTP calls.

``decide(facts, config, state)`` says whether a request passes untouched, passes with an
admission (and headers to add to the app's answer), is answered by the edge itself (307
hand-over, 303 to the hosted page, 429 ``QueueRequired``, 400 for an ambiguous path, 204 for a
CORS preflight), or first needs an answer from Anteroom (``call``: poll a ticket, renew an
admission). A ``call`` names the request to make and what to do with the answer: the adapter
makes it (``edge_client.settle``) and feeds the answer back to ``call.then``, which decides. The
rules are the shared table in ``tests/fixtures/edge_cases.json``, which drives this function
with Anteroom's canned answers and no transport, as it drives the Node twin ``edge-decision.js``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, unquote_plus, urlencode

from anteroom.sdk import bypass_rules
from anteroom.sdk.crawlers import (
    DEFAULT_TIMEOUT,
    ENGINE_NAMES,
    ENGINES,
    CrawlerCheck,
    Engine,
    claimed_engine,
)
from anteroom.sdk.edge_paths import PathMatch, RouteTable
from anteroom.sdk.message_signatures import SignatureError, SignedRequest
from anteroom.sdk.signed_agents import (
    AgentVerifier,
    Directories,
    Nonces,
    agents_problem,
    https_fetch,
    policy_for,
)
from anteroom.sdk.tokens import NOT_RENEWABLE, Keyring
from anteroom.sdk.verification import verify_admission

COOKIE = "_abq"
HANDOVER_PARAM = "abq"
ADMISSION_HEADER = "Anteroom-Admission"
TICKET_HEADER = "Anteroom-Ticket"
REASON_HEADER = "Anteroom-Enforcement"
AMBIGUOUS_PATH = "queue:ambiguous-path"
QUEUE_RETRY_SEC = 5
POLL_PATH = "/api/v1/queue/poll"
REFRESH_PATH = "/api/v1/admission/refresh"
# Renewal attempts remembered per admission (jti), so a burst of requests renews once.
MAX_TRACKED_RENEWALS = 10_000
# Admissions already verified, kept so a visitor's next requests skip the signature and parsing.
MAX_VERIFIED = 4_096


def _remote_addr(environ: dict[str, Any]) -> str | None:
    return environ.get("REMOTE_ADDR")


def _no_session(environ: dict[str, Any]) -> str | None:
    return None


def _header_value(value: Any) -> bool:
    """A header's value, or a list of them."""
    listed = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    return isinstance(value, str) or listed


@dataclass
class EdgeConfig:
    """What the middleware needs: the keyring, where Anteroom is, and what to protect.

    ``client_ip(environ)`` gives the visitor's address (behind a proxy, put ``ProxyFix`` outside
    the middleware or pass your own); ``session_jti(environ)`` the Anteroom session the request
    presents, when the site knows one (its admission must have been earned by that session).
    ``secure_cookie`` marks the ``_abq`` cookie ``Secure`` (turn it off only for plain-http local
    development: an https request still gets it). ``case_sensitive`` matches routes exactly
    (the default ignores case, as Express does, which over-protects a case-sensitive app
    harmlessly). ``clock`` is injectable so tests can move time instead of waiting.

    ``mount`` is the prefix the app is served under (its ``SCRIPT_NAME``) when the routes are
    written as the browser sees them (``/shop/checkout``); ``languages`` the language prefixes
    (Django's ``i18n_patterns``) a route may follow. A CORS preflight to a protected path is
    answered by the edge (``204``, ``preflight_headers``, no body) unless the app says it
    answers ``OPTIONS`` itself (``app_answers_options``). In ``preflight_headers`` an
    ``Access-Control-Allow-Origin`` may list origins: the request's is echoed when listed.

    ``bypass`` is the room's bypass rules (docs/operators.md, "Bypass rules"), in the format the
    management API takes, with the secrets in clear (the site's own config, like ``keys``): a
    protected request a rule matches passes to the app with no admission check. The service never
    hands out the secrets nor their hashes; see ``bypass_rules`` for why the edge compares them in
    clear, in constant time.

    ``crawlers`` is the room's setting of the same name (docs/operators.md, "Search crawlers"):
    ``"queue"`` (the default: no check, a crawler is refused as anyone is), ``"pass"`` (verified
    crawlers of every known engine pass to the app with no admission) or a list of engines
    (``["google", "bing"]``). A claim is verified by reverse then forward DNS (``crawlers``),
    asking ``dns_resolver`` (``ip:port``; "" for the system's first nameserver) within
    ``dns_timeout`` seconds; a claim that fails, or no answer in time, is refused as anyone is.

    ``agents`` is the room's setting of the same name (docs/operators.md, "Signed agents"): a
    key directory's host, or ``"*"`` for any verified agent, mapped to ``"queue"``, ``"lane"``
    or ``"refuse"``; ``{}`` (the default) checks no signature. A request to a protected path with
    no admission that carries a Web Bot Auth signature is verified (RFC 9421, Ed25519; the
    directory fetched over HTTPS within ``agent_timeout`` seconds, trusting the system's CAs
    and ``agent_ca_file``, kept for its max-age; nonces kept in this process): an agent whose
    policy is ``refuse`` is answered 403 ``AgentRefused``, a signature that does not hold 401
    ``SignatureRefused`` naming why, and any other is refused as anyone without an admission
    is (it queues at the service, where a signed arrival pays no proof of work). A request
    with an admission is decided by it alone: an agent pays the check once per admission.
    """

    keys: str | Mapping[str, bytes] | Keyring
    base_url: str
    public_key: str
    routes: Mapping[str, str]  # path prefix → room slug
    refresh_after: float = 15.0
    timeout: float = 2.0
    pause_after_failure: float = 5.0  # seconds without calls to Anteroom after it failed us
    secure_cookie: bool = True
    case_sensitive: bool = False
    client_ip: Callable[[dict[str, Any]], str | None] = field(default=_remote_addr)
    session_jti: Callable[[dict[str, Any]], str | None] = field(default=_no_session)
    clock: Callable[[], float] = time.time
    mount: str = ""
    languages: Sequence[str] = ()
    preflight_headers: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    app_answers_options: bool = False
    bypass: Sequence[Mapping[str, Any] | bypass_rules.Rule] = ()
    crawlers: str | Sequence[str] = "queue"
    dns_resolver: str = ""
    dns_timeout: float = DEFAULT_TIMEOUT
    agents: Mapping[str, str] = field(default_factory=dict)
    agent_ca_file: str = ""
    agent_timeout: float = 2.0
    # key directories on private addresses (a test's, or an agent inside your own network)
    agent_private_directories: bool = False
    route_table: RouteTable = field(init=False, repr=False)
    bypass_rules: tuple[bypass_rules.Rule, ...] = field(init=False, repr=False)
    crawler_engines: tuple[Engine, ...] = field(init=False, repr=False)
    crawler_check: CrawlerCheck | None = field(init=False, repr=False)
    agent_verifier: AgentVerifier | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.keys = Keyring.coerce(self.keys)
        if not isinstance(self.base_url, str) or not self.base_url.startswith(
            ("http://", "https://")
        ):
            raise ValueError(f"base_url must be an absolute http(s) URL, not {self.base_url!r}")
        self.base_url = self.base_url.rstrip("/")
        if not isinstance(self.public_key, str) or not self.public_key.startswith("pk_"):
            raise ValueError("public_key must be a public key (pk_…)")
        if not self.routes or not all(p.startswith("/") for p in self.routes):
            raise ValueError("routes must map path prefixes ('/…') to room slugs")
        if self.refresh_after <= 0:
            raise ValueError("refresh_after must be positive")
        if not isinstance(self.mount, str) or (self.mount and not self.mount.startswith("/")):
            raise ValueError("mount must be a path prefix ('/shop')")
        if isinstance(self.languages, str) or not all(
            isinstance(lang, str) and lang for lang in self.languages
        ):
            raise ValueError("languages must be a list of language prefixes (['fr', 'de'])")
        if not all(_header_value(v) for v in self.preflight_headers.values()):
            raise ValueError("preflight_headers maps header names to a value or a list of values")
        self.route_table = RouteTable(
            self.routes, self.case_sensitive, mount=self.mount, languages=self.languages
        )
        given = list(self.bypass)
        if all(isinstance(rule, bypass_rules.Rule) for rule in given):
            self.bypass_rules = tuple(given)  # type: ignore[arg-type]
        else:
            self.bypass_rules = tuple(bypass_rules.parse_rules(given))  # RuleError names it
        self.crawler_engines = _crawler_engines(self.crawlers)
        self.crawler_check = None
        if self.crawler_engines:
            if not 0 < self.dns_timeout <= 10:
                raise ValueError("dns_timeout must be from 0 to 10 seconds")
            try:
                self.crawler_check = CrawlerCheck(self.dns_resolver, self.dns_timeout)
            except ValueError as exc:
                raise ValueError(f"dns_resolver: {exc}") from None
        problem = agents_problem(dict(self.agents) if isinstance(self.agents, Mapping) else None)
        if problem:
            raise ValueError(f"agents {problem}")
        self.agent_verifier = None
        if self.agents:
            if not 0 < self.agent_timeout <= 10:
                raise ValueError("agent_timeout must be from 0 to 10 seconds")
            if not isinstance(self.agent_private_directories, bool):
                raise ValueError("agent_private_directories must be True or False")
            try:
                fetch = https_fetch(
                    self.agent_timeout, self.agent_ca_file or None, self.agent_private_directories
                )
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                raise ValueError(f"agent_ca_file: not a readable PEM file ({exc})") from None
            self.agent_verifier = AgentVerifier(
                Directories(fetch, self.clock), Nonces(), self.clock
            )

    def claims_crawler(self, user_agent: str | None) -> bool:
        """Does ``user_agent`` claim a crawler this edge lets through? (No DNS: a claim only.)"""
        return (
            bool(self.crawler_engines)
            and claimed_engine(user_agent, self.crawler_engines) is not None
        )

    def verified_crawler(self, client_ip: str | None, user_agent: str | None) -> str | None:
        """The engine's name when the request is a verified crawler this edge lets through, else
        None. Asks DNS (blocking, ``dns_timeout`` at most) for an address not yet known."""
        if self.crawler_check is None or not self.claims_crawler(user_agent):
            return None
        engine = self.crawler_check.verified(client_ip, user_agent, self.crawler_engines)
        return None if engine is None else engine.name

    def checks_agent(self, facts: Facts) -> bool:
        """Is this a request whose signature the edge checks? (Agents set, a signature there,
        no admission: an admitted agent is decided by its admission alone.)"""
        return (
            self.agent_verifier is not None
            and bool(facts.header("signature-input"))
            and not facts.header("anteroom-admission")
            and cookie_value(facts.header("cookie"), COOKIE) is None
        )

    def signed_agent(self, facts: Facts, request: SignedRequest) -> AgentFacts | None:
        """The verdict on ``request``'s signature when :meth:`checks_agent`, else None. May
        fetch the agent's key directory (blocking, ``agent_timeout`` at most)."""
        if self.agent_verifier is None or not self.checks_agent(facts):
            return None
        try:
            agent = self.agent_verifier.verify(
                request, lambda directory: policy_for(self.agents, directory) is not None
            )
        except SignatureError as exc:
            return AgentFacts("invalid", exc.reason, None)
        if agent is None:
            return None
        policy = policy_for(self.agents, agent.directory)
        return AgentFacts("refused" if policy == "refuse" else "verified", None, agent.directory)

    def bypass_headers(self) -> tuple[str, ...]:
        """The request headers the bypass rules read (lower-case), beyond the edge's own."""
        return tuple(r.name for r in self.bypass_rules if r.kind == "header" and r.name)


def _crawler_engines(value: Any) -> tuple[Engine, ...]:
    """The engines whose verified crawlers pass, from the ``crawlers`` option."""
    if value == "queue":
        return ()
    if value == "pass":
        return ENGINES
    names = ", ".join(ENGINE_NAMES)
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise ValueError(f'crawlers must be "queue", "pass" or a list of engines among {names}')
    unknown = [name for name in value if name not in ENGINE_NAMES]
    if unknown:
        raise ValueError(f"crawlers: {unknown[0]!r} is not an engine ({names})")
    return tuple(e for e in ENGINES if e.name in value)


@dataclass(frozen=True, slots=True)
class AgentFacts:
    """A signed request's verdict at the edge: ``invalid`` (``reason``: why), ``refused`` (by
    the policy) or ``verified`` (refused as anyone without an admission is)."""

    outcome: Literal["invalid", "refused", "verified"]
    reason: str | None
    directory: str | None


@dataclass(slots=True)
class Facts:
    """What the decision needs to know of a request.

    ``path`` is decoded, as the app routes it (WSGI ``PATH_INFO``); ``raw_path`` is how the
    client spelled it (None when the server does not say); ``script_name`` the prefix the app
    was reached under (``SCRIPT_NAME``); ``url_path`` is the path of the request's own URL, for
    the URLs the edge builds. ``headers`` holds lower-case names. ``crawler`` names the engine
    when the adapter verified the request as a crawler the edge lets through
    (``EdgeConfig.verified_crawler``: DNS, which ``decide`` never asks itself).
    """

    method: str
    path: str
    query: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_path: str | None = None
    url_path: str = "/"
    scheme: str = "http"
    host: str = "localhost"
    client_ip: str | None = None
    session_jti: str | None = None
    now: float = 0.0
    script_name: str = ""
    crawler: str | None = None
    agent: AgentFacts | None = None  # a signed request's verdict (EdgeConfig.signed_agent)

    def header(self, name: str) -> str:
        return self.headers.get(name, "") or ""


@dataclass(slots=True)
class Call:
    """A request to Anteroom the decision needs: POST ``body`` (JSON) to ``path``; ``then``
    takes (HTTP status, JSON object, now) — status 0 when Anteroom could not be reached — and
    decides."""

    path: str
    body: dict[str, Any]
    then: Callable[[int, dict[str, Any], float], Decision]


@dataclass(slots=True)
class Decision:
    """``pass`` untouched; ``admit`` with ``claims`` and ``headers`` added to the app's answer;
    ``respond`` with ``status``, ``headers`` and a JSON ``body`` (None: empty) of the edge's own;
    ``call`` Anteroom first (``call``), then decide with its answer."""

    kind: Literal["pass", "admit", "respond", "call"]
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: dict[str, Any] | None = None
    reason: str | None = None
    claims: dict[str, Any] | None = None
    call: Call | None = None
    bypass_rule: int | None = None  # ``pass`` by a bypass rule: its index in ``config.bypass``
    crawler: str | None = None  # ``pass`` of a verified crawler: its engine


def _pass() -> Decision:
    return Decision("pass")


class EdgeState:
    """What the edge remembers between requests: verified admissions, renewal attempts, and
    until when Anteroom is left alone after it failed us (an outage so costs one timeout, not one
    per request)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.verified: dict[tuple[str, str, str | None, str | None], dict[str, Any]] = {}
        self.renewed_at: OrderedDict[str, float] = OrderedDict()
        self.verifications = 0  # full signature checks made: what the cache saves
        self.paused_until = 0.0

    def paused(self, now: float) -> bool:
        """No calls to Anteroom now: it failed us less than ``pause_after_failure`` s ago."""
        return now < self.paused_until

    def answered(self, status: int, now: float, pause: float) -> None:
        """Note how Anteroom answered: unreachable (0) or a 5xx pauses calls for ``pause`` s."""
        if status == 0 or status >= 500:
            self.paused_until = now + pause

    def renewal_due(self, jti: str, now: float, every: float) -> bool:
        """Claim the renewal of ``jti``: once per ``every`` seconds, whatever the answer."""
        with self.lock:
            last = self.renewed_at.get(jti)
            # Requests still carrying the old cookie (in flight, other tabs) renew once, and a
            # refused renewal is not asked again on every request.
            if last is not None and now - last < every:
                return False
            self.renewed_at[jti] = now
            self.renewed_at.move_to_end(jti)
            while len(self.renewed_at) > MAX_TRACKED_RENEWALS:
                self.renewed_at.popitem(last=False)
            return True


# -- reading the request ----------------------------------------------------------------------


def cookie_value(header: str, name: str) -> str | None:
    """The value of cookie ``name`` in a ``Cookie`` header, or None."""
    if not header or name not in header:
        return None
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def split_handover(query: str) -> tuple[str | None, str]:
    """(the last ``abq`` value, the query without it), other parameters verbatim and in order."""
    token: str | None = None
    kept: list[str] = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if unquote_plus(name) == HANDOVER_PARAM:
            token = unquote_plus(value)
        elif part:
            kept.append(part)
    return token, "&".join(kept)


def is_navigation(facts: Facts) -> bool:
    """A browser loading a page (it can follow a 303 to the hosted page)."""
    if facts.method not in ("GET", "HEAD"):
        return False
    mode = facts.header("sec-fetch-mode")
    if mode and mode != "navigate":
        return False
    accept = facts.header("accept")
    return "text/html" in accept and "application/json" not in accept.split(",")[0]


def url_of(facts: Facts, query: str | None = None) -> str:
    """The request's absolute URL, with ``query`` in place of its own when given."""
    query = facts.query if query is None else query
    return f"{facts.scheme}://{facts.host}{facts.url_path}" + (f"?{query}" if query else "")


# -- deciding ---------------------------------------------------------------------------------


def check(
    token: str, facts: Facts, config: EdgeConfig, state: EdgeState, room: str
) -> tuple[str | None, dict[str, Any]]:
    """(refusal reason or None, a copy of the claims) for an admission token."""
    # A visitor shows the same token on every request. Once it verified for this room, address
    # and session, nothing in it can change but its age: only expiry is checked again (as
    # verify_admission does: expired when exp <= now).
    key = (token, room, facts.client_ip, facts.session_jti)
    known = state.verified.get(key)
    if known is not None:
        return (None, dict(known)) if known["exp"] > facts.now else ("queue:admission-expired", {})
    state.verifications += 1
    result = verify_admission(
        token,
        config.keys,
        room=room,
        client_ip=facts.client_ip,
        session_jti=facts.session_jti,
        now=facts.now,
    )
    if result.valid and result.claims is not None:
        if len(state.verified) >= MAX_VERIFIED:
            state.verified.clear()  # bounded; the visitors still active verify again once
        state.verified[key] = result.claims
        return None, dict(result.claims)  # a copy: the app may change its own
    reason = result.reason or "malformed"
    if reason in ("malformed", "forged", "expired", "unknown-key"):
        return f"queue:admission-{reason}", {}
    return f"queue:{reason}", {}


def admission_cookie(facts: Facts, config: EdgeConfig, token: str, claims: dict) -> str:
    """The ``_abq`` cookie for ``token``, for as long as it lives."""
    life = max(0, int(claims.get("exp", 0) - facts.now))
    cookie = f"{COOKIE}={token}; Path=/; Max-Age={life}; HttpOnly; SameSite=Lax"
    # Never from the Host header, which whoever sends the request (or a proxy) chooses.
    return cookie + "; Secure" if config.secure_cookie or facts.scheme == "https" else cookie


def too_many(
    config: EdgeConfig, room: str, reason: str, retry: int, extra: dict[str, Any]
) -> Decision:
    """429 ``QueueRequired``; never 503: a line is not an outage, and must not page anyone."""
    body = {
        "error": "QueueRequired",
        "message": "This resource is behind a waiting room; queue first.",
        "room": room,
        "api": f"{config.base_url}/api/v1",
        "retryAfter": retry,
    } | extra
    body.setdefault("queuePage", f"{config.base_url}/queue/{quote(room)}?key={config.public_key}")
    headers = (
        ("Content-Type", "application/json"),
        ("Retry-After", str(retry)),
        (REASON_HEADER, reason),
        ("Cache-Control", "no-store"),
    )
    return Decision("respond", 429, headers, body, reason)


def refuse(
    facts: Facts, config: EdgeConfig, room: str, reason: str, query: str | None = None
) -> Decision:
    """A navigation goes (303) to the hosted page and back; anything else gets a 429."""
    page = f"{config.base_url}/queue/{quote(room)}?" + urlencode(
        {"key": config.public_key, "return": url_of(facts, query)}
    )
    if is_navigation(facts) and not facts.header("anteroom-ticket"):
        headers = (("Location", page), (REASON_HEADER, reason), ("Cache-Control", "no-store"))
        return Decision("respond", 303, headers, None, reason)
    return too_many(config, room, reason, QUEUE_RETRY_SEC, {"queuePage": page})


AGENT_REFUSED, SIGNATURE_REFUSED = "agent:refused", "agent:signature-refused"


def agent_refused(room: str, agent: AgentFacts) -> Decision:
    """403 for an agent the room's policy refuses; 401 for a signature that does not hold."""
    if agent.outcome == "refused":
        status, reason = 403, AGENT_REFUSED
        body = {
            "error": "AgentRefused",
            "message": "This site does not admit automated agents signed by this key directory.",
            "room": room,
        }
    else:
        status, reason = 401, SIGNATURE_REFUSED
        body = {
            "error": "SignatureRefused",
            "message": f"The request's signature is refused ({agent.reason}).",
            "reason": agent.reason,
            "room": room,
        }
    headers = (
        ("Content-Type", "application/json"),
        (REASON_HEADER, reason),
        ("Cache-Control", "no-store"),
    )
    return Decision("respond", status, headers, body, reason)


def ambiguous(room: str) -> Decision:
    """400: the path reads as a protected one to some router; say how to ask for it."""
    body = {
        "error": "AmbiguousPath",
        "message": "This path can be read more than one way; request it without "
        "'.' or '..' segments, encoded slashes, backslashes or NUL.",
        "room": room,
    }
    headers = (
        ("Content-Type", "application/json"),
        (REASON_HEADER, AMBIGUOUS_PATH),
        ("Cache-Control", "no-store"),
    )
    return Decision("respond", 400, headers, body, AMBIGUOUS_PATH)


def preflight(facts: Facts, config: EdgeConfig) -> Decision:
    """204 with the site's CORS headers and no body: a preflight learns nothing of the view."""
    headers: list[tuple[str, str]] = []
    for name, value in config.preflight_headers.items():
        if isinstance(value, str):
            headers.append((name, value))
        elif name.lower() == "access-control-allow-origin":
            origin = facts.header("origin")
            if origin in value:
                headers.append((name, origin))
            headers.append(("Vary", "Origin"))
        else:
            headers.append((name, ", ".join(value)))
    return Decision("respond", 204, tuple(headers), None)


def decide(
    facts: Facts, config: EdgeConfig, state: EdgeState, match: PathMatch | None = None
) -> Decision:
    """What to do with a request: see the module docstring and ``edge_cases.json``.

    ``match`` is ``config.route_table.match(facts.path, facts.raw_path, facts.script_name)``
    when the caller has it.
    """
    match = match or config.route_table.match(facts.path, facts.raw_path, facts.script_name)
    if match.room is None:
        return _pass()
    room = match.room
    if match.ambiguous:
        return ambiguous(room)
    if config.bypass_rules:
        bypassed = bypassed_by(facts, config)
        if bypassed is not None:
            return Decision("pass", bypass_rule=bypassed)
    if facts.crawler is not None:
        # Verified by DNS against the engine's own domains: no admission, nothing counted.
        return Decision("pass", crawler=facts.crawler)
    if facts.agent is not None and facts.agent.outcome != "verified":
        return agent_refused(room, facts.agent)
    if facts.method == "OPTIONS" and facts.header("access-control-request-method"):
        # A CORS preflight never carries the admission it asks about: refusing it would lock
        # out every cross-origin app. Passed on, it would reach views that answer any method
        # (a Django function view) with their content; so the edge answers it, unless the app
        # declares that it answers OPTIONS itself.
        return _pass() if config.app_answers_options else preflight(facts, config)
    if HANDOVER_PARAM in facts.query:
        handed, clean = split_handover(facts.query)
        if handed is not None:
            return hand_over(facts, config, state, room, handed, clean)
    ticket = facts.header("anteroom-ticket")
    token = facts.header("anteroom-admission") or cookie_value(facts.header("cookie"), COOKIE)
    if token:
        reason, claims = check(token, facts, config, state, room)
        if reason is None:
            return admit(facts, config, state, token, claims, room)
        if not ticket:
            return refuse(facts, config, room, reason)
    if ticket:
        return queue_through(facts, config, state, room, ticket)
    return refuse(facts, config, room, "queue:no-admission")


def bypassed_by(facts: Facts, config: EdgeConfig) -> int | None:
    """Index of the first bypass rule the request matches, or None. Called only once the path
    is known unambiguous, and prefixes are matched on its one plain reading."""
    reading = config.route_table.plain_reading(facts.path, facts.raw_path, facts.script_name)
    cookies = bypass_rules.parse_cookies(facts.header("cookie"))
    found = bypass_rules.match(
        config.bypass_rules, reading, facts.client_ip, facts.headers, cookies
    )
    return None if found is None else found[0]


def hand_over(
    facts: Facts, config: EdgeConfig, state: EdgeState, room: str, token: str, clean: str
) -> Decision:
    """``?abq=`` → the cookie and a 307 to the URL without it; an invalid one sets nothing."""
    reason, claims = check(token, facts, config, state, room)
    if reason is not None:
        return refuse(facts, config, room, reason, clean)
    headers = (
        ("Location", url_of(facts, clean)),
        ("Set-Cookie", admission_cookie(facts, config, token, claims)),
        ("Cache-Control", "no-store"),
        # The token was in the address bar: keep it out of the next page's Referer.
        ("Referrer-Policy", "no-referrer"),
    )
    return Decision("respond", 307, headers, None)


def admit(
    facts: Facts,
    config: EdgeConfig,
    state: EdgeState,
    token: str,
    claims: dict[str, Any],
    room: str,
) -> Decision:
    """Let the request through; renew an old admission on the way (best effort), unless it
    says it is not renewable: then it ends at its expiry, and ``check`` sends its visitor back
    to the line, with no call to Anteroom either way."""
    if facts.now - (claims.get("iat") or 0) < config.refresh_after:
        return Decision("admit", claims=claims)  # the fast path: nothing to add
    if claims.get(NOT_RENEWABLE):
        return Decision("admit", claims=claims)
    jti = str(claims.get("jti") or token)
    if state.paused(facts.now) or not state.renewal_due(jti, facts.now, config.refresh_after):
        return Decision("admit", claims=claims)

    def renewed(status: int, answer: dict[str, Any], now: float) -> Decision:
        state.answered(status, now, config.pause_after_failure)
        fresh = answer.get("token") if status == 200 else None
        if not isinstance(fresh, str):
            return Decision("admit", claims=claims)  # it still counts until its own expiry
        reason, fresh_claims = check(fresh, facts, config, state, room)
        if reason is not None:
            return Decision("admit", claims=claims)
        if facts.header("anteroom-admission"):
            return Decision("admit", headers=((ADMISSION_HEADER, fresh),), claims=fresh_claims)
        cookie = admission_cookie(facts, config, fresh, fresh_claims)
        return Decision("admit", headers=(("Set-Cookie", cookie),), claims=fresh_claims)

    body = {"apiKey": config.public_key, "token": token}
    return Decision("call", claims=claims, call=Call(REFRESH_PATH, body, renewed))


def queue_through(
    facts: Facts, config: EdgeConfig, state: EdgeState, room: str, ticket: str
) -> Decision:
    """Poll the app's ticket: 429 while it waits, pass once admitted."""

    def polled(status: int, answer: dict[str, Any], now: float) -> Decision:
        state.answered(status, now, config.pause_after_failure)
        return ticket_answer(facts, config, state, room, status, answer)

    if state.paused(facts.now):
        return ticket_answer(facts, config, state, room, 0, {})  # as if unreachable, uncalled
    body = {"apiKey": config.public_key, "ticket": ticket}
    return Decision("call", call=Call(POLL_PATH, body, polled))


def ticket_answer(
    facts: Facts,
    config: EdgeConfig,
    state: EdgeState,
    room: str,
    status: int,
    answer: dict[str, Any],
) -> Decision:
    """What Anteroom said of the ticket (status 0: nothing) decides: 429 while it waits, pass
    with the admission once admitted."""
    polled = answer.get("status") if status == 200 else None
    token = answer.get("token")
    if polled == "admitted" and isinstance(token, str):
        reason, claims = check(token, facts, config, state, room)
        if reason is None:
            return Decision("admit", headers=((ADMISSION_HEADER, token),), claims=claims)
        return too_many(config, room, reason, QUEUE_RETRY_SEC, {})
    if polled in ("waiting", "held"):
        poll_after = answer.get("pollAfterMs")
        number = isinstance(poll_after, int | float) and not isinstance(poll_after, bool)
        poll_after = poll_after if number and poll_after else 5000
        retry = max(1, math.ceil(poll_after / 1000))
        figures = {k: answer.get(k) for k in ("status", "position", "etaSeconds")}
        return too_many(config, room, "queue:no-admission", retry, figures)
    # Not waiting: the room is idle, the ticket was refused (gone, invalid: enter again), or
    # Anteroom could not be reached. Say which, and keep to Anteroom's own Retry-After.
    retry = answer.get("retryAfter")
    retry = retry if isinstance(retry, int) and not isinstance(retry, bool) and retry > 0 else 0
    figures = {"status": polled or "unknown"}
    if isinstance(answer.get("error"), str):
        figures["ticketError"] = answer["error"]
    return too_many(config, room, "queue:no-admission", retry or QUEUE_RETRY_SEC, figures)
