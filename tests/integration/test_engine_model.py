"""Property-based: random operation sequences give the same answers from engine and model."""

from __future__ import annotations

from collections import Counter
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from anteroom.engine import Engine, QueueAnswer
from anteroom.queue import room_engine as eng
from anteroom.queue.line_blocks import block_of
from anteroom.queue.redis_link import connect
from anteroom.sdk import draw as draws
from anteroom.sdk.tokens import InviteClaims
from helpers import make_room
from reference_model import Invite, Model, ModelError

pytestmark = [pytest.mark.redis, pytest.mark.slow]

VISITORS = [f"v{i}" for i in range(8)]
START = 1_800_000_000_000


def comparable(answer: QueueAnswer) -> tuple:
    if answer.status == "idle":
        return ("idle",)
    if answer.status == "admitted":
        assert answer.admission is not None
        return ("admitted", answer.ticket, None, None, answer.admission.deal_number)
    said = (answer.status, answer.ticket, answer.position, answer.eta_seconds, answer.poll_after_ms)
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
    )
    def create(
        self, rate: int, capacity: int | None, hold: int, ahead: int | None, mode: str
    ) -> None:
        self.room = make_room(
            self.engine, ratePerMinute=rate, capacity=capacity, holdScore=hold,
            admissionTtlSec=30, abandonAfterSec=60, maxWaiting=6, mode=mode,
        )  # fmt: skip
        self.engine.set_clock(self.room, START)
        self.model = Model(rate, capacity, 30_000, hold, 60_000, 6, START)
        # a third of runs draw from the start, so lines of several are drawn from
        self.model.mode = mode
        # most runs should exercise an open line; a third start with a pre-queue, so a draw
        # of several entrants is made, published and checked
        self.open(ahead)

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
        self.model.hold = hold

    @rule(mode=st.sampled_from(["fifo", "fifo", "random", "random", "passthrough", "reject"]))
    def switch_mode(self, mode: str) -> None:
        self.engine.update_room(self.room, {"mode": mode})
        self.model.mode = mode

    @rule(net=st.sampled_from([None, (2, 1_000, 0), (1_000, 3, 5), (3, 4, 60)]))
    def safety_net(self, net: tuple[int, int, int] | None) -> None:
        names = ("activeSessions", "arrivalsPerMinute", "coolDownSec")
        value = net and dict(zip(names, net, strict=True))
        self.engine.update_room(self.room, {"safetyNet": value})
        self.model.net = net

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
        net = self.engine.get_room(self.room)["safetyNet"]
        if self.model.net is not None:
            assert net["state"] == self.model.net_state
        if self.model.capacity is not None:
            assert stats.peak_active <= self.model.capacity
        # the line's block counts (the far poll's snapshot) match the line, whatever happened
        keys = self.engine.keys.room_keys(self.room)
        line = self.client.zrange(keys["line"], 0, -1, withscores=True)
        counted = {b: int(n) for b, n in self.client.hgetall(keys["blk"]).items() if int(n)}
        assert counted == dict(Counter(block_of(int(key)) for _, key in line))
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
