"""The one definition of every Redis key name Anteroom uses.

Room keys share the room id as a Cluster hash tag (``{<id>}``) so a room lives on one shard and
its Lua scripts may touch all of them. Environment-wide keys carry the environment as their tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_PREFIX = "anteroom:"
# Upper bounds (seconds) of the wait histogram's buckets: the fields of a room's `waits` hash,
# the last "inf"; lua/_waits.lua counts under them (its WAIT_BOUNDS, written in from
# here by queue/connection/lua_scripts.py) and room_series.py samples them in this order.
WAIT_BUCKETS = ("1", "2", "5", "10", "20", "30", "60", "120", "300", "600", "1200", "1800",
                "3600", "7200", "inf")  # fmt: skip
# The same hash counts the spots that left before their turn by how long they had waited,
# under these fields (lua/_waits.lua, book_left_waiting).
ABANDON_FIELDS = tuple("a" + bound for bound in WAIT_BUCKETS)
_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _checked(value: str, what: str) -> str:
    # Braces or colons in an id would move a key to another slot or another namespace.
    if not _SAFE.match(value):
        raise ValueError(f"invalid {what} for a Redis key: {value!r}")
    return value


@dataclass(frozen=True)
class KeySpace:
    """Builds key names under one configurable prefix."""

    prefix: str = DEFAULT_PREFIX

    def room_base(self, room_id: str) -> str:
        """Base of a room's keys; the scripts append ``room``, ``spots``, ``line`` …"""
        return f"{self.prefix}r:{{{_checked(room_id, 'room id')}}}:"

    def room(self, room_id: str) -> str:
        """The hash holding a room's configuration and counters."""
        return self.room_base(room_id) + "room"

    def room_keys(self, room_id: str) -> dict[str, str]:
        """Fixed keys of a room (held buckets ``b:<score>`` are added by the scripts).

        ``line`` orders the eligible waiting spots, ``b:<score>`` the held ones of one score
        (scores listed in ``bks``); ``rvk`` is the one store of revocations:
        ``j:<session jti>`` / ``v:<vid>`` → until (ms); ``waits`` counts admissions by their wait
        (field = a bucket's upper bound in seconds, see ``WAIT_BUCKETS`` above) and the spots
        that left before their turn by how long they had waited (``a<bound>``);
        ``blk`` counts the line's live spots per block of order keys (lua/_blocks.lua);
        ``drawn`` lists the opening's entrant ids in drawn order (queue/draw.py);
        ``inv`` counts invite spends: ``<invite id>`` → uses, ``<invite id>|<vid>`` → 1, and
        marks withdrawn ones: ``<invite id>|w`` → when (ms; a vid is never one character);
        ``invs`` records each invite issued: ``<invite id>`` → JSON {lane, uses, expiresAt,
        issuedAt}, and ``invo`` lists their ids in the order issued (its index is the listing's
        cursor: the list only grows, at its tail);
        ``used`` lists the live admissions seen in use (a renewal): ``<vid>:<deal number>``;
        ``pqz`` numbers an event's pre-queue entrants while their places are drawn
        (lua/shuffle_prequeue.lua); ``fo`` registers the processes serving a failMode-open
        room: ``<process>`` → its last check-in (ms), ``<process>|n`` → when it was found
        missing, ``|since`` → the last check-in after an outage (lua/check_in_fail_open.lua);
        ``park`` orders the parked spots (a visitor to be e-mailed at its turn) by their order
        keys, ``mail`` holds for each ``a:<vid>`` its address (until sent), ``t:<vid>`` its turn
        (ms; until its return link is used or its window ends) and ``n:<vid>`` the e-mail's
        tries, and ``mailq`` when each spot's e-mail is next due (queue/line/parking.py).
        """
        base = self.room_base(room_id)
        names = (
            "room", "spots", "line", "active", "adm", "rvk", "bks", "waits", "blk", "drawn", "inv",
            "pqz", "fo", "used", "invs", "invo", "park", "mail", "mailq",
        )  # fmt: skip
        return {name: base + name for name in names}

    def env_rooms(self, env: str) -> str:
        """Hash slug → room id of one environment."""
        return f"{self.prefix}env:{{{_checked(env, 'environment')}}}:rooms"

    def env_audit(self, env: str) -> str:
        """Stream of audit events of one environment."""
        return f"{self.prefix}env:{{{_checked(env, 'environment')}}}:audit"

    def environments(self) -> str:
        """Set of known environment names."""
        return f"{self.prefix}environments"

    def rooms_version(self) -> str:
        """Counter bumped after every change to a room's settings, state or revocations, so
        each process's directory (queue/rooms/room_directory.py) re-reads within a fraction of a
        second
        of a change made by any other process, instead of at its next round."""
        return f"{self.prefix}rooms:version"

    def layout(self) -> str:
        """The data's layout version, an integer (store/layout_version.py)."""
        return f"{self.prefix}layout"

    def layout_lock(self) -> str:
        """Held by the one instance upgrading the layout (its random token, with an expiry)."""
        return f"{self.prefix}layout:lock"

    def setup(self) -> str:
        """Hash of the first start's setup tokens (``t:<sha256>``), or ``spent`` once exchanged."""
        return f"{self.prefix}setup"

    def public_keys(self) -> str:
        """Hash public key → environment."""
        return f"{self.prefix}pk"

    def secret_keys(self) -> str:
        """Hash key id → secret key record (hashed secret, environment, scopes)."""
        return f"{self.prefix}sk"

    def challenge_spent(self, jti: str) -> str:
        """Marker of a spent proof-of-work challenge."""
        return f"{self.prefix}pc:{_checked(jti, 'challenge id')}"

    def agent_lane(self, room_id: str) -> str:
        """The signed agents' lane of a room: its token bucket (lua/agent_lane.lua), with a TTL."""
        return f"{self.room_base(room_id)}agl"

    def agent_nonce(self, digest: str) -> str:
        """Marker of a signed agent's nonce, used once (``digest``: hex of keyid and nonce)."""
        return f"{self.prefix}an:{_checked(digest, 'nonce digest')}"

    def network_identifies(self, network: str, minute: int) -> str:
        """Counter of identifies from one network (its keyed tag) in one minute (epoch // 60)."""
        return f"{self.prefix}idn:{_checked(network, 'network tag')}:{int(minute)}"

    def limiter_prefix(self) -> str:
        """Prefix of the per-address limit counters (web/visitor/address_limits.py)."""
        return f"{self.prefix}lim"
