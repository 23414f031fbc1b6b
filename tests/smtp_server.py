"""A real SMTP server for the tests (aiosmtpd, in a thread of the test process): it keeps every
message it accepts, and refuses as many as it is told to first (a 451, as a busy server does)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from helpers import free_port


class Inbox:
    """What the server accepted (and refused), by recipient."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.refused = 0
        self.refuse_next = 0  # answer 451 to this many DATA commands first
        self._lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self._lock:
            if self.refuse_next > 0:
                self.refuse_next -= 1
                self.refused += 1
                return "451 4.3.0 Try again later"
            message = message_from_bytes(envelope.content, policy=policy.default)
            self.messages.append(message)  # type: ignore[arg-type]
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        """The messages accepted for ``address``."""
        with self._lock:
            return [m for m in self.messages if m["To"] == address]

    def count(self) -> int:
        with self._lock:
            return len(self.messages)


@contextmanager
def smtp_server() -> Iterator[tuple[str, Inbox]]:
    """A running SMTP server on 127.0.0.1: its ``smtp://`` URL and its inbox."""
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield f"smtp://127.0.0.1:{port}", inbox
    finally:
        controller.stop()
