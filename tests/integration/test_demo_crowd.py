"""Demo mode's crowd and console key, against a real Redis with the room clock moved."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from anteroom.engine import Engine
from anteroom.ops.demo_crowd import DemoCrowd
from anteroom.ops.demo_seed import ensure_demo, ensure_demo_secret
from anteroom.queue.series.room_series import RoomSeries, aggregate
from anteroom.store.keystore import KeyStore

pytestmark = pytest.mark.redis


def test_the_crowd_keeps_a_line_moving(engine: Engine) -> None:
    room = ensure_demo(engine, "http://127.0.0.1:8000")
    # The next whole minute: the series' windows align to minutes, and the room opened just now
    # (the clock moved back to this minute's start would stand before its opening, where nothing
    # is dealt, for as many seconds as the minute had run: the test then depended on the time).
    start = (engine.stats(room).now_ms // 60_000 + 1) * 60_000
    engine.set_clock(room, start)
    admitted: list[int] = []
    crowd = DemoCrowd(engine, room, random.Random(7), on_admit=lambda: admitted.append(1))
    series = RoomSeries(engine.redis, engine.keys)
    for second in range(1, 301):  # five minutes of the crowd, second by second
        engine.shift_clock(room, 1_000)
        crowd.step(float(second))
        series.sample(room)
    stats = engine.stats(room)
    assert stats.waiting > 0 and stats.held > 0  # a line, and some held for the operator
    assert 250 <= stats.dealt_total <= 310  # admitted at about the rate (60 a minute)
    # Every admission the crowd takes is counted (serve adds them to anteroom_admissions_total);
    # only those dealt whose visitor has not polled since are not (yet).
    assert 0.9 * stats.dealt_total <= len(admitted) <= stats.dealt_total
    window = aggregate(series.samples(room, start, start + 300_000, False), start,
                       start + 300_000, 60_000)  # fmt: skip
    waiting = [w for w in window.gauges["waiting"] if w is not None]
    assert len(set(waiting)) > 1  # the line moves
    assert all(a is not None and a > 30 for a in window.counters["admitted"][1:])


def test_the_crowd_stops_with_a_closed_room(engine: Engine) -> None:
    room = ensure_demo(engine, "http://127.0.0.1:8000")
    crowd = DemoCrowd(engine, room, random.Random(1))
    for second in range(1, 6):
        crowd.step(float(second))
    assert crowd.visitors
    engine.close(room)
    crowd.step(6.0)
    assert not crowd.visitors and engine.stats(room).waiting == 0


def test_the_demo_console_key_is_kept_until_revoked(engine: Engine, tmp_path: Path) -> None:
    keystore = KeyStore(engine.redis, engine.keys)
    secret = ensure_demo_secret(keystore, tmp_path)
    record = keystore.authenticate(secret)
    assert record is not None and record.environment == "demo"
    assert (tmp_path / "demo-secret-key").stat().st_mode & 0o777 == 0o600
    assert ensure_demo_secret(keystore, tmp_path) == secret
    keystore.revoke(record.id)
    again = ensure_demo_secret(keystore, tmp_path)
    assert again != secret and keystore.authenticate(again) is not None
