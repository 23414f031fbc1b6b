"""A spot far from the head that the snapshot does not answer (a ticket without an order key,
the engine called without its claims) takes the full poll, in one round trip: exact position,
ETA and cadence, the per-ticket limit, and the drain carried along whoever polls. The snapshot
those far polls are answered from writes nothing, so a replica may serve it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import redis

from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.script_replies import SNAPSHOT_AT
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line import spot_record
from anteroom.queue.line.poll_cadence import poll_after
from anteroom.sdk.tokens import TicketClaims
from helpers import carried_claims, free_port, make_room

pytestmark = pytest.mark.redis

START = 1_800_000_000_000
REDIS7 = "/usr/bin/redis-server"


def open_line(engine: Engine, spots: int, **config: int) -> str:
    room = make_room(engine, **({"ratePerMinute": 60} | config))
    engine.set_clock(room, START)
    engine.open(room)
    for i in range(spots):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    return room


def test_a_deep_spot_hears_its_exact_position_eta_and_cadence(engine: Engine) -> None:
    room = open_line(engine, 1_200)
    dealt = engine.stats(room).dealt_total
    line = engine.stats(room).waiting
    for ticket in (300, 1_150):
        answer = engine.poll(room, f"v{ticket - 1}", ticket, 1)
        position = ticket - dealt
        assert (answer.status, answer.ticket, answer.position) == ("waiting", ticket, position)
        assert answer.eta_seconds == math.ceil(position * 60_000 / 60 / 1000)
        # about five polls over its wait of `position` seconds, at most every 5 minutes
        assert answer.poll_after_ms == min(300_000, position * 200)
        assert answer.poll_after_ms == poll_after(position, 1.0, 0, line, 5_000)
        assert (answer.session_jti, answer.score, answer.room_status) == (
            f"s{ticket - 1}",
            10,
            "open",
        )


def test_deep_polls_alone_keep_the_line_moving(engine: Engine) -> None:
    room = open_line(engine, 400, ratePerMinute=6_000)  # the clock stands still while it fills
    before = engine.poll(room, "v299", 300, 1).position
    engine.shift_clock(room, 100)  # ten admissions earned; nobody near the head polls
    after = engine.poll(room, "v299", 300, 1).position
    assert before is not None and after == before - 10
    assert engine.stats(room).dealt_total == 300 - after


def test_a_deep_spot_is_limited_to_90_polls_a_minute(engine: Engine) -> None:
    room = open_line(engine, 300, ratePerMinute=1)
    engine.shift_clock(room, 60_000 - (START % 60_000) + 1)  # a fresh one-minute window
    engine.enter(room, "v250", "s250", 10)  # the entry is the first of 90
    for _ in range(89):
        engine.poll(room, "v250", 251, 1)
    with pytest.raises(eng.RateLimited) as caught:
        engine.poll(room, "v250", 251, 1)
    assert caught.value.retry_after is not None and 1 <= caught.value.retry_after <= 60


def test_a_revoked_deep_spot_hears_so_and_goes(engine: Engine) -> None:
    room = open_line(engine, 300, ratePerMinute=1)
    engine.revoke(room, jti="s250", life_ms=60_000)
    with pytest.raises(eng.SessionRevoked):
        engine.poll(room, "v250", 251, 1)
    with pytest.raises(eng.TicketGone):
        engine.poll(room, "v250", 251, 1, session_jti="")
    assert engine.poll(room, "v251", 252, 1).status == "waiting"


def evalsha_calls(engine: Engine) -> int:
    stats = engine.redis.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0))


def test_a_ticket_without_an_order_key_takes_the_full_poll_in_one_round_trip(
    engine: Engine,
) -> None:
    room = open_line(engine, 2_100, ratePerMinute=1)
    deep = engine.poll(room, "v2049", 2_050, 1)  # the script is loaded before counting
    assert deep.order_key is not None and (deep.position or 0) > 2_000
    carried = carried_claims(room, "v2049", deep)
    old = TicketClaims(room, "v2049", 2_050, 1, "test", session_id="s2049")  # no qk, no qu
    calls = evalsha_calls(engine)
    answer = engine.poll(room, "v2049", 2_050, 1, "s2049", carried=old)
    assert evalsha_calls(engine) - calls == 1  # the full poll; no snapshot is read for it
    assert (answer.position, answer.order_key) == (deep.position, deep.order_key)
    # The same spot with its order key is answered from the snapshot: no call once it is read.
    engine.poll(room, "v2049", 2_050, 1, "s2049", carried=carried)
    calls = evalsha_calls(engine)
    assert engine.poll(room, "v2049", 2_050, 1, "s2049", carried=carried).position == deep.position
    assert evalsha_calls(engine) == calls


def test_the_snapshot_read_writes_nothing(engine: Engine, redis_client: redis.Redis) -> None:
    room = open_line(engine, 300, ratePerMinute=1)
    engine.shift_clock(room, 1_000)
    engine.poll(room, "v250", 251, 1)  # books last-seen: the full poll's write
    base = engine.keys.room_base(room)
    before = {key: redis_client.dump(key) for key in redis_client.keys(base + "*")}
    aof = int(redis_client.info("persistence")["aof_current_size"])
    for _ in range(30):
        raw = engine._run_read("snapshot", room, "")
        assert raw[SNAPSHOT_AT.status] == "open"
    assert {key: redis_client.dump(key) for key in redis_client.keys(base + "*")} == before
    assert int(redis_client.info("persistence")["aof_current_size"]) == aof


def redis7(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> EmbeddedRedis:
    monkeypatch.setenv("ANTEROOM_REDIS_SERVER", REDIS7)
    return EmbeddedRedis(tmp_path / name, port=free_port()).start()


def test_far_polls_read_their_snapshot_on_a_replica(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    primary_server = redis7(tmp_path, "primary", monkeypatch)
    replica_server = redis7(tmp_path, "replica", monkeypatch)
    try:
        primary = redis.Redis.from_url(primary_server.url, decode_responses=True)
        replica = redis.Redis.from_url(replica_server.url, decode_responses=True)
        # Debian's redis-server (make test installs it): EVALSHA_RO needs Redis 7.
        assert int(primary.info("server")["redis_version"].split(".")[0]) >= 7
        replica.replicaof("127.0.0.1", primary_server.port)
        clock = [1_000.0]
        engine = Engine(primary, reader=replica)
        engine.snapshots.clock = engine.bookings.clock = lambda: clock[0]
        room = open_line(engine, 2_100, ratePerMinute=1)
        deep = engine.poll(room, "v2049", 2_050, 1)
        carried = carried_claims(room, "v2049", deep)
        assert primary.wait(1, 10_000) == 1  # the replica has every write so far
        engine.poll(room, "v2049", 2_050, 1, "s2049", carried=carried)  # loaded (NOSCRIPT first)
        replica.config_resetstat()
        primary.config_resetstat()
        for second in range(3):  # three seconds of far polls: one snapshot read a second
            clock[0] += 1.0
            for _ in range(5):
                far = engine.poll(room, "v2049", 2_050, 1, "s2049", carried=carried)
                assert (far.status, far.position) == ("waiting", deep.position), second
        assert replica.info("commandstats")["cmdstat_evalsha_ro"]["calls"] == 3
        assert "cmdstat_evalsha" not in primary.info("commandstats")
        # What the snapshot cannot decide (the visitor revoked) goes to the primary's full poll.
        engine.revoke(room, vid="v2049", life_ms=60_000)
        assert primary.wait(1, 10_000) == 1
        clock[0] += 1.0
        primary.config_resetstat()
        with pytest.raises(eng.SessionRevoked):
            engine.poll(room, "v2049", 2_050, 1, "s2049", carried=carried)
        assert primary.info("commandstats")["cmdstat_evalsha"]["calls"] == 1
    finally:
        replica_server.stop()
        primary_server.stop()


def test_a_due_booking_of_a_deep_spot_is_written_by_its_one_poll(
    engine: Engine, redis_client: redis.Redis
) -> None:
    # abandonAfterSec 300; a day before opening every spot is told to poll every 5 minutes, so
    # it is kept 15 minutes after each poll: last-seen is booked 600 s + 150 s ahead, and again
    # by a poll finding less than 600 s booked.
    room = make_room(engine, ratePerMinute=1)
    engine.set_clock(room, START)
    engine.open(room, START + 86_400_000)  # a pre-queue: the drain owes nothing
    for i in range(300):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    engine.shift_clock(room, 151_000)
    while not engine.sweep(room, 10_000)[1]:  # the minute's sweep pass, done
        pass
    keys = engine.keys.room_keys(room)
    vid = redis_client.zrange(keys["line"], 200, 200)[0]  # 201st in the lottery's order
    ticket = int(vid[1:]) + 1
    redis_client.script_load(engine._scripts["poll"].script)  # a NOSCRIPT would count a call
    calls = evalsha_calls(engine)
    answer = engine.poll(room, vid, ticket, 1)
    assert (answer.status, answer.position) == ("waiting", 201)
    assert evalsha_calls(engine) - calls == 1
    record = redis_client.hget(keys["spots"], vid) or ""
    assert int(spot_record.parse(record)["seen"]) == START + 151_000 + 600_000 + 150_000
    assert answer.kept_until_ms == START + 151_000 + 600_000 + 150_000 + 300_000
    engine.poll(room, vid, ticket, 1)  # booked: nothing more to write
    assert redis_client.hget(keys["spots"], vid) == record
