"""Invariants under many concurrent callers: eight processes on one small, fast room."""

from __future__ import annotations

import multiprocessing as mp
import time
from typing import Any

import pytest

from anteroom.engine import Engine
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.line import room_engine as eng
from helpers import open_room

pytestmark = [pytest.mark.redis, pytest.mark.slow]

PROCESSES = 8
PER_PROCESS = 15
CAPACITY = 3


def visitor(worker: int, i: int) -> str:
    return f"w{worker}-v{i}"


def run_worker(url: str, room: str, worker: int, start: Any, entered: Any, out: Any) -> None:
    """Enter 15 visitors (and re-enter a neighbour's, like a second tab), poll until admitted,
    then leave so the next can come in."""
    client = connect(url, timeout=30)
    engine = Engine(client)
    mine = [visitor(worker, i) for i in range(PER_PROCESS)]
    neighbour = [visitor((worker + 1) % PROCESSES, i) for i in range(PER_PROCESS)]
    seen: list[tuple[str, int]] = []
    admitted: list[tuple[str, int, int]] = []
    start.wait()
    tickets: dict[str, int] = {}
    for vid in mine:
        answer = engine.enter(room, vid, "s-" + vid, 10)
        tickets[vid] = answer.ticket or 0
        seen.append((vid, tickets[vid]))
    entered.wait()  # a second tab re-enters while the first still holds its spot
    for vid in neighbour[:5]:
        seen.append((vid, engine.enter(room, vid, "s2-" + vid, 10).ticket or 0))
    entered.wait()  # and nobody leaves (which would free that spot) before every tab is in
    waiting = set(mine)
    deadline = time.monotonic() + 60
    while waiting and time.monotonic() < deadline:
        for vid in sorted(waiting):
            try:
                answer = engine.poll(room, vid, tickets[vid], 1)
            except eng.RateLimited:
                continue
            seen.append((vid, answer.ticket or 0))
            if answer.admission is not None:
                admitted.append((vid, answer.ticket or 0, answer.admission.deal_number))
                engine.leave(room, vid, tickets[vid], 1)
                waiting.discard(vid)
    out.put({"seen": seen, "admitted": admitted, "left_waiting": sorted(waiting)})


def run_monitor(url: str, room: str, stop: Any, out: Any) -> None:
    """Sample the room's active count as fast as it can while the workers run."""
    engine = Engine(connect(url, timeout=30))
    peak = 0
    while not stop.is_set():
        peak = max(peak, engine.stats(room).active)
    out.put(peak)


def test_eight_processes_keep_every_invariant(redis_url: str, engine: Engine) -> None:
    room = open_room(engine, ratePerMinute=60_000, capacity=CAPACITY, admissionTtlSec=300)
    ctx = mp.get_context("spawn")
    start, stop, out, peak_out = ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
    entered = ctx.Barrier(PROCESSES)
    workers = [
        ctx.Process(target=run_worker, args=(redis_url, room, w, start, entered, out))
        for w in range(PROCESSES)
    ]
    monitor = ctx.Process(target=run_monitor, args=(redis_url, room, stop, peak_out))
    for p in [*workers, monitor]:
        p.start()
    start.set()
    results = [out.get(timeout=120) for _ in workers]
    stop.set()
    sampled_peak = peak_out.get(timeout=30)
    for p in [*workers, monitor]:
        p.join(timeout=30)

    assert all(not r["left_waiting"] for r in results), "every visitor got in"
    # Capacity: never more than 3 active, by the engine's own high-water mark and by sampling.
    stats = engine.stats(room)
    assert stats.peak_active <= CAPACITY and sampled_peak <= CAPACITY
    assert stats.peak_active == CAPACITY  # the test did push against the limit
    # One spot per visitor, and no ticket handed out twice.
    ticket_of: dict[str, set[int]] = {}
    for r in results:
        for vid, ticket in r["seen"]:
            ticket_of.setdefault(vid, set()).add(ticket)
    assert all(len(t) == 1 for t in ticket_of.values())
    tickets = [next(iter(t)) for t in ticket_of.values()]
    assert len(tickets) == len(set(tickets)) == PROCESSES * PER_PROCESS
    assert stats.tickets == PROCESSES * PER_PROCESS
    # Admissions in ticket order: sorted by the engine's deal number, tickets ascend.
    admitted = sorted(a for r in results for a in ((d, t) for _, t, d in r["admitted"]))
    assert [d for d, _ in admitted] == list(range(1, PROCESSES * PER_PROCESS + 1))
    assert [t for _, t in admitted] == sorted(t for _, t in admitted)
