"""A room's series against a real Redis, the room clock pinned and moved (never slept)."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import redis
from flask.testing import FlaskClient

from anteroom.engine import Engine
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.series import room_series as rs
from anteroom.queue.series.room_series import RoomSeries
from anteroom.queue.series.series_sampler import Sampler, SamplerThread
from anteroom.service_container import Services
from helpers import open_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis

T0 = 1_800_000_000_000  # a whole minute: slots fall on round numbers
HOUR = 3_600_000


@pytest.fixture
def series(engine: Engine) -> RoomSeries:
    return RoomSeries(engine.redis, engine.keys)


def pinned_room(engine: Engine, **config: object) -> str:
    room = open_room(engine, **config)
    engine.set_clock(room, T0)
    return room


def seed_counters(redis_client: redis.Redis, engine: Engine, room: str, **values: int) -> None:
    """The engine's counters and wait histogram, as the engine branch writes them."""
    counters = {k: v for k, v in values.items() if not k.startswith("w")}
    waits = {k[1:]: v for k, v in values.items() if k.startswith("w")}
    if counters:
        redis_client.hset(engine.keys.room(room), mapping=counters)
    if waits:
        redis_client.hset(engine.keys.room_base(room) + "waits", mapping=waits)


def test_a_sample_holds_the_moment_and_the_counters(
    engine: Engine, series: RoomSeries, redis_client: redis.Redis
) -> None:
    room = pinned_room(engine, ratePerMinute=60, capacity=10, holdScore=70)
    for i in range(3):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    engine.enter(room, "bot", "sb", 80)  # held (the first one went straight in)
    # Entries, the admission and its wait (0 s: bucket "1") are the engine's own; a refusal, two
    # swept spots and three older waits are seeded, as a longer life of the room would leave them.
    seed_counters(redis_client, engine, room, nfull=1, nswept=2, w5=3)
    assert series.sample(room) == (True, 10_000)
    [sample] = series.samples(room, T0, T0 + 1, coarse=False)
    assert sample.at_ms == T0 and sample.status == rs.STATUS_CODES["open"]
    assert dict(zip(rs.GAUGES, sample.gauges, strict=True)) == {
        "waiting": 2, "held": 1, "active": 1, "rate": 60, "capacity": 10,
    }  # fmt: skip
    counters = dict(zip(rs.COUNTERS, sample.counters, strict=True))
    assert counters == {"dealt": 1, "nent": 4, "nfull": 1, "ndenied": 0, "nbusy": 0,
                        "nleft": 0, "nswept": 2}  # fmt: skip
    assert sample.waits[rs.WAIT_BUCKETS.index("1")] == 1
    assert sample.waits[rs.WAIT_BUCKETS.index("5")] == 3 and sum(sample.waits) == 4


def test_one_sample_per_slot_whoever_asks(engine: Engine, series: RoomSeries) -> None:
    room = pinned_room(engine)
    other_instance = RoomSeries(engine.redis, engine.keys)
    engine.shift_clock(room, 4_000)
    assert series.sample(room) == (True, 6_000)
    assert other_instance.sample(room) == (False, 6_000)
    engine.shift_clock(room, 6_000)
    assert other_instance.sample(room) == (True, 10_000)
    assert series.sample(room) == (False, 10_000)
    assert [s.at_ms for s in series.samples(room, T0, T0 + HOUR, coarse=False)] == [
        T0,
        T0 + 10_000,
    ]


def test_increases_per_window_and_wait_quantiles(
    engine: Engine, series: RoomSeries, redis_client: redis.Redis
) -> None:
    room = pinned_room(engine, ratePerMinute=60)
    seed_counters(redis_client, engine, room, dealt=0, nent=0)
    series.sample(room)
    # 10 s later: 6 admitted, 4 waited about 1-2 s, 2 waited 20-30 s.
    engine.shift_clock(room, 10_000)
    seed_counters(redis_client, engine, room, dealt=6, nent=9, w2=4, w30=2)
    series.sample(room)
    engine.shift_clock(room, 10_000)
    seed_counters(redis_client, engine, room, dealt=7, nent=9, w2=5, w30=2)
    series.sample(room)
    window = rs.aggregate(
        series.samples(room, T0 + 10_000, T0 + 30_000, coarse=False),
        T0 + 10_000,
        T0 + 30_000,
        10_000,
    )
    assert window.times == [T0 + 10_000, T0 + 20_000]
    assert window.counters["admitted"] == [6, 1]
    assert window.counters["entries"] == [9, 0]
    assert window.waits[0] is not None and sum(window.waits[0]) == 6
    # p50 is inside the (1, 2] bucket, p90 inside (20, 30].
    p50, p90 = window.quantiles["waitP50"][0], window.quantiles["waitP90"][0]
    assert p50 is not None and 1 < p50 <= 2
    assert p90 is not None and 20 < p90 <= 30
    # The one wait of the second window, interpolated in its bucket as Prometheus does.
    assert window.quantiles["waitP50"][1] == 1.5


def test_a_close_resets_counters_without_negative_increases(
    engine: Engine, series: RoomSeries
) -> None:
    room = pinned_room(engine, ratePerMinute=60)
    for i in range(3):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    series.sample(room)
    dealt = [engine.stats(room).dealt_total]
    for i in (1, 2):  # one admission earned per second: one more each round
        engine.shift_clock(room, 10_000)
        engine.poll(room, f"v{i}", i + 1, 1)
        series.sample(room)
        dealt.append(engine.stats(room).dealt_total)
    engine.close(room)  # the engine's counters start again from 0
    engine.open(room)
    engine.shift_clock(room, 10_000)
    engine.enter(room, "late", "sl", 10)
    series.sample(room)
    dealt.append(engine.stats(room).dealt_total)
    assert dealt == [1, 2, 3, 1]
    window = rs.aggregate(series.samples(room, T0, T0 + 40_000, False), T0, T0 + 40_000, 10_000)
    assert window.counters["admitted"] == [0, 1, 1, 1]


def test_fine_samples_kept_a_day_minutes_kept_two_weeks(
    engine: Engine, series: RoomSeries, redis_client: redis.Redis
) -> None:
    room = pinned_room(engine)
    for _ in range(12):  # two minutes of 10 s samples
        series.sample(room)
        engine.shift_clock(room, 10_000)
    base = engine.keys.room_base(room)
    assert redis_client.zcard(base + "s10") == 12
    assert redis_client.zcard(base + "s60") == 2  # the first sample of each minute
    assert 0 < redis_client.pttl(base + "s10") <= rs.FINE_KEEP_MS + rs.COARSE_MS
    assert 0 < redis_client.pttl(base + "s60") <= rs.COARSE_KEEP_MS + rs.COARSE_MS
    engine.shift_clock(room, 25 * HOUR)
    series.sample(room)
    assert redis_client.zcard(base + "s10") == 1  # the day-old ones are trimmed
    assert redis_client.zcard(base + "s60") == 3
    engine.shift_clock(room, 15 * 24 * HOUR)
    series.sample(room)
    assert redis_client.zcard(base + "s60") == 1


def test_a_minute_series_is_written_after_missed_samples(
    engine: Engine, series: RoomSeries, redis_client: redis.Redis
) -> None:
    room = pinned_room(engine)
    engine.shift_clock(room, 30_000)  # nobody sampled the minute's first slot
    series.sample(room)
    engine.shift_clock(room, 10_000)
    series.sample(room)
    stored = series.samples(room, T0, T0 + HOUR, coarse=True)
    assert [s.at_ms for s in stored] == [T0 + 30_000]


def test_sampler_calls_redis_once_per_slot(engine: Engine, series: RoomSeries) -> None:
    room = pinned_room(engine)
    sampler = Sampler(series)
    engine.shift_clock(room, 3_000)  # 7 s before the room's next slot
    now = 5_000_000
    sampler(room, now)
    for tick in range(1, 8):  # a ticker calls every second
        sampler(room, now + tick * 1_000)
    assert sampler.calls == 1
    engine.shift_clock(room, 7_000)
    for tick in range(8, 11):
        sampler(room, now + tick * 1_000)
    assert sampler.calls == 2
    assert len(series.samples(room, T0, T0 + HOUR, coarse=False)) == 2


def test_a_deleted_room_is_not_recreated(
    engine: Engine, series: RoomSeries, redis_client: redis.Redis
) -> None:
    room = pinned_room(engine)
    engine.delete_room(room)
    assert series.sample(room) == (False, None)
    series.tally(room, "ndenied")
    series.flush_tallies()
    assert not redis_client.exists(engine.keys.room(room))
    assert not redis_client.exists(engine.keys.room_base(room) + "s10")


def test_refusals_counted_by_the_web_tier(
    engine: Engine, series: RoomSeries, redis_client: redis.Redis
) -> None:
    room = pinned_room(engine)
    series.tally(room, "ndenied")
    series.tally(room, "nbusy")
    series.tally(room, "ndenied")
    assert redis_client.hmget(engine.keys.room(room), "ndenied", "nbusy") == [None, None]
    series.flush_tallies()
    assert redis_client.hmget(engine.keys.room(room), "ndenied", "nbusy") == ["2", "1"]
    series.flush_tallies()  # nothing twice
    assert redis_client.hmget(engine.keys.room(room), "ndenied", "nbusy") == ["2", "1"]
    with pytest.raises(ValueError):
        series.tally(room, "dealt")


def test_quantile_of_an_empty_or_open_ended_histogram() -> None:
    empty = [0] * len(rs.WAIT_BUCKETS)
    assert rs.quantile(empty, 0.5) is None
    last = [*empty[:-1], 3]
    assert rs.quantile(last, 0.99) == 7200.0


# -- the API ---------------------------------------------------------------------------------


@pytest.fixture
def api(client: FlaskClient, services: Services) -> tuple[FlaskClient, dict[str, str], str]:
    """A client, the headers of a read-only key of env "test", and a pinned open room."""
    _, reader = services.keystore.create("test", ["queues:read"])
    room = pinned_room(services.engine, ratePerMinute=60)
    return client, {"Authorization": f"Bearer {reader}"}, room


def test_series_api_draws_what_was_sampled(
    api: tuple[FlaskClient, dict[str, str], str], services: Services
) -> None:
    client, headers, room = api
    engine, series = services.engine, services.series
    for i in range(5):
        engine.enter(room, f"v{i}", f"s{i}", 10)
    series.sample(room)
    engine.shift_clock(room, 10_000)
    engine.poll(room, "v1", 2, 1)
    engine.pause(room)
    series.sample(room)
    url = f"/api/management/v1/queues/{room}/series"
    answer = client.get(url, headers=headers, query_string={"from": T0, "to": T0 + 20_000})
    assert answer.status_code == 200, answer.json
    body = answer.json
    assert body["times"] == [T0, T0 + 10_000] and body["step"] == 10_000
    assert body["waiting"] == [4, 3] and body["admitted"] == [0, 1]
    assert body["status"] == [1, 2] and body["rate"] == [60, 60]
    assert body["safetyNet"] == [None, None]  # a room without one
    assert body["resolution"] == 10_000 and body["now"] == T0 + 10_000
    assert answer.headers["Cache-Control"] == "no-store"
    # The default: the last hour by the room's clock, in 10 s steps.
    default = client.get(url, headers=headers).json
    assert default["to"] == T0 + 10_001 and default["step"] == 10_000
    assert default["waiting"][-2:] == [4, 3]


def test_the_series_shows_the_safety_net_state_and_older_samples_read_as_none(
    engine: Engine, series: RoomSeries, redis_client: redis.Redis
) -> None:
    net = {"activeSessions": 2, "arrivalsPerMinute": 1000, "coolDownSec": 60}
    room = pinned_room(engine, ratePerMinute=1, safetyNet=net)
    plain = pinned_room(engine, slug="plain")
    engine.enter(room, "v0", "s0", 10)
    series.sample(room)
    series.sample(plain)
    for i in range(1, 4):  # the second reaches activeSessions: the third waits
        engine.enter(room, f"v{i}", f"s{i}", 10)
    engine.shift_clock(room, 10_000)
    series.sample(room)
    window = rs.aggregate(series.samples(room, T0, T0 + 20_000, False), T0, T0 + 20_000, 10_000)
    assert window.safety_net == ["calm", "queueing"]
    assert [s.net for s in series.samples(plain, T0, T0 + 1, False)] == [0]
    # a sample written before the safety net existed has no state at its end
    member = redis_client.zrange(engine.keys.room_base(plain) + "s10", 0, 0)[0]
    older = rs.Sample.parse(member.rsplit(":", 1)[0])
    assert older.net == 0 and older.waits == series.samples(plain, T0, T0 + 1, False)[0].waits


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"from": "yesterday"}, "from"),
        ({"to": "-5"}, "to"),
        ({"step": "15000"}, "step"),
        ({"step": "0"}, "step"),
        ({"from": str(T0), "to": str(T0)}, "from"),
        ({"from": "0", "to": str(T0)}, "from"),
        ({"from": str(T0), "to": str(T0 + 24 * HOUR), "step": "10000"}, "step"),
        ({"from": str(T0 - 48 * HOUR), "to": str(T0 - 47 * HOUR), "step": "10000"}, "step"),
    ],
)
def test_series_api_names_a_bad_range(
    api: tuple[FlaskClient, dict[str, str], str], query: dict[str, str], field: str
) -> None:
    client, headers, room = api
    answer = client.get(f"/api/management/v1/queues/{room}/series", headers=headers,
                        query_string=query)  # fmt: skip
    assert answer.status_code == 400
    assert answer.json["error"] == "BadRequest" and field in answer.json["fields"]


def test_series_api_older_ranges_come_per_minute(
    api: tuple[FlaskClient, dict[str, str], str], services: Services
) -> None:
    client, headers, room = api
    for _ in range(13):
        services.series.sample(room)
        services.engine.shift_clock(room, 10_000)
    services.engine.shift_clock(room, 2 * 24 * HOUR)
    answer = client.get(f"/api/management/v1/queues/{room}/series", headers=headers,
                        query_string={"from": T0, "to": T0 + 3 * 60_000})  # fmt: skip
    assert answer.status_code == 200, answer.json
    assert answer.json["resolution"] == 60_000 and answer.json["step"] == 60_000
    assert answer.json["times"] == [T0, T0 + 60_000, T0 + 120_000]
    assert answer.json["status"] == [1, 1, 1]


def test_series_api_keeps_to_the_key(
    api: tuple[FlaskClient, dict[str, str], str], services: Services
) -> None:
    client, _, room = api
    _, other = services.keystore.create("elsewhere")
    url = f"/api/management/v1/queues/{room}/series"
    assert client.get(url).status_code == 401
    assert client.get(url, headers={"Authorization": f"Bearer {other}"}).status_code == 403
    _, writer = services.keystore.create("test", ["queues:write"])
    assert client.get(url, headers={"Authorization": f"Bearer {writer}"}).status_code == 403


def test_a_refused_bot_is_counted_in_its_room(client: FlaskClient, services: Services) -> None:
    record, _ = services.keystore.create("shop")
    room = open_room(services.engine, env="shop", slug="drop")
    services.directory.refresh_once()  # what the process knows of its rooms, without Redis
    robot = Visitor(client, record.public_key)
    robot.identify(signals={"webdriver": True, "languages": 2})
    assert robot.enter("drop").status_code == 403
    assert robot.enter("drop").status_code == 403
    services.series.flush_tallies()
    assert services.redis.hget(services.keys.room(room), "ndenied") == "2"


def test_one_worker_of_an_instance_samples(engine: Engine, tmp_path: Path) -> None:
    room = pinned_room(engine)
    lock = tmp_path / "series-sampler.lock"
    workers = [
        SamplerThread(
            Sampler(RoomSeries(engine.redis, engine.keys)),
            lambda: [room],
            lambda: 1_000.0,
            lock_path=lock,
        )
        for _ in range(2)
    ]
    first, second = workers
    second.sampler.series.tally(room, "ndenied")  # refused by the worker that does not sample
    first.tick()
    second.tick()
    assert (first.sampler.calls, second.sampler.calls) == (1, 0)
    assert engine.redis.hget(engine.keys.room(room), "ndenied") == "1"  # added up all the same
    first.release()  # the leading worker died: its lock went with it
    engine.shift_clock(room, 10_000)
    second.tick()
    assert second.sampler.calls == 1
    assert len(second.sampler.series.samples(room, T0, T0 + HOUR, coarse=False)) == 2
    second.release()


def test_a_busy_refusal_is_counted_once_redis_takes_writes_again(
    client: FlaskClient, services: Services
) -> None:
    record, _ = services.keystore.create("shop")
    room = open_room(services.engine, env="shop", slug="drop")
    visitor = Visitor(client, record.public_key)
    visitor.identify()
    services.redis.config_set("maxmemory", "1")
    try:
        assert visitor.enter("drop").json["error"] == "Busy"
        with pytest.raises(StorageError):
            services.series.flush_tallies()  # refused too: the count is kept for later
    finally:
        services.redis.config_set("maxmemory", "0")
    services.series.flush_tallies()
    assert services.redis.hget(services.keys.room(room), "nbusy") == "1"


def _sample_in_a_process(url: str, room: str) -> bool:
    client = redis.Redis.from_url(url, decode_responses=True)
    written, _ = RoomSeries(client, Engine(client).keys).sample(room)
    return written


def test_processes_racing_for_a_slot_write_it_once(
    engine: Engine, series: RoomSeries, redis_server: EmbeddedRedis
) -> None:
    room = pinned_room(engine)
    for _ in range(3):
        with ProcessPoolExecutor(4, mp_context=mp.get_context("fork")) as pool:
            written = list(pool.map(_sample_in_a_process, [redis_server.url] * 8, [room] * 8))
        assert written.count(True) == 1
        engine.shift_clock(room, 10_000)
    assert len(series.samples(room, T0, T0 + HOUR, coarse=False)) == 3


def left_before_their_turn(engine: Engine, series: RoomSeries) -> str:
    """A room where, on its pinned clock, one waiting visitor leaves after 25 s, one goes quiet
    and is dropped, and an admitted one leaves; sampled at T0 and at the end (T0 + 145 s)."""
    # One slot, held for an hour by the first visitor: everyone after waits, whatever the clock.
    room = pinned_room(engine, capacity=1, admissionTtlSec=3600, abandonAfterSec=60)
    first = engine.enter(room, "first", "s0", 10)
    assert first.status == "admitted"
    stays = engine.enter(room, "stays", "s1", 10)
    leaves = engine.enter(room, "leaves", "s2", 10)
    engine.enter(room, "quiet", "s3", 10)
    assert series.sample(room)[0]
    engine.shift_clock(room, 25_000)
    assert engine.leave(room, "leaves", leaves.ticket or 0, leaves.generation)  # waited 25 s
    assert engine.leave(room, "first", first.ticket or 0, first.generation)  # admitted: no count
    # "quiet" never polls again; "stays" does, so only "quiet" is dropped as abandoned.
    for _ in range(6):
        engine.shift_clock(room, 20_000)
        engine.poll(room, "stays", stays.ticket or 0, stays.generation, "s1")
        engine.tick(room)
        engine.sweep(room)
    assert series.sample(room)[0]
    return room


def test_spots_that_left_before_their_turn_are_counted_by_their_wait(
    engine: Engine, series: RoomSeries
) -> None:
    room = left_before_their_turn(engine, series)
    first, last = series.samples(room, T0, T0 + HOUR, coarse=False)
    assert sum(first.abandoned) == 0
    by_bucket = dict(zip(rs.WAIT_BUCKETS, last.abandoned, strict=True))
    assert by_bucket["30"] == 1  # the one who left after 25 s
    # the quiet one, dropped once 60 s unpolled had passed, at the first tick after
    assert by_bucket["60"] + by_bucket["120"] == 1
    assert sum(last.abandoned) == 2  # the admitted one who left is not among them
    assert last.later[0] == 0  # the admission that left was not left unused
    assert dict(zip(rs.COUNTERS.values(), last.counters, strict=True))["leaves"] == 2


def test_the_series_counts_admissions_that_ran_out_unrenewed(
    engine: Engine, series: RoomSeries
) -> None:
    room = pinned_room(engine, admissionTtlSec=30, ratePerMinute=6000)
    series.sample(room)
    engine.shift_clock(room, 1_000)
    assert engine.enter(room, "v", "s", 10).status == "admitted"
    engine.shift_clock(room, 99_000)  # its 30 s and the grace minute are past
    while not engine.sweep(room)[1]:
        pass
    series.sample(room)
    window = rs.aggregate(series.samples(room, T0, T0 + HOUR, False), T0, T0 + 120_000, 60_000)
    assert window.counters["unusedAdmissions"] == [0, 1]


def test_series_api_shows_who_left_before_their_turn(
    client: FlaskClient, services: Services
) -> None:
    _, reader = services.keystore.create("test", ["queues:read"])
    room = left_before_their_turn(services.engine, services.series)
    url = f"/api/management/v1/queues/{room}/series"
    query = {"from": T0, "to": T0 + 180_000, "step": 60_000}
    body = client.get(url, headers={"Authorization": f"Bearer {reader}"}, query_string=query).json
    # the first window has no sample before it to count from, the middle one no sample at all
    assert body["abandonedWaits"][:2] == [None, None]
    last = body["abandonedWaits"][2]
    assert last[body["waitBuckets"].index("30")] == 1 and sum(last) == 2


def test_a_sample_older_than_a_later_counter_reads_it_as_zero_and_keeps_the_others() -> None:
    """Samples written before the agents' counters hold unusedAdmissions alone after the
    abandon buckets: it is read as it was, the newer counters as zeros."""
    buckets = len(rs.WAIT_BUCKETS)
    head = [T0, 1, *([0] * len(rs.GAUGES)), *([0] * len(rs.COUNTERS)), *([0] * buckets), 0]
    older = rs.Sample.parse(":".join(str(x) for x in [*head, *([0] * buckets), 7]))
    assert dict(zip(rs.LATER_COUNTERS.values(), older.later, strict=True)) == {
        "unusedAdmissions": 7, "agentsQueued": 0, "agentsRefused": 0, "agentsInvalid": 0,
        "agentsLane": 0,
    }  # fmt: skip
