"""The turn e-mails' sender: one background thread per process, off every request's path.

About once a second it finds the turns of each notify room's parked spots (queue/line/parking.py,
lua/turns.lua), claims the room's due e-mails (each claimed by one process only, for a lease)
and sends them over the operator's SMTP server (``ANTEROOM_SMTP_URL``, standard library
``smtplib``); a failed try is retried with backoff (:func:`retry_delay_ms`) up to
:data:`MOST_TRIES`, and counted in the room hash (the console's room page and the metrics read
it). Addresses are never logged: a failure is recorded by its kind and SMTP code only.
Under gevent's workers the thread is a greenlet and smtplib's socket is cooperative, so a slow
server delays only other e-mails.
"""

from __future__ import annotations

import functools
import json
import logging
import smtplib
import threading
import time
import weakref
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any
from urllib.parse import quote

from anteroom.queue.connection.process_thread import ProcessThread, step_while_alive
from anteroom.queue.connection.storage_errors import StorageError, storage_errors
from anteroom.queue.line.parking import DueMail, Parking
from anteroom.queue.line.room_engine import EngineError
from anteroom.queue.rooms.room_config import PAGE_LANGUAGES
from anteroom.queue.rooms.room_directory import RoomDirectory
from anteroom.queue.rooms.smtp_target import SmtpTarget
from anteroom.resources import resource_dir
from anteroom.sdk import tokens

log = logging.getLogger("anteroom")
WAKE_EVERY_SEC = 1.0
MOST_TRIES = 5
FIRST_RETRY_MS, LONGEST_RETRY_MS = 5_000, 300_000
# A link kept for ever is refused even were its record still there: a day beyond the longest window.
LINK_MARGIN_SEC = 86_400


@functools.cache
def _catalog(lang: str) -> dict[str, Any]:
    path = resource_dir("translations") / f"{lang}.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def mail_text(lang: str, key: str, values: dict[str, str]) -> str:
    """The e-mail's text ``key`` in ``lang`` (a page language; else English), filled in."""
    code = lang if lang in PAGE_LANGUAGES else "en"
    text = str(_catalog(code).get(key) or _catalog("en")[key])
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def retry_delay_ms(attempt: int) -> int:
    """The wait before the next try after try ``attempt`` (1, 2 …) failed: 5 s, doubling, 5 min
    at most."""
    return int(min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** max(0, attempt - 1)))


def failure_kind(exc: BaseException) -> str:
    """What failed, without the address a refusal may quote: its kind and SMTP code."""
    code = getattr(exc, "smtp_code", None)
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = {c for c, _ in exc.recipients.values()}
        code = min(codes) if codes else None
    return f"{type(exc).__name__}{f' {code}' if code else ''}"


def permanent(exc: BaseException) -> bool:
    """A refusal no retry mends (a 5xx for the recipient)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(c >= 500 for c, _ in exc.recipients.values())
    return False


class TurnMailer:
    """Finds parked spots' turns and sends their e-mails; start with :meth:`ensure_running`."""

    def __init__(
        self,
        parking: Parking,
        directory: RoomDirectory,
        keyring: tokens.Keyring,
        *,
        smtp_url: str,
        sender: str,
        base_url: str,
        wake_every: float = WAKE_EVERY_SEC,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``smtp_url`` empty: turns are found and e-mails claimed and counted as failed (the
        console says SMTP is not configured); ``base_url``: the service's public address, the
        return links' origin."""
        self.parking = parking
        self.directory = directory
        self.keyring = keyring
        self.target = SmtpTarget.parse(smtp_url) if smtp_url else None
        self.sender = sender
        self.base_url = base_url.rstrip("/")
        self.wake_every = wake_every
        self.clock = clock
        self._thread = ProcessThread("anteroom-turn-mailer")
        self._first_round = True
        self._offered: set[str] = set()  # rooms seen offering the e-mail, and still keeping some

    def notify_rooms(self) -> list[dict[str, Any]]:
        """The open rooms that offer the e-mail, and those that no longer do but still keep
        parked spots or e-mails (an operator who turns it off strands nobody already parked).
        A room is asked about the latter only if this process saw it offer the e-mail (or at
        its first round): a room that never did costs no Redis command."""
        rooms = [r for r in self.directory.known.rooms.values() if r.get("status") == "open"]
        offered = [r for r in rooms if r.get("notify")]
        rest = [
            r
            for r in rooms
            if not r.get("notify") and (self._first_round or r["id"] in self._offered)
        ]
        if rest:
            with storage_errors():
                pipe = self.parking.engine.redis.pipeline(transaction=False)
                for room in rest:
                    keys = self.parking.engine.keys.room_keys(room["id"])
                    pipe.exists(keys["park"], keys["mailq"])
                kept = pipe.execute()
            still = [room for room, n in zip(rest, kept, strict=True) if n]
            self._offered -= {room["id"] for room in rest} - {room["id"] for room in still}
            offered += still
        self._first_round = False
        self._offered |= {room["id"] for room in offered}
        return offered

    def step(self) -> int:
        """One round over the notify rooms; the number of e-mails sent."""
        sent = 0
        try:
            rooms = self.notify_rooms()
        except StorageError as exc:
            log.warning("turn mailer: rooms not read: %s", exc)
            return 0
        for room in rooms:
            if self.directory.stopping.is_set():
                break
            window = int(room.get("returnWindowSec") or 900)
            try:
                self.parking.turns(room["id"], window)
                due = self.parking.claim(room["id"])
            except (EngineError, StorageError) as exc:
                log.warning("turn mailer: room %s skipped: %s", room["id"], exc)
                continue
            for mail in due:
                sent += self._send(room, mail, window)
        return sent

    def link(self, room: dict[str, Any], mail: DueMail) -> str:
        """The signed return link of ``mail``'s spot."""
        now = int(self.clock())
        claims = tokens.ReturnClaims(
            room_id=room["id"],
            visitor_id=mail.vid,
            environment=room["environment"],
            turn_ms=mail.turn_ms,
            issued_at=now,
            expires_at=now + int(room.get("returnWindowSec") or 900) + LINK_MARGIN_SEC,
        )
        token = tokens.issue(self.keyring, claims)
        lang = f"&lang={quote(mail.lang)}" if mail.lang else ""
        return f"{self.base_url}/queue/{quote(room['slug'])}/return?t={token}{lang}"

    def message(self, room: dict[str, Any], mail: DueMail) -> EmailMessage:
        """The e-mail, in the language the visitor left it in: it is your turn, the link, how
        long it is good for, and that the address is now deleted."""
        minutes = max(1, int(room.get("returnWindowSec") or 900) // 60)
        name = " ".join(str(room["name"]).split())  # one line: a header may hold no line break
        values = {"room": name, "minutes": str(minutes), "link": self.link(room, mail)}
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = mail.address
        message["Subject"] = mail_text(mail.lang, "mail.subject", values)
        message.set_content(mail_text(mail.lang, "mail.body", values) + "\n")
        return message

    def _send(self, room: dict[str, Any], mail: DueMail, window: int) -> int:
        try:
            if self.target is None:
                raise smtplib.SMTPException("SMTP not configured (ANTEROOM_SMTP_URL)")
            self.target.send(self.message(room, mail))
        except (smtplib.SMTPException, OSError, ValueError) as exc:
            kind = failure_kind(exc) if self.target else "no SMTP server (ANTEROOM_SMTP_URL)"
            last = mail.attempt >= MOST_TRIES or permanent(exc)
            outcome = "failed" if last else "retry"
            log.warning(
                "turn mailer: e-mail of room %s, try %d failed (%s)%s",
                room["id"], mail.attempt, kind, ", given up" if last else ", will retry",
            )  # fmt: skip
            self._report(mail, outcome, window, retry_delay_ms(mail.attempt), kind)
            return 0
        self._report(mail, "sent", window)
        return 1

    def _report(
        self, mail: DueMail, outcome: str, window: int, delay: int = 0, what: str = ""
    ) -> None:
        try:
            self.parking.done(mail, outcome, window, delay, what)
        except (EngineError, StorageError) as exc:  # the lease runs out: tried again later
            log.warning("turn mailer: outcome of room %s not recorded: %s", mail.room_id, exc)

    def ensure_running(self) -> None:
        """Start this process's thread unless it runs (cheap; fork-safe); it stops with the
        directory and ends with this mailer."""
        self._thread.ensure(
            step_while_alive,
            (weakref.ref(self), self.directory.stopping, self.wake_every, "turn mailer"),
        )

    @property
    def thread(self) -> threading.Thread | None:
        """This process's thread, once started."""
        return self._thread.thread
