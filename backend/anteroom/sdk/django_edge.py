"""Edge enforcement as a Django middleware class: the WSGI edge's decision, where Django shops
expect it::

    # settings.py
    MIDDLEWARE = ["anteroom.edge.AnteroomDjangoMiddleware", ...]  # first: before any view runs
    ANTEROOM_EDGE = {"keys": os.environ["ANTEROOM_KEYS"], "base_url": "https://queue.example",
                     "public_key": "pk_…", "routes": {"/checkout": "spring-drop"},
                     "languages": ["fr", "de"]}  # with i18n_patterns

It decides on ``request.path_info`` (the path Django routes, under WSGI and ASGI alike) with the
request's ``META`` (``SCRIPT_NAME``, the target as sent, headers, ``REMOTE_ADDR``), and carries
the decision out on Django's own response objects: views read the admission's claims with
``admission(request.META)``; a renewed admission is added to ``response.cookies`` beside the
view's own. Only Django builds and calls this class, so Django's modules are loaded by then: it
takes them from ``sys.modules`` and the SDK imports nothing outside the standard library.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import Any

from anteroom.sdk.edge_client import settle
from anteroom.sdk.edge_decision import Decision, EdgeConfig, decide
from anteroom.sdk.edge_paths import raw_path_of
from anteroom.sdk.wsgi_edge import ADMISSION_ENVIRON, AnteroomMiddleware, _raw_target

__all__ = ["AnteroomDjangoMiddleware"]


def _django(module: str) -> Any:
    """A module of the running Django (loaded before any middleware is built)."""
    return sys.modules[module]


class AnteroomDjangoMiddleware:
    """Django middleware enforcing admissions; options from ``settings.ANTEROOM_EDGE``."""

    def __init__(self, get_response: Callable[[Any], Any], config: EdgeConfig | None = None):
        if config is None:
            options = getattr(_django("django.conf").settings, "ANTEROOM_EDGE", None)
            if not isinstance(options, dict):
                raise ValueError("AnteroomDjangoMiddleware needs settings.ANTEROOM_EDGE = {...}")
            config = EdgeConfig(**options)
        self.get_response = get_response
        # The WSGI edge's state, client and facts; its app is never called.
        self.edge = AnteroomMiddleware(lambda environ, start_response: [], config)
        self.config = self.edge.config

    def __call__(self, request: Any) -> Any:
        meta = request.META
        raw = _raw_target(meta)
        raw_path = raw_path_of(raw) if raw else None
        script_name = str(meta.get("SCRIPT_NAME", ""))
        match = self.config.route_table.match(request.path_info, raw_path, script_name)
        if match.room is None:
            return self.get_response(request)  # not ours: nothing read, nothing added
        facts = self.edge.facts(meta)
        facts.path = request.path_info  # what Django routes (decoded as UTF-8 by Django)
        decision = settle(decide(facts, self.config, self.edge.state, match), self.edge.anteroom)
        return self.apply(decision, request)

    def apply(self, decision: Decision, request: Any) -> Any:
        """Carry out ``decision`` for this request on Django's response objects."""
        if decision.kind == "respond":
            body = b"" if decision.body is None else json.dumps(decision.body).encode()
            response = _django("django.http").HttpResponse(body, status=decision.status)
            if decision.body is None:
                del response["Content-Type"]
            for name, value in decision.headers:
                self.add(response, name, value)
            return response
        if decision.claims is not None:
            request.META[ADMISSION_ENVIRON] = decision.claims
        response = self.get_response(request)
        for name, value in decision.headers:
            self.add(response, name, value)
        return response

    @staticmethod
    def add(response: Any, name: str, value: str) -> None:
        """Add a header; a cookie goes beside the view's own (Django keeps them apart)."""
        if name.lower() == "set-cookie":
            response.cookies.load(SimpleCookie(value))
        else:
            response[name] = value
