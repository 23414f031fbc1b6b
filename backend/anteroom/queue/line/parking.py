"""Parked spots: "tell me when it's my turn" (a room's ``notify`` setting).

A waiting visitor leaves an e-mail address and stops polling; the spot keeps its place (its
last-seen is booked far ahead, so neither the drain nor the sweep drops it as abandoned:
lua/park.lua). Once the drain admits it, :meth:`Parking.turns` (lua/turns.lua) queues its e-mail
and holds its admission for the room's ``returnWindowSec``; the sender
(queue/rooms/turn_mailer.py) claims due e-mails atomically (lua/claim_mail.lua), so however many
processes send, each is sent by one, and says how it went (lua/mail_done.lua), which deletes the
address once sent. The e-mail's return link is honoured once (lua/redeem_return.lua).

Per parked spot Redis keeps one entry in the room's ``park`` sorted set and one in its ``mail``
hash (bench/parking.py measures both); the turns' pass looks at the first :data:`TURNS_LOOKED_AT`
parked spots only, whatever their number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from anteroom.queue.connection.storage_errors import storage_errors
from anteroom.queue.line.room_engine import Engine
from anteroom.queue.rooms.room_hash import stored

# How far ahead a parked spot's last-seen is booked: no line is this long, and a spot left
# parked by a room that never moves is still dropped in the end (its address with it).
PARKED_FOR_MS = 7 * 86_400_000
# Parked spots looked at per pass, from the front: the drain admits from the head of the line.
TURNS_LOOKED_AT = 200
# A claimed e-mail is due again this long after its claim unless its sender reports first.
CLAIM_LEASE_MS = 60_000
ADDRESS_MAX_LENGTH = 254  # RFC 5321's longest path, less its angle brackets
# A deliverable address, plainly: local part @ a domain with a dot; nothing that could break out
# of an SMTP command or a header (no space, no control character, no angle bracket, no comma).
_ADDRESS = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?\.[A-Za-z]{2,63}$"
)


def address_problem(value: Any) -> str | None:
    """Why ``value`` is not an e-mail address we would send to, or None."""
    if not isinstance(value, str) or not value:
        return "must be an e-mail address (name@example.com)"
    if len(value) > ADDRESS_MAX_LENGTH:
        return f"must be at most {ADDRESS_MAX_LENGTH} characters"
    domain = value.rpartition("@")[2]
    if (
        not _ADDRESS.fullmatch(value)
        or ".." in domain
        or any(len(p) > 63 for p in domain.split("."))
    ):
        return "must be an e-mail address (name@example.com)"
    return None


@dataclass(frozen=True)
class DueMail:
    """A claimed turn e-mail: whose, which try (1, 2 …), the turn (room clock ms), where to,
    in which language ('' English)."""

    room_id: str
    vid: str
    attempt: int
    turn_ms: int
    address: str
    lang: str = ""

    def __repr__(self) -> str:  # never the address, in a log or a trace
        return f"DueMail(room_id={self.room_id!r}, vid={self.vid!r}, attempt={self.attempt})"


@dataclass(frozen=True)
class Returned:
    """A return link honoured: the spot to poll for its admission."""

    ticket: int
    generation: int
    session_jti: str


class Parking:
    """The parked spots of rooms, over the engine's scripts."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def park(
        self,
        room_id: str,
        vid: str,
        ticket: int,
        generation: int,
        address: str,
        api_key: str,
        lang: str = "",
    ) -> str:
        """Park the spot (checked address); 'ok', or why not: 'gone', 'admitted', 'held'.
        ``api_key``: the public key the visitor came with (the return page links the line);
        ``lang``: the e-mail's language ('' or "en": English)."""
        args = (
            vid,
            address,
            ticket,
            generation,
            PARKED_FOR_MS,
            api_key,
            "" if lang == "en" else lang,
        )
        reply = self.engine.run("park", room_id, *args)
        return "ok" if reply[0] == "ok" else str(reply[1])

    def turns(self, room_id: str, window_sec: int, count: int = TURNS_LOOKED_AT) -> tuple[int, int]:
        """Queue the e-mails of the parked spots the drain admitted: (turned, gone)."""
        turned, gone = self.engine.run("turns", room_id, count, window_sec)
        return int(turned), int(gone)

    def claim(self, room_id: str, most: int = 20, lease_ms: int = CLAIM_LEASE_MS) -> list[DueMail]:
        """Claim the room's due e-mails (each try counted at its claim)."""
        flat = self.engine.run("claim_mail", room_id, most, lease_ms)
        return [
            DueMail(
                room_id,
                str(flat[i]),
                int(flat[i + 1]),
                int(flat[i + 2]),
                str(flat[i + 3]),
                str(flat[i + 4] or ""),
            )
            for i in range(0, len(flat), 5)
        ]

    def done(
        self, mail: DueMail, outcome: str, window_sec: int, delay_ms: int = 0, failed: str = ""
    ) -> bool:
        """Report a claimed e-mail: 'sent', 'retry' (after ``delay_ms``) or 'failed'."""
        args = (mail.vid, outcome, int(delay_ms), window_sec, failed[:200])
        return bool(self.engine.run("mail_done", mail.room_id, *args))

    def redeem(self, room_id: str, vid: str, turn_ms: int, window_sec: int) -> Returned | str:
        """Honour a return link once: the spot to poll, or 'late' / 'used'."""
        reply = self.engine.run("redeem_return", room_id, vid, int(turn_ms), window_sec)
        if reply[0] != "ok":
            return str(reply[1])
        return Returned(int(reply[1]), int(reply[2]), str(reply[3] or ""))

    def entry_key(self, room_id: str) -> str:
        """The public key parked visitors of the room came with ('' for none yet)."""
        with storage_errors():
            key = self.engine.redis.hget(self.engine.keys.room_keys(room_id)["mail"], "key")
        return str(key or "")

    def parked(self, room_id: str) -> int:
        """How many spots of the room are parked (waiting for their turn)."""
        with storage_errors():
            return int(self.engine.redis.zcard(self.engine.keys.room_keys(room_id)["park"]))


MAIL_COUNTS = ("notifySent", "notifyFailed", "notifyGivenUp", "notifyLastError")


def mail_counts_of(engine: Engine, room_ids: list[str]) -> list[dict[str, Any]]:
    """Per room, in one pipelined round: e-mails sent, failed tries, given up, and the last
    failure (``{"at": room clock ms, "what": …}`` or None); counted since the room was created."""
    pipe = engine.redis.pipeline(transaction=False)
    for room_id in room_ids:
        pipe.hmget(engine.keys.room(room_id), [stored(name) for name in MAIL_COUNTS])
    with storage_errors():
        replies = pipe.execute()
    out: list[dict[str, Any]] = []
    for sent, failed, lost, last in replies:
        at, _, what = (last or "").partition(" ")
        out.append(
            {
                "sent": int(sent or 0),
                "failed": int(failed or 0),
                "givenUp": int(lost or 0),
                "lastFailure": {"at": int(at), "what": what} if at else None,
            }
        )
    return out
