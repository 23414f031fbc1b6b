"""An invite link on the hosted page (`&invite=iv1.…`): the skip lane lets the visitor straight
in past the line, the priority lane shows them first in line: real Chromium, server and Redis."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from anteroom.engine import Engine
from anteroom.sdk import tokens
from helpers import TEST_KEYS, waiting_room
from live_server import LiveServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Stack = tuple[LiveServer, Engine, str]


def invite(engine: Engine, room: str, lane: str) -> str:
    """An invite as POST /queues/{id}/invites signs it (the live server's keyring)."""
    expires = engine.stats(room).now_ms + 3_600_000
    claims = tokens.InviteClaims(room, "web", tokens.new_id(), expires, 1, lane)
    return tokens.sign(tokens.Keyring.parse(TEST_KEYS), tokens.INVITE, claims.to_wire())


def test_a_skip_invite_is_admitted_past_the_line(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=3)
    page = new_context().new_page()
    page.goto(f"{live.url}/queue/{slug}?key={api_key}&invite={invite(engine, room, 'skip')}")
    page.wait_for_url(re.compile(r"/healthz\?from=queue&abq="), timeout=20_000)
    assert engine.stats(room).waiting == 3  # the line ahead is where it was


def test_a_priority_invite_is_shown_first_in_line(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=3)
    page = new_context().new_page()
    page.goto(f"{live.url}/queue/{slug}?key={api_key}&invite={invite(engine, room, 'priority')}")
    root = page.locator("#anteroom")
    expect(root).to_have_attribute("data-state", "waiting", timeout=15_000)
    expect(page.locator("#position")).to_have_text("1")
    assert [e.visitor for e in engine.line(room)][1:] == ["ahead0", "ahead1", "ahead2"]


def test_a_spent_invite_says_so(stack: Stack, new_context: Any) -> None:
    live, engine, api_key = stack
    room, slug = waiting_room(engine, live.url, ahead=1)
    token = invite(engine, room, "priority")
    engine.enter(room, "someone-else", "s", 10, invite=tokens.InviteClaims.from_wire(
        tokens.decode(tokens.Keyring.parse(TEST_KEYS), token, tokens.INVITE)))  # fmt: skip
    page = new_context().new_page()
    page.goto(f"{live.url}/queue/{slug}?key={api_key}&invite={token}")
    expect(page.locator("#anteroom")).to_have_attribute("data-error", "InviteSpent", timeout=15_000)
    expect(page.locator("#status-text")).to_have_text(re.compile("already been used"))
