"""The draw worker (queue/draw/draw_worker.py): one draw per room at a time, and draws waiting on
their beacons never take the places of the others."""

from __future__ import annotations

import threading

from anteroom.queue.draw.draw_worker import DrawWorker


def test_beacon_draws_fill_their_own_lane_only_and_a_room_draws_once_at_a_time() -> None:
    worker = DrawWorker(max_running=2, max_fetching=3)
    release = threading.Event()
    started: list[str] = []
    done = threading.Event()

    def waits(room: str) -> None:
        started.append(room)
        release.wait(10)  # a beacon that does not answer, until the test lets it go

    assert all(worker.submit(f"slow{i}", "beacon", lambda i=i: waits(f"slow{i}")) for i in range(3))
    assert not worker.submit("slow3", "beacon", lambda: waits("slow3"))  # its lane is full
    assert not worker.submit("slow0", "opening", lambda: None)  # that room's draw runs already
    # Another tenant's draw still starts at once.
    assert worker.submit("other", "opening", done.set)
    assert done.wait(10)
    release.set()
    for thread in [t for t in threading.enumerate() if t.name.startswith("anteroom-draw-")]:
        thread.join(10)
    assert worker.running() == set() and sorted(started) == ["slow0", "slow1", "slow2"]
    assert worker.submit("slow3", "beacon", lambda: None)  # the next tick hands it again
