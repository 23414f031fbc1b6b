"""A small pure-Python model of the queue rules, to compare the Lua engine against.

It is written from docs/queue.md, "Invariants", not from the scripts: a bank capped at one
second's worth, a lottery pool before opensAt that nobody leaves before the service's draw puts it
in drawn order (docs/draw.md), ticket order after, held spots skipped, abandoned
spots dropped for free when the drain reaches them (last-seen booked half abandonAfterSec ahead,
so a spot goes between 1 and 1.5 x abandonAfterSec after its last poll, or 3 of its own polls
when that is longer), the poll cadence within a budget, capacity, the
per-ticket limit, and the sweep that enter and poll carry along at most once a minute.
Queueing modes (docs/operators.md, "Queueing modes"): ``passthrough`` admits whatever the bank,
within capacity, and spends none of it; ``reject`` refuses a newcomer (``RoomClosed``) and nobody
else;
``random`` draws each admission among the eligible (see :func:`draw_rank`, the same draw as
lua/_draw_random.lua) and answers a waiting spot with its odds instead of a place.
Invites (docs/operators.md, "Invite links"): a newcomer's invite is refused once expired
(``InviteExpired``) or used by ``uses`` other visitors (``InviteSpent``); its ``skip`` lane is
admitted at once within capacity whatever the bank (spending none), else waits, like ``priority``,
ahead of everyone else (and of the draw), by ticket, skip before priority. It gives each visitor its
lane once: one who spent it and enters again without a spot joins the public line.
The safety net (``net``: activeSessions, arrivalsPerMinute, coolDownSec): passthrough while calm
(unless the mode is reject), the room's own mode while queueing, switched by a newcomer's entry
and by the tick (lua/_safety_net.lua), the switch to queueing emptying the bank.
Scheduled events (docs/operators.md, "Scheduled events"): from startsAt to endsAt (room clock) an
event's overrides (mode, ratePerMinute, capacity, admissionTtlSec) stand in for the room's own
settings (``own``). A boundary is crossed by the first script at or after it (enter, poll, the tick,
pause, an update, a write of the events): what was earned before it is earned at the rate then
in force, and kept when crossed within a second of it; crossed later, the bank keeps at most a
second of the new rate. An event's mode stands in for the room's own under the safety net.
An event's own pre-queue (preQueueOpensAt < startsAt): opened when its preQueueOpensAt is crossed
(or written already past), unless the last one's draw is still to be made; its entrants are
the newcomers from then (tickets from ``pq_first``), none straight in, answered without a place
(opensAt: startsAt), and the drain stops before the first of them. Crossing startsAt (or the
event's cancelling) closes it; the next tick draws their places among themselves: the k-th by
SHA-1(seed ':' first ticket ':' vid) takes key 2^52 + first + k - 1 (see :func:`prequeue_order`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

from anteroom.sdk import draw as draws

UNIT = 60_000
SWEEP_EVERY = 60_000
POST_OPEN = 2**52
POOL = 2**24
DRAWN_SPAN = 2**51  # the draw's keys fill [-2^51, 0); invitees' lanes are below
LANES = {"skip": -(2**53), "priority": -(2**52)}
# an event's overrides (API names) -> the model's settings
OVERRIDES = {"mode": "mode", "ratePerMinute": "rate", "capacity": "capacity"}


SEEN_BOOKING_MAX_MS = 150_000  # as lua/_expiry.lua's SEEN_BOOKING_MAX


def draw_rank(seed: str, deal_number: int, line: int) -> int:
    """docs/operators.md, "Queueing modes", mode random: the rank in the eligible line (0-based, in
    order-key order) of the spot drawn for the opening's ``deal_number``-th admission, from the
    opening's secret seed: the first 52 bits of SHA-1(seed ':' deal number), mod the line's
    length."""
    digest = hashlib.sha1(f"{seed}:{deal_number}".encode()).hexdigest()
    return int(digest[:13], 16) % line


def prequeue_order(seed: str, first_ticket: int, vids: list[str]) -> list[str]:
    """docs/operators.md, "Scheduled events": an event pre-queue's entrants in drawn order,
    by the first 52 bits of SHA-1(seed ':' the pre-queue's first ticket ':' vid), ties by vid."""

    def number(vid: str) -> int:
        return int(hashlib.sha1(f"{seed}:{first_ticket}:{vid}".encode()).hexdigest()[:13], 16)

    return sorted(vids, key=lambda vid: (number(vid), vid))


def bank_cap(rate: int) -> int:
    """The bank holds at most one second's worth, and at least one admission."""
    return max(UNIT, rate * 1000)


class ModelError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Invite:
    invite_id: str
    expires: int
    uses: int
    lane: str


@dataclass
class Spot:
    ticket: int
    score: int
    key: int
    seen: int
    window: int
    count: int
    admitted_at: int | None = None
    expires: int = 0
    deal: int = 0


@dataclass
class Model:
    rate: int
    capacity: int | None
    ttl_ms: int
    hold: int
    abandon_ms: int
    max_waiting: int
    now: int
    status: str = "idle"
    opens_at: int = 0
    seed: str = ""
    draw_state: str = ""  # '' no draw, 'c' committed (the pool waits for it), 'd' drawn
    draw_seed: str = ""
    drawn: list[str] = field(default_factory=list)  # entrant ids in drawn order, once drawn
    salt: bytes = b""
    bank: int = 0
    last: int = 0
    tickets: int = 0
    dealt: int = 0
    generation: int = 1
    budget: int = 5_000
    mode: str = "fifo"
    net: tuple[int, int, int] | None = None
    net_state: str = "calm"
    quiet_since: int | None = None
    arrivals: tuple[int, int, int] | None = None  # (minute, its count, the minute before's)
    ticked: int = 0
    swept: int = 0
    spots: dict[str, Spot] = field(default_factory=dict)
    invited: dict[str, set[str]] = field(default_factory=dict)  # invite id -> who spent it
    active: dict[str, int] = field(default_factory=dict)
    admissions: list[int] = field(default_factory=list)
    # scheduled events: the list as written (sorted, never overlapping), the one in force and
    # the next boundary (0: none) as of the last crossing, the room's own settings under them
    events: list[dict] = field(default_factory=list)
    running: dict | None = None
    boundary: int = 0
    own: dict = field(default_factory=dict)
    peak_bound: int | None = None  # the most capacity ever in force (None: unbounded once)
    # an event's pre-queue: the startsAt of the one collecting as of the last crossing (None:
    # none), and the room's: None, 'o' collecting, 'p' closed, its draw to be made; its first
    # ticket, its last once closed (0 while collecting) and the startsAt its entrants count to
    collecting: int | None = None
    prequeue: str | None = None
    pq_first: int = 0
    pq_last: int = 0
    pq_until: int = 0

    def __post_init__(self) -> None:
        self.own = {"mode": self.mode, "rate": self.rate, "capacity": self.capacity,
                    "ttl_ms": self.ttl_ms}  # fmt: skip
        self.peak_bound = self.capacity

    # -- helpers ---------------------------------------------------------------------------

    def waiting(self) -> list[tuple[int, str]]:
        return sorted((s.key, v) for v, s in self.spots.items() if s.admitted_at is None)

    def eligible(self) -> list[tuple[int, str]]:
        return [(k, v) for k, v in self.waiting() if self.spots[v].score < self.hold]

    def drainable(self) -> list[tuple[int, str]]:
        """The eligible the drain may reach: all, or those ahead of a pre-queue not yet drawn."""
        stop = self.prequeue_stop()
        return [(k, v) for k, v in self.eligible() if stop is None or k < stop]

    def mode_now(self) -> str:
        """The mode in force: passthrough while a safety net is calm."""
        calm = self.net and self.net_state == "calm" and self.mode != "reject"
        return "passthrough" if calm else self.mode

    def net_step(self, newcomer: str | None) -> None:
        """``newcomer``: the arrival being judged (not yet in the line the engine counts)."""
        if self.net is None:
            return
        active_max, arrivals_max, cool = self.net
        minute = self.now // 60_000
        counted, count, previous = self.arrivals or (None, 0, 0)
        if counted != minute:
            previous = count if counted == minute - 1 else 0
            count = 0
        arrivals = count + previous * (60_000 - self.now % 60_000) / 60_000
        if newcomer is not None:
            self.arrivals = (minute, count + 1, previous)
        busy = self.live_active() >= active_max or arrivals >= arrivals_max
        switch = None
        if self.net_state == "calm":
            switch = "queueing" if busy else None
        elif busy or [v for _, v in self.waiting() if v != newcomer]:
            self.quiet_since = None
        elif self.quiet_since is None:
            if cool == 0:
                switch = "calm"
            else:
                self.quiet_since = self.now
        elif self.now - self.quiet_since >= cool * 1000:
            switch = "calm"
        if switch is None:
            return
        self.net_state, self.quiet_since = switch, None
        if switch == "queueing" and self.status == "open":
            self.bank, self.last = 0, self.now

    def tick(self) -> None:
        """The room's tick (tick.lua): once a second of the room's clock, while open."""
        if self.status != "open" or self.now - self.ticked < 1000:
            return
        self.ticked = self.now
        self.at_events()
        self.sweep()
        self.drain()
        self.net_step(None)
        self.draw_prequeue()  # the engine's tick makes it once the script says it is due

    def accrue(self, until: int | None = None) -> None:
        """Earn admissions for open time up to ``until`` (now) at the rate in force."""
        until = self.now if until is None else until
        if self.status != "open":
            return
        start = max(self.last, self.opens_at)
        if until > start:
            cap = max(bank_cap(self.rate), self.bank)  # as _bank.lua: a bank over it is kept
            self.bank = min(cap, self.bank + (until - start) * self.rate)
            self.last = until

    # -- scheduled events ------------------------------------------------------------------

    def event_state_at(self, t: int) -> tuple[dict | None, int, int | None]:
        """The event running at ``t`` (startsAt <= t < endsAt), the next boundary after (a
        pre-queue's opening is one) and the startsAt of the event whose pre-queue collects at
        ``t`` (preQueueOpensAt <= t < startsAt), else None."""
        running = next((e for e in self.events if e["startsAt"] <= t < e["endsAt"]), None)
        collecting = next(
            (
                e["startsAt"]
                for e in self.events
                if e.get("preQueueOpensAt", t + 1) <= t < e["startsAt"]
            ),
            None,
        )
        edges = [
            x
            for e in self.events
            for x in (e.get("preQueueOpensAt", e["startsAt"]), e["startsAt"], e["endsAt"])
            if x > t
        ]
        boundary = min(edges, default=0)
        return (running, boundary, collecting) if boundary else (None, 0, None)

    def open_prequeue(self, starts: int) -> None:
        if self.prequeue:  # the last one's draw is still to be made
            return
        self.prequeue, self.pq_first, self.pq_last, self.pq_until = "o", self.tickets + 1, 0, starts

    def close_prequeue(self) -> None:
        if self.prequeue != "o":
            return
        if self.tickets < self.pq_first:  # nobody came: nothing to draw
            self.prequeue = None
            return
        self.prequeue, self.pq_last = "p", self.tickets

    def in_prequeue(self, spot: Spot) -> bool:
        """A spot of the pre-queue open or closed and not yet drawn: answered without a place."""
        if not self.prequeue or spot.ticket < self.pq_first:
            return False
        return self.pq_last == 0 or spot.ticket <= self.pq_last

    def prequeue_stop(self) -> int | None:
        """The first order key the drain must not reach while a pre-queue waits for its draw."""
        return POST_OPEN + self.pq_first if self.prequeue else None

    def draw_prequeue(self) -> None:
        """The closed pre-queue's draw: its entrants still in the line (waiting, not held, keys
        in its ticket range) take the range's keys in drawn order."""
        if self.prequeue != "p":
            return
        lo, hi = POST_OPEN + self.pq_first, POST_OPEN + self.pq_last
        entrants = [v for k, v in self.eligible() if lo <= k <= hi]
        for k, vid in enumerate(prequeue_order(self.seed, self.pq_first, entrants)):
            self.spots[vid].key = lo + k
        self.prequeue = None
        if self.collecting:  # another event's pre-queue opened meanwhile: it opens now
            self.open_prequeue(self.collecting)

    def lay_over(self) -> None:
        """The settings in force: the running event's overrides over the room's own."""
        overrides = self.running["overrides"] if self.running else {}
        for name, setting in OVERRIDES.items():
            setattr(self, setting, overrides.get(name, self.own[setting]))
        ttl = overrides.get("admissionTtlSec")
        self.ttl_ms = self.own["ttl_ms"] if ttl is None else ttl * 1000
        if self.peak_bound is not None:
            more = self.capacity is None
            self.peak_bound = None if more else max(self.peak_bound, self.capacity)

    def at_events(self) -> None:
        """Cross every boundary passed since the last script ran, earning up to each at the
        rate in force before it; one passed a second or more ago keeps a second of the new rate."""
        while self.boundary and self.now >= self.boundary:
            edge = self.boundary
            self.accrue(edge)
            was = self.collecting
            self.running, self.boundary, self.collecting = self.event_state_at(edge)
            if was and not self.collecting:
                self.close_prequeue()
            if self.collecting and not was:
                self.open_prequeue(self.collecting)
            self.lay_over()
            if self.now - edge >= 1000:
                self.bank = min(self.bank, bank_cap(self.rate))

    def set_events(self, events: list[dict]) -> None:
        """Replace the events: boundaries passed are crossed first and admissions earned up to
        now at the settings in force, then the new list's settings at now apply."""
        self.at_events()
        self.accrue()
        self.events = [dict(e) for e in events]
        self.running, self.boundary, self.collecting = self.event_state_at(self.now)
        # a pre-queue opened or ended by this write (its event cancelled): drawn as at startsAt
        if self.collecting and not self.prequeue:
            self.open_prequeue(self.collecting)
        if self.prequeue == "o" and not self.collecting:
            self.close_prequeue()
        self.lay_over()
        self.bank = min(self.bank, bank_cap(self.rate))

    def update(self, **changes: object) -> None:
        """An update of the room's settings (update_room.lua): ``hold``, ``net`` or its own
        mode, rate, capacity, ttl_ms. A rate change books what was earned at the old rate, and a
        running event's overrides stay in force over the room's own."""
        self.at_events()
        if "hold" in changes:
            self.hold = changes.pop("hold")  # type: ignore[assignment]
        if "net" in changes:
            self.net = changes.pop("net")  # type: ignore[assignment]
        if "rate" in changes:
            self.accrue()
        self.own.update(changes)
        self.lay_over()
        overrides = self.running["overrides"] if self.running else {}
        if "rate" in changes and "ratePerMinute" not in overrides:
            self.bank = min(self.bank, bank_cap(self.rate))  # a second of the rate written

    def live_active(self) -> int:
        return sum(1 for exp in self.active.values() if exp > self.now)

    def admit(self, vid: str) -> None:
        spot = self.spots[vid]
        spot.admitted_at, spot.expires = self.now, self.now + self.ttl_ms
        self.dealt += 1
        spot.deal = self.dealt
        self.active[vid] = spot.expires
        self.admissions.append(self.now)

    def drain(self) -> None:
        if self.status != "open" or self.now < self.opens_at or self.draw_state == "c":
            return
        self.accrue()
        self.active = {v: e for v, e in self.active.items() if e > self.now}
        passthrough = self.mode_now() == "passthrough"
        budget = 200 if passthrough else min(200, self.bank // UNIT)
        if self.capacity is not None:
            budget = min(budget, self.capacity - len(self.active))
        if self.mode_now() == "random":
            self.draw_random(budget)
            return
        for _, vid in self.drainable():
            if budget <= 0:
                break
            spot = self.spots[vid]
            if spot.seen + self.abandon_ms <= self.now:
                del self.spots[vid]
                continue
            self.admit(vid)
            if not passthrough:
                self.bank -= UNIT
            budget -= 1

    def draw_random(self, budget: int) -> None:
        """Each admission drawn among the eligible, invitees' lanes first in their order; an
        abandoned spot drawn is dropped and the same deal drawn again among the rest."""
        line = self.drainable()
        while budget > 0 and line:
            in_lane = line[0][0] < -DRAWN_SPAN
            _, vid = line.pop(0 if in_lane else draw_rank(self.seed, self.dealt + 1, len(line)))
            if self.spots[vid].seen + self.abandon_ms <= self.now:
                del self.spots[vid]
                continue
            self.admit(vid)
            self.bank -= UNIT
            budget -= 1

    def odds(self) -> float:
        """A random room's odds: admissions possible in a minute (the rate, within free
        capacity, or the last minute's pace when full) over the eligible line, at most 1."""
        line = len(self.eligible())
        if self.status != "open" or self.now + UNIT < self.opens_at or line < 1:
            return 0.0
        per_minute = self.rate
        if self.capacity is not None:
            free = self.capacity - self.live_active()
            if free <= 0:
                second = self.now // 1000
                free = sum(1 for t in self.admissions if t // 1000 > second - 60)
            per_minute = min(per_minute, free)
        return float(f"{min(1, per_minute / line):.4g}")

    def random_cadence(self) -> int:
        """Every spot alike: line / budget seconds from 2 s, at most a third of the admission's
        life, and before opensAt as the fifo cadence waits."""
        interval = min(max(2000, len(self.eligible()) * 1000 / self.budget), self.ttl_ms / 3)
        before_opening = min(max(0, self.opens_at - self.now) / 5, 300_000)
        return math.floor(max(interval, before_opening))

    def sweep(self) -> None:
        """Drop abandoned spots anywhere in the line, when the last pass began a minute ago.

        The engine walks a long line in bounded steps over several calls; a line as short as the
        model's is one step, so here a pass is whole.
        """
        if self.now - self.swept < SWEEP_EVERY:
            return
        self.swept = self.now
        for vid, spot in list(self.spots.items()):
            if spot.admitted_at is None:
                gone = spot.seen + self.abandon_ms <= self.now
            else:
                gone = self.now > spot.expires + 60_000
            if gone:
                self.drop(vid)

    def mark_seen(self, spot: Spot) -> None:
        """Last-seen is booked ahead, min(abandonAfterSec / 2, 150 s) at a time, and only once it
        has passed: a spot goes at most that booking later than abandonAfterSec after its last
        poll, never sooner."""
        if spot.seen < self.now:
            spot.seen = self.now + min(self.abandon_ms // 2, SEEN_BOOKING_MAX_MS)

    def limited(self, spot: Spot) -> bool:
        window = self.now // 60_000
        if spot.window != window:
            spot.window, spot.count = window, 0
        if spot.count >= 90:
            return True
        spot.count += 1
        return False

    def cadence(self, position: int, pace: float, until: int | None = None) -> int:
        """docs/queue.md, invariant 11: 1-2 s at the front (max(100, 10 s of admissions)), then
        about five polls over the expected wait from 2 s to 5 min, stretched when the line's polls
        would exceed the budget (5,000 a second by default)."""
        front = max(100, math.ceil(pace * 10))
        delay = max(0, (self.opens_at if until is None else until) - self.now)
        before_opening = min(delay / 5, 300_000)
        if position <= front:
            return math.floor(max(1000 if position * 2 <= front else 2000, before_opening))
        line = len(self.eligible())
        capped_from = max(front, pace * 1500)
        planned = 5 * pace * math.log(min(line, capped_from) / front)
        planned += max(0, line - capped_from) / 300
        stretch = max(1.0, planned / self.budget) if line > front else 1.0
        wait = delay + position * 1000 / pace
        return math.floor(min(max(2000, wait / 5), 300_000) * stretch)

    def keep_for_cadence(self, spot: Spot, interval: int) -> None:
        """docs/queue.md, invariant 7: kept max(abandonAfterSec, 3 polls) after its last poll:
        booked that far ahead once what is booked falls short."""
        lead = max(0, 3 * interval - self.abandon_ms)
        if spot.seen < self.now + lead:
            spot.seen = self.now + lead + min(self.abandon_ms // 2, SEEN_BOOKING_MAX_MS)

    def answered(self, vid: str) -> tuple:
        """The answer, after which a waiting spot is kept as long as its cadence asks."""
        reply = self.answer(vid)
        spot = self.spots[vid]
        if spot.admitted_at is None:
            self.keep_for_cadence(spot, reply[4])
        return reply

    def answer(self, vid: str) -> tuple:
        spot = self.spots[vid]
        if spot.admitted_at is not None:
            return ("admitted", spot.ticket, None, None, spot.deal, spot.expires)
        if spot.score >= self.hold:
            return ("held", spot.ticket, None, None, 15_000)
        if self.in_prequeue(spot):  # no place until the draw; the page counts to startsAt
            until = max(self.pq_until, self.now)
            return (
                "waiting",
                spot.ticket,
                None,
                None,
                self.cadence(1, self.rate / 60, until),
                until,
            )
        if self.mode_now() == "random":
            return ("waiting", spot.ticket, None, None, self.random_cadence(), self.odds())
        position = 1 + sum(1 for k, _ in self.eligible() if k < spot.key)
        eta = None
        pace = self.rate / 60
        if self.status == "open":
            if self.capacity is not None and self.live_active() >= self.capacity:
                second = self.now // 1000
                seen = sum(1 for t in self.admissions if t // 1000 > second - 60)
                eta = math.ceil(position * 60 / seen) if seen else None
                pace = seen / 60 if seen else pace
            else:
                wait = max(0, self.opens_at - self.now) + position * UNIT / self.rate
                eta = math.ceil(wait / 1000)
        return ("waiting", spot.ticket, position, eta, self.cadence(position, pace))

    # -- operations ------------------------------------------------------------------------

    def enter(self, vid: str, score: int, invite: Invite | None = None) -> tuple:
        if self.status == "idle":
            return ("idle",)
        self.at_events()
        spot = self.spots.get(vid)
        if spot and spot.admitted_at is not None and self.now > spot.expires + 60_000:
            self.drop(vid)
            spot = None
        if spot:
            if self.limited(spot):
                raise ModelError("RateLimited")
            self.mark_seen(spot)
            if spot.admitted_at is None:
                spot.score = score
            self.sweep()  # after `seen`: a visitor never sweeps itself
            self.drain()
            return self.answered(vid)
        if self.mode_now() == "reject":
            raise ModelError("RoomClosed")
        if invite is not None:
            spenders = self.invited.setdefault(invite.invite_id, set())
            if self.now >= invite.expires:
                raise ModelError("InviteExpired")
            if vid not in spenders and len(spenders) >= invite.uses:
                raise ModelError("InviteSpent")
            if vid in spenders:
                invite = None  # its lane was had once: the public line now
        self.sweep()  # before the fullness check
        self.drain()
        if len(self.waiting()) >= self.max_waiting:
            raise ModelError("QueueFull")
        pool = self.now < self.opens_at
        self.tickets += 1
        if invite is not None:
            self.invited[invite.invite_id].add(vid)
            key = LANES[invite.lane] + self.tickets
        elif pool:
            digest = hashlib.sha1((self.seed + vid).encode()).hexdigest()
            key = int(digest[:7], 16) * POOL + self.tickets
        else:
            key = POST_OPEN + self.tickets
        self.spots[vid] = Spot(self.tickets, score, key, self.now, self.now // 60_000, 1)
        self.net_step(vid)
        free = self.capacity is None or self.capacity - len(self.active) > 0
        nobody = not [1 for _, v in self.eligible() if v != vid]
        at_once = not pool and score < self.hold and self.status == "open" and free
        if at_once and invite is not None and invite.lane == "skip":
            self.admit(vid)  # over and above the rate
        elif (
            at_once
            and nobody
            and (self.mode_now() == "passthrough" or self.bank >= UNIT)
            and not self.prequeue  # an event's pre-queue: every newcomer waits for its draw
        ):
            if self.mode_now() != "passthrough":
                self.bank -= UNIT
            self.admit(vid)
        return self.answered(vid)

    def poll(self, vid: str, ticket: int, generation: int) -> tuple:
        if generation != self.generation:
            raise ModelError("TicketGone")
        self.at_events()
        spot = self.spots.get(vid)
        if not spot or spot.ticket != ticket:
            raise ModelError("TicketGone")
        if spot.admitted_at is not None and self.now > spot.expires + 60_000:
            self.drop(vid)
            raise ModelError("TicketGone")
        if self.limited(spot):
            raise ModelError("RateLimited")
        self.mark_seen(spot)
        self.sweep()
        if spot.admitted_at is None:
            self.drain()
            if vid not in self.spots:
                raise ModelError("TicketGone")
        return self.answered(vid)

    def drop(self, vid: str) -> None:
        self.spots.pop(vid, None)
        self.active.pop(vid, None)

    def leave(self, vid: str, ticket: int, generation: int) -> bool:
        spot = self.spots.get(vid)
        if generation != self.generation or not spot or spot.ticket != ticket:
            return False
        self.drop(vid)
        return True

    def open(self, opens_at: int | None, seed: str, draw_seed: str = "", salt: str = "") -> None:
        if self.status == "paused":
            self.status, self.last = "open", self.now
        elif self.status == "idle":
            self.status = "open"
            self.opens_at = self.now if opens_at is None else opens_at
            self.last, self.bank, self.seed = min(self.opens_at, self.now), 0, seed
            # only a future opensAt has a pool, hence a draw
            self.draw_state = "c" if self.opens_at > self.now else ""
            self.draw_seed, self.salt = draw_seed, bytes.fromhex(salt)

    def draw(self) -> None:
        """At opensAt, the pool's waiting spots take their drawn places: rank r of n sorts at
        -2^51 + r * 2^51 // n, before every other key."""
        if self.status != "open" or self.now < self.opens_at or self.draw_state != "c":
            return
        pool = {
            draws.entrant_id(self.salt, vid): spot
            for vid, spot in self.spots.items()
            if spot.admitted_at is None and -DRAWN_SPAN <= spot.key < POST_OPEN
        }
        order = draws.drawn_order(self.draw_seed, list(pool))
        self.drawn = order
        for rank, entrant in enumerate(order):
            pool[entrant].key = -(2**51) + rank * 2**51 // len(order)
        self.draw_state = "d"

    def pause(self) -> None:
        if self.status != "open":
            raise ModelError("NotOpen")
        self.at_events()
        self.accrue()
        self.status = "paused"

    def close(self) -> None:
        self.spots.clear()
        self.active.clear()
        self.admissions.clear()
        self.status, self.opens_at, self.seed, self.draw_state = "idle", 0, "", ""
        self.prequeue = None  # the pre-queue goes with the line (the events stay)
        self.bank = self.last = self.tickets = self.dealt = 0
        self.generation += 1
