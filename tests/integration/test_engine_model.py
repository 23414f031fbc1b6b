"""Property-based: random operation sequences give the same answers from engine and model."""

from __future__ import annotations

from collections import Counter
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from anteroom.engine import Engine, QueueAnswer
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line.line_blocks import block_of
from anteroom.queue.rooms import room_events
from anteroom.sdk import draw as draws
from anteroom.sdk.tokens import InviteClaims
from helpers import make_room
from reference_model import Invite, Model, ModelError, bank_cap

pytestmark = [pytest.mark.redis, pytest.mark.slow]

VISITORS = [f"v{i}" for i in range(8)]
START = 1_800_000_000_000
EVENTS = ["e1", "e2", "e3"]
# an event's overrides: each setting left as the room has it (absent) or one of these
OVERRIDDEN = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(["fifo", "random", "passthrough", "reject"]),
        "ratePerMinute": st.sampled_from([1, 60, 600, 6_000]),
        "capacity": st.sampled_from([None, 1, 3]),
        "admissionTtlSec": st.sampled_from([30, 120]),
    },
)


def comparable(answer: QueueAnswer) -> tuple:
    if answer.status == "idle":
        return ("idle",)
    if answer.status == "admitted":
        assert answer.admission is not None
        # the admission's life too: an event's admissionTtlSec, or the room's own
        admission = answer.admission
        return ("admitted", answer.ticket, None, None, admission.deal_number, admission.expires_ms)
    said = (answer.status, answer.ticket, answer.position, answer.eta_seconds, answer.poll_after_ms)
    if answer.status == "waiting" and answer.position is None and answer.odds is None:
        return (*said, answer.opens_at_ms)  # an event pre-queue's entrant: counts to startsAt
    return said if answer.odds is None else (*said, answer.odds)


class EngineAgainstModel(RuleBasedStateMachine):
    url: str

    def __init__(self) -> None:
        super().__init__()
        self.client = connect(self.url, timeout=30)
        self.client.flushall()
        self.engine = Engine(self.client)
        self.invites: dict[str, Invite] = {}

    @initialize(
        rate=st.sampled_from([1, 30, 60, 90, 600]),
        capacity=st.sampled_from([None, 1, 2]),
        hold=st.sampled_from([50, 70]),
        ahead=st.sampled_from([None, None, 30_000]),
        mode=st.sampled_from(["fifo", "fifo", "random"]),
        prequeue=st.sampled_from([None, None, 2_500, 30_000]),
        early=st.lists(st.sampled_from(VISITORS), max_size=5, unique=True),
    )
    def create(
        self,
        rate: int,
        capacity: int | None,
        hold: int,
        ahead: int | None,
        mode: str,
        prequeue: int | None,
        early: list[str],
    ) -> None:
        self.room = make_room(
            self.engine, ratePerMinute=rate, capacity=capacity, holdScore=hold,
            admissionTtlSec=30, abandonAfterSec=60, maxWaiting=6, mode=mode,
        )  # fmt: skip
        self.engine.set_clock(self.room, START)
        # a third of runs draw from the start, so lines of several are drawn from
        self.model = Model(rate, capacity, 30_000, hold, 60_000, 6, START, mode=mode)
        # most runs should exercise an open line; a third start with a pre-queue, so a draw
        # of several entrants is made, published and checked
        self.open(ahead)
        if prequeue:  # half the runs begin with an event's pre-queue open, and its entrants
            self.schedule("e1", prequeue, 30_000, {}, prequeue)
            self.crowd(early)

    def both(self, engine_call: Any, model_call: Any) -> Any:
        try:
            expected: Any = model_call()
        except ModelError as exc:
            expected = exc.code
        try:
            got: Any = engine_call()
        except eng.EngineError as exc:
            got = exc.code
        return got, expected

    @rule(vid=st.sampled_from(VISITORS), score=st.sampled_from([0, 10, 60, 80]))
    def enter(self, vid: str, score: int) -> None:
        got, expected = self.both(
            lambda: comparable(self.engine.enter(self.room, vid, "s", score)),
            lambda: self.model.enter(vid, score),
        )
        assert got == expected

    @precondition(lambda self: self.model.prequeue == "o")
    @rule(vids=st.lists(st.sampled_from(VISITORS), min_size=2, max_size=5, unique=True))
    def crowd(self, vids: list[str]) -> None:
        """Several come while an event's pre-queue collects (or leave first, to come back with
        a new ticket), so its draws are of several."""
        for vid in vids:
            spot = self.model.spots.get(vid)
            if spot is not None and not self.model.in_prequeue(spot):
                self.leave(vid)
            self.enter(vid, 10)

    @rule(
        vid=st.sampled_from(VISITORS),
        score=st.sampled_from([0, 10, 80]),
        which=st.sampled_from(["a", "b"]),
        lane=st.sampled_from(["skip", "priority"]),
        uses=st.sampled_from([1, 2]),
        life=st.sampled_from([5_000, 600_000]),
    )
    def enter_invited(self, vid: str, score: int, which: str, lane: str, uses: int,
                      life: int) -> None:  # fmt: skip
        # Invite "a" or "b" of this run: its terms are fixed by its first use (as a signed
        # token's are), so later draws reuse them.
        terms = self.invites.setdefault(which, Invite(which, self.model.now + life, uses, lane))
        claims = InviteClaims(self.room, "test", which, terms.expires, terms.uses, terms.lane)
        got, expected = self.both(
            lambda: comparable(self.engine.enter(self.room, vid, "s", score, invite=claims)),
            lambda: self.model.enter(vid, score, terms),
        )
        assert got == expected

    @rule(vid=st.sampled_from(VISITORS))
    def poll(self, vid: str) -> None:
        spot = self.model.spots.get(vid)
        ticket = spot.ticket if spot else 1
        got, expected = self.both(
            lambda: comparable(self.engine.poll(self.room, vid, ticket, self.model.generation)),
            lambda: self.model.poll(vid, ticket, self.model.generation),
        )
        assert got == expected

    @rule(vid=st.sampled_from(VISITORS))
    def leave(self, vid: str) -> None:
        spot = self.model.spots.get(vid)
        ticket = spot.ticket if spot else 1
        got, expected = self.both(
            lambda: self.engine.leave(self.room, vid, ticket, self.model.generation),
            lambda: self.model.leave(vid, ticket, self.model.generation),
        )
        assert got == expected

    @precondition(lambda self: self.model.status != "open")
    @rule(ahead=st.one_of(st.none(), st.integers(-120_000, 120_000)))
    def open(self, ahead: int | None) -> None:
        opens_at = None if ahead is None else self.model.now + ahead
        self.engine.open(self.room, opens_at)
        seed, draw_seed, salt = self.client.hmget(
            self.engine.keys.room(self.room), "seed", "dsd", "dsl"
        )
        self.model.open(opens_at, seed or "", draw_seed or "", salt or "")
        self.draw()

    def draw(self) -> None:
        """What the room ticker does each second: the pool's draw once opensAt has come."""
        self.engine.draw(self.room)
        self.model.draw()

    @rule(dice=st.integers(0, 2))
    def pause(self, dice: int) -> None:
        if dice:
            return
        got, expected = self.both(lambda: self.engine.pause(self.room), self.model.pause)
        assert got == expected

    @precondition(lambda self: self.model.status != "idle")
    @rule(dice=st.integers(0, 5))
    def close(self, dice: int) -> None:
        if dice:  # closing wipes the line; keep it rare so lines grow
            return
        self.engine.close(self.room)
        self.model.close()

    @rule(ms=st.sampled_from([1, 400, 1_000, 2_500, 30_000, 61_000]))
    def jump(self, ms: int) -> None:
        self.engine.shift_clock(self.room, ms)
        self.model.now += ms
        self.draw()

    @rule(hold=st.sampled_from([5, 50, 70, 90]))
    def hold_score(self, hold: int) -> None:
        self.engine.update_room(self.room, {"holdScore": hold})
        self.model.update(hold=hold)

    @rule(mode=st.sampled_from(["fifo", "fifo", "random", "random", "passthrough", "reject"]))
    def switch_mode(self, mode: str) -> None:
        self.engine.update_room(self.room, {"mode": mode})
        self.model.update(mode=mode)

    @rule(rate=st.sampled_from([1, 60, 600]), capacity=st.sampled_from([None, 1, 2]))
    def change_rate(self, rate: int, capacity: int | None) -> None:
        """The room's own rate and capacity: a running event's stay in force over them."""
        self.engine.update_room(self.room, {"ratePerMinute": rate, "capacity": capacity})
        self.model.update(rate=rate, capacity=capacity)

    @rule(net=st.sampled_from([None, (2, 1_000, 0), (1_000, 3, 5), (3, 4, 60)]))
    def safety_net(self, net: tuple[int, int, int] | None) -> None:
        names = ("activeSessions", "arrivalsPerMinute", "coolDownSec")
        value = net and dict(zip(names, net, strict=True))
        self.engine.update_room(self.room, {"safetyNet": value})
        self.model.update(net=net)

    def write_events(self, events: list[dict[str, Any]]) -> None:
        """The list written as the management API writes it (compare-and-set on its version)."""
        version = self.engine.get_room(self.room)["eventsVersion"]
        self.engine.set_events(self.room, version, events)
        self.model.set_events(events)

    @rule(
        which=st.sampled_from(EVENTS),
        starts=st.sampled_from([-5_000, 0, 1, 500, 1_000, 2_000, 30_000]),
        length=st.sampled_from([1, 999, 1_000, 2_500, 30_000, 90_000]),
        overrides=OVERRIDDEN,
        pre=st.sampled_from([None, None, 1, 1_000, 2_500, 40_000]),
    )
    def schedule(
        self, which: str, starts: int, length: int, overrides: dict[str, Any], pre: int | None
    ) -> None:
        """Schedule or change event ``which`` as the API allows (a running one, or one whose
        pre-queue is open, keeps its start and pre-queue; an ended one is on record unchanged);
        an overlap or a window in the past is refused. ``pre``: a pre-queue opening that long
        before startsAt (maybe past already: it opens as the list is written)."""
        now, events = self.model.now, self.model.events
        before = next((e for e in events if e["id"] == which), None)
        state = before and room_events.state(before, now)
        if state == "ended":
            return
        event = {"id": which, "startsAt": now + starts, "endsAt": now + starts + length,
                 "overrides": overrides or {"ratePerMinute": 600}}  # fmt: skip
        if pre is not None:
            event["preQueueOpensAt"] = now + starts - pre
        if before and state in ("running", "prequeue"):  # both times are fixed by then
            event.pop("preQueueOpensAt", None)
            event |= {k: before[k] for k in ("startsAt", "preQueueOpensAt") if k in before}
        if room_events.check_window(event, now, started=state == "running"):
            return
        try:
            listed = room_events.with_change(events, event, now)
        except room_events.EventOverlap:
            return
        self.write_events(listed)

    @rule(which=st.sampled_from(EVENTS))
    def cancel(self, which: str) -> None:
        """Cancel as the API does: a scheduled event goes, a running one ends now."""
        now, events = self.model.now, self.model.events
        event = next((e for e in events if e["id"] == which), None)
        if event is None or room_events.state(event, now) == "ended":
            return
        if room_events.state(event, now) == "running":
            self.write_events(room_events.with_change(events, event | {"endsAt": now}, now))
        else:
            self.write_events([e for e in events if e["id"] != which])

    @precondition(lambda self: self.model.boundary > self.model.now)
    @rule(late=st.sampled_from([0, 999, 1_000]))
    def to_boundary(self, late: int) -> None:
        """The clock moved to the next boundary, or just under or at a second past it."""
        self.jump(self.model.boundary - self.model.now + late)

    @rule()
    def tick(self) -> None:
        """The room ticker's call, with nobody polling (a safety net switches in it too)."""
        self.engine.tick(self.room)
        self.model.tick()
        self.model.draw()

    @invariant()
    def same_figures(self) -> None:
        if not hasattr(self, "room"):
            return
        stats = self.engine.stats(self.room)
        assert stats.status == self.model.status
        assert stats.dealt_total == self.model.dealt
        assert stats.tickets == self.model.tickets
        assert stats.now_ms == self.model.now
        # the boundaries crossed where the model crosses them: the next one and the event in force
        evo = self.client.hget(self.engine.keys.room(self.room), "evo") or "0|"
        boundary, running = evo.split("|")[:2]
        assert int(boundary) == self.model.boundary
        assert running == (self.model.running["id"] if self.model.running else "")
        # an event's pre-queue: collecting, or closed with its draw to make, where the model's is
        pqs, pqf, pqt = self.client.hmget(self.engine.keys.room(self.room), "pqs", "pqf", "pqt")
        assert pqs == self.model.prequeue
        if pqs:
            assert (int(pqf), int(pqt)) == (self.model.pq_first, self.model.pq_last)
        if self.model.status == "open":
            # the bank as booked (written lazily: earned since `last` at the rate in force,
            # which a boundary crossed books first) is the model's
            bank, last = self.client.hmget(self.engine.keys.room(self.room), "bank", "last")
            since, booked = max(int(last), self.model.opens_at), int(bank)
            if self.model.last > since:  # a boundary crossed on time may leave more than a cap
                earned = (self.model.last - since) * self.model.rate
                # as _bank.lua earns it: a bank already over the cap is kept, not cut down
                booked = min(max(bank_cap(self.model.rate), booked), booked + earned)
            assert booked == self.model.bank
        net = self.engine.get_room(self.room)["safetyNet"]
        if self.model.net is not None:
            assert net["state"] == self.model.net_state
        if self.model.peak_bound is not None:
            assert stats.peak_active <= self.model.peak_bound
        # the line's block counts (the far poll's snapshot) match the line, whatever happened
        keys = self.engine.keys.room_keys(self.room)
        line = self.client.zrange(keys["line"], 0, -1, withscores=True)
        counted = {b: int(n) for b, n in self.client.hgetall(keys["blk"]).items() if int(n)}
        assert counted == dict(Counter(block_of(int(key)) for _, key in line))
        # and the line is the model's, each at its order key (an event pre-queue's drawn ones too)
        assert [(int(key), vid) for vid, key in line] == self.model.eligible()
        # the draw as published: committed at scheduling, the seed secret until the draw is made,
        # then the seed, the count and the root of the model's own drawn order
        if self.model.status != "idle" and self.model.draw_state:
            published = self.engine.get_room(self.room)["draw"]
            assert published["commitment"] == draws.commitment(self.model.draw_seed)
            if self.model.draw_state == "c":
                assert "seed" not in published and "root" not in published
            else:
                assert published["seed"] == self.model.draw_seed
                assert published["entrants"] == len(self.model.drawn)
                assert published["root"] == draws.tree_root(self.model.drawn)

    def teardown(self) -> None:
        self.client.close()


def test_engine_matches_the_reference_model(redis_url: str, redis_target: str) -> None:
    EngineAgainstModel.url = redis_url
    run = EngineAgainstModel.TestCase
    run.settings = settings(
        max_examples=150 if redis_target == "embedded" else 50,  # the cluster: a shorter run
        stateful_step_count=50,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    run().runTest()
