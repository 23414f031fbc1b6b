"""The operator's SMTP server for turn e-mails (``ANTEROOM_SMTP_URL``), standard library only."""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

SMTP_TIMEOUT_SEC = 10.0


@dataclass(frozen=True)
class SmtpTarget:
    """Where turn e-mails go: ``smtp://[user:pass@]host[:port]`` (STARTTLS when the server
    offers it and credentials are given), ``smtps://…`` (TLS from the start)."""

    host: str
    port: int
    tls: bool
    user: str
    password: str

    @classmethod
    def parse(cls, url: str) -> SmtpTarget:
        """The target of ``url``; ValueError naming what is wrong (never the password)."""
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("must be smtp://host[:port] or smtps://user:password@host[:port]")
        try:
            port = parts.port or (465 if parts.scheme == "smtps" else 25)
        except ValueError:
            raise ValueError("has a bad port") from None
        return cls(
            parts.hostname,
            port,
            parts.scheme == "smtps",
            unquote(parts.username or ""),
            unquote(parts.password or ""),
        )

    def __repr__(self) -> str:
        return f"SmtpTarget({self.host}:{self.port}, tls={self.tls})"

    def send(self, message: EmailMessage) -> None:
        """Hand ``message`` to the server (raises smtplib.SMTPException or OSError)."""
        context = ssl.create_default_context()
        client: smtplib.SMTP
        if self.tls:
            client = smtplib.SMTP_SSL(
                self.host, self.port, timeout=SMTP_TIMEOUT_SEC, context=context
            )
        else:
            client = smtplib.SMTP(self.host, self.port, timeout=SMTP_TIMEOUT_SEC)
        with client:
            if not self.tls and self.user:
                client.ehlo()
                if client.has_extn("starttls"):
                    client.starttls(context=context)
            if self.user:
                client.login(self.user, self.password)
            client.send_message(message)
