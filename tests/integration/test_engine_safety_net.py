"""The safety net in the scripts (docs/operators.md, "The safety net"): a calm room admits everyone,
crossing a threshold switches it to queueing in its own mode, and it cools back only after its
line has been empty and its traffic quiet for coolDownSec; on the room's clock, once."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import pytest

from anteroom.engine import Engine
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.rooms import room_config as rooms
from helpers import make_room

pytestmark = pytest.mark.redis

MINUTE = 60_000
T0 = 1_900_000_020 * 1000  # a minute's start: the arrivals' per-minute counts line up with it


def netted_room(engine: Engine, net: dict[str, int], **config: Any) -> str:
    """An open room with a safety net, its clock pinned at T0 (its bank starts empty)."""
    room = make_room(engine, safetyNet=net, **config)
    engine.set_clock(room, T0)
    engine.open(room)
    return room


def net_of(engine: Engine, room: str) -> dict[str, Any]:
    return dict(engine.get_room(room)["safetyNet"])


def enter(engine: Engine, room: str, vid: str) -> str:
    return engine.enter(room, vid, "s-" + vid, 10).status


def at(engine: Engine, room: str, ms_after_t0: int) -> None:
    engine.set_clock(room, T0 + ms_after_t0)


def test_safety_net_is_checked_on_write_naming_each_part(engine: Engine) -> None:
    room = make_room(engine)
    assert engine.get_room(room)["safetyNet"] is None
    bad = {"activeSessions": 0, "arrivalsPerMinute": "9", "coolDownSec": 86_401, "x": 1}
    with pytest.raises(rooms.ValidationError) as caught:
        engine.update_room(room, {"safetyNet": bad})
    assert set(caught.value.fields) == {
        "safetyNet.activeSessions",
        "safetyNet.arrivalsPerMinute",
        "safetyNet.coolDownSec",
        "safetyNet.x",
    }
    with pytest.raises(rooms.ValidationError) as caught:
        engine.update_room(room, {"safetyNet": {"activeSessions": 5}})
    assert set(caught.value.fields) == {"safetyNet.arrivalsPerMinute", "safetyNet.coolDownSec"}
    with pytest.raises(rooms.ValidationError) as caught:
        engine.update_room(room, {"safetyNet": [1, 2, 3]})
    assert set(caught.value.fields) == {"safetyNet"}
    net = {"activeSessions": 100, "arrivalsPerMinute": 50, "coolDownSec": 0}
    engine.update_room(room, {"safetyNet": net})
    shown = net_of(engine, room)
    assert shown == net | {"state": "calm", "since": None}
    engine.update_room(room, {"safetyNet": shown})  # a GET's value goes back as it is
    engine.update_room(room, {"safetyNet": None})
    assert engine.get_room(room)["safetyNet"] is None


def test_a_calm_room_admits_everyone_at_once_above_its_rate(engine: Engine) -> None:
    net = {"activeSessions": 1000, "arrivalsPerMinute": 1000, "coolDownSec": 60}
    room = netted_room(engine, net, ratePerMinute=1)
    assert [enter(engine, room, f"v{i}") for i in range(40)] == ["admitted"] * 40
    assert net_of(engine, room)["state"] == "calm"
    assert engine.stats(room).dealt_total == 40


def test_active_sessions_reaching_the_threshold_start_queueing(engine: Engine) -> None:
    net = {"activeSessions": 5, "arrivalsPerMinute": 1000, "coolDownSec": 60}
    room = netted_room(engine, net, ratePerMinute=1)
    firsts = [engine.enter(room, f"v{i}", f"s-v{i}", 10) for i in range(5)]
    assert [a.status for a in firsts] == ["admitted"] * 5
    at(engine, room, 2000)
    assert [enter(engine, room, f"w{i}") for i in range(3)] == ["waiting"] * 3
    assert net_of(engine, room) == net | {"state": "queueing", "since": T0 + 2000}
    # the already admitted keep their admissions (the same ones), the newcomers keep their order
    again = [engine.enter(room, f"v{i}", f"s-v{i}", 10) for i in range(5)]
    assert [a.admission.jti for a in again if a.admission] == [
        a.admission.jti for a in firsts if a.admission
    ]
    assert [e.visitor for e in engine.line(room)] == ["w0", "w1", "w2"]


def test_arrivals_reaching_the_threshold_start_queueing(engine: Engine) -> None:
    net = {"activeSessions": 1000, "arrivalsPerMinute": 4, "coolDownSec": 60}
    room = netted_room(engine, net, ratePerMinute=1)
    assert [enter(engine, room, f"v{i}") for i in range(6)] == ["admitted"] * 4 + ["waiting"] * 2
    assert net_of(engine, room)["state"] == "queueing"
    assert engine.stats(room).active == 4


def test_it_cools_back_only_after_an_empty_line_and_cool_down_of_quiet(engine: Engine) -> None:
    net = {"activeSessions": 1000, "arrivalsPerMinute": 3, "coolDownSec": 10}
    room = netted_room(engine, net, ratePerMinute=1)
    assert [enter(engine, room, f"v{i}") for i in range(5)] == ["admitted"] * 3 + ["waiting"] * 2
    switched = engine.tick(room).switches
    assert switched == (("queueing", T0),)
    # Nobody polls: the ticks alone drain the line at the rate (the switch emptied the bank) and
    # watch the quiet. Still queueing while anyone waits, however long the quiet.
    at(engine, room, 61_000)
    assert engine.tick(room).dealt == 1
    at(engine, room, 100_000)
    assert not engine.tick(room).switches
    assert net_of(engine, room)["state"] == "queueing"
    at(engine, room, 121_000)
    assert engine.tick(room).dealt == 1  # the line is empty from here, arrivals long past
    at(engine, room, 130_000)
    assert not engine.tick(room).switches
    at(engine, room, 131_000)
    assert engine.tick(room).switches == (("calm", T0 + 131_000),)
    assert net_of(engine, room) == net | {"state": "calm", "since": T0 + 131_000}
    assert enter(engine, room, "late") == "admitted"  # whatever the rate: calm again


def test_traffic_above_a_threshold_keeps_it_queueing_with_an_empty_line(engine: Engine) -> None:
    net = {"activeSessions": 2, "arrivalsPerMinute": 1000, "coolDownSec": 0}
    room = netted_room(engine, net, ratePerMinute=60, admissionTtlSec=60)
    assert [enter(engine, room, f"v{i}") for i in range(3)] == ["admitted"] * 2 + ["waiting"]
    at(engine, room, 1000)
    assert engine.tick(room).dealt == 1  # the line empties, but 3 active sessions stay
    at(engine, room, 30_000)
    assert not engine.tick(room).switches
    # admissions last 60 s unless renewed: once they lapse, the room is quiet at once (0 s)
    at(engine, room, 70_000)
    assert engine.tick(room).switches == (("calm", T0 + 70_000),)


def run_enters(url: str, room: str, worker: int, start: Any, out: Any) -> None:
    """Enter 20 visitors as soon as every process is ready; report their answers."""
    engine = Engine(connect(url, timeout=30))
    start.wait()
    out.put([engine.enter(room, f"p{worker}-{i}", "s", 10).status for i in range(20)])


def run_ticks(url: str, room: str, start: Any, out: Any) -> None:
    engine = Engine(connect(url, timeout=30))
    start.wait()
    out.put([engine.tick(room).switches for _ in range(20)])


def test_several_processes_switch_it_once(redis_url: str, engine: Engine) -> None:
    net = {"activeSessions": 1000, "arrivalsPerMinute": 30, "coolDownSec": 60}
    room = netted_room(engine, net, ratePerMinute=1)
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=run_enters, args=(redis_url, room, w, start, out)) for w in (0, 1)]
    procs += [ctx.Process(target=run_enters, args=(redis_url, room, w, start, out)) for w in (2, 3)]
    for p in procs:
        p.start()
    answers = [status for _ in procs for status in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=30)
    # exactly the threshold's worth got straight in; everyone after it waits, in one line
    assert answers.count("admitted") == 30 and answers.count("waiting") == 50
    assert engine.stats(room).waiting == 50
    procs = [ctx.Process(target=run_ticks, args=(redis_url, room, start, out)) for _ in range(4)]
    for p in procs:
        p.start()
    reports = [switches for _ in procs for switches in out.get(timeout=120) if switches]
    for p in procs:
        p.join(timeout=30)
    assert reports == [(("queueing", T0),)]  # one switch, handed over once
