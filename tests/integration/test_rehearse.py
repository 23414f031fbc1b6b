"""``anteroom rehearse`` against two real ``anteroom serve``: its report checked by the room."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from pathlib import Path

import pytest
import redis

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import free_port, make_room
from live_server import ANTEROOM, LiveServers

pytestmark = [pytest.mark.redis, pytest.mark.slow]

VISITORS = 60
RATE = 600  # ten a second: the rehearsal's crowd of 60 arrives over 3 s and waits about 6 s
CAPACITY = 20


def test_a_small_rehearsal_admits_everyone_once_in_order_at_the_rooms_rate(
    live_server: LiveServers, redis_client: redis.Redis, tmp_path: Path
) -> None:
    # Two instances on one Redis: each visitor's requests go to one and the other in turn.
    env = {"ANTEROOM_WORKERS": "1", "ANTEROOM_TRUSTED_PROXIES": "1"}
    servers = [live_server(ANTEROOM_POW_DIFFICULTY="4", **env) for _ in range(2)]
    engine = Engine(redis_client)
    record, secret = KeyStore(redis_client, engine.keys).create("rehearsal")
    room = make_room(engine, env="rehearsal", slug="rush", ratePerMinute=RATE, capacity=CAPACITY)
    engine.open(room)
    engine.shift_clock(room, 1_000)
    earlier = engine.enter(room, "earlier", "s", 10)  # someone already in: not the rehearsal's
    assert earlier.status == "admitted"
    report = tmp_path / "rehearsal.json"

    run = subprocess.run(
        [str(ANTEROOM), "rehearse", "--host", ",".join(s.url for s in servers),
         "--api-key", record.public_key, "--secret-key", secret, "--room", "rush",
         "--visitors", str(VISITORS), "--over", "3s",
         "--run-time", "90s", "--spread-addresses", "--second-tabs", "0.5",
         "--report", str(report)],
        capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "order inversions: 0; one-spot violations: 0" in run.stdout
    figures = json.loads(report.read_text())

    assert figures["room"]["ratePerMinute"] == RATE and figures["room"]["capacity"] == CAPACITY
    # Every visitor admitted exactly once: by the visitors' count and by the room's own.
    assert figures["visitors"]["admitted"] == VISITORS
    assert figures["room"]["dealtDuring"] == VISITORS
    assert figures["visitors"]["room_dealt_to_others"] == 0
    assert figures["one_spot_violations"] == 0 and figures["order_inversions"] == 0
    # Two calls from arrival to ticket, then the second tabs entered again with the session.
    assert figures["requests"]["arrive"] == figures["requests"]["queue/join"] == VISITORS
    assert figures["requests"]["queue/enter"] > 0
    assert figures["requests"]["queue/leave"] == VISITORS
    rate = figures["admissions_per_minute"]
    assert rate["rate_excess"] == 0  # never faster than the room's rate, in any run of seconds
    assert RATE / 2 <= rate["achieved"] <= RATE * 1.1  # and the crowd kept it busy
    assert figures["errors_by_code"] == {} and figures["recoveries_by_kind"] == {}
    assert figures["poll_latency_ms"]["count"] > 0 and figures["poll_latency_ms"]["p99"] > 0
    # The line was the bound: some waited, and nobody longer than the crowd takes to drain.
    waits = figures["wait_seconds"]
    assert waits["count"] == VISITORS and 0 < waits["max"] <= VISITORS * 60 / RATE + 5
    assert figures["pow"]["difficulty"] == 4
    assert engine.stats(room).active == 1  # everyone left after admission, but the earlier one
    for server in servers:  # both instances served the visitors
        assert server.output().count('"POST /api/v1/queue/join" 200') >= VISITORS // 4


def test_a_room_closed_mid_rush_sends_its_visitors_in_again_and_the_report_says_so(
    live_server: LiveServers, redis_client: redis.Redis, tmp_path: Path
) -> None:
    server = live_server(
        ANTEROOM_WORKERS="2", ANTEROOM_TRUSTED_PROXIES="1", ANTEROOM_POW_DIFFICULTY="4"
    )
    engine = Engine(redis_client)
    record, secret = KeyStore(redis_client, engine.keys).create("rehearsal")
    room = make_room(engine, env="rehearsal", slug="rush", ratePerMinute=300)
    engine.open(room)
    report = tmp_path / "rehearsal.json"
    rehearsal = subprocess.Popen(
        [str(ANTEROOM), "rehearse", "--host", server.url, "--api-key", record.public_key,
         "--secret-key", secret, "--room", "rush", "--visitors", "40", "--over", "2s",
         "--run-time", "90s", "--spread-addresses", "--report", str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while engine.stats(room).waiting < 15:
            assert time.monotonic() < deadline and rehearsal.poll() is None, "no line formed"
            time.sleep(0.05)  # watching another process's crowd arrive, not a race
        engine.pause(room)  # nobody is let in from here: every spot still waiting is counted
        waiting = engine.stats(room).waiting
        # Closed and opened again in one transaction: every spot is gone (their next polls
        # answer 410 TicketGone) and no entry meets the room closed in between (an entry
        # there is answered `idle`, and its visitor is not let in: a loaded machine met it).
        reopen = redis_client.pipeline(transaction=True)
        for op, args in (("close_room", []), ("open_room", ["", secrets.token_hex(16)])):
            engine._scripts[op](keys=engine.script_keys(op, room), args=args, client=reopen)
        reopen.execute()
        output, _ = rehearsal.communicate(timeout=120)
    finally:
        rehearsal.kill()
    assert rehearsal.returncode == 0, output
    figures = json.loads(report.read_text())

    # Each visitor took a new spot in the room's new opening, as the browser agent does, and
    # was admitted once; tickets of the two openings are not mistaken for inversions.
    assert figures["visitors"]["admitted"] == 40
    assert figures["visitors"]["room_openings_seen"] == 2
    assert figures["recoveries_by_kind"]["spot gone: entered again"] >= waiting
    assert figures["errors_by_code"]["410 TicketGone"] >= waiting
    assert figures["order_inversions"] == 0 and figures["one_spot_violations"] == 0
    # The room's count restarted at the close: it is not held against the visitors'.
    assert figures["visitors"]["room_dealt_to_others"] is None


def test_bad_options_and_an_unreachable_deployment_are_told_apart(tmp_path: Path) -> None:
    bad = subprocess.run(
        [str(ANTEROOM), "rehearse", "--host", "http://127.0.0.1:1", "--api-key", "pk_x",
         "--room", "rush", "--second-tabs", "2"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "--second-tabs must be between 0 and 1" in bad.stderr

    report = tmp_path / "rehearsal.json"
    nobody = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    run = subprocess.run(
        [str(ANTEROOM), "rehearse", "--host", nobody, "--api-key", "pk_x", "--room", "rush",
         "--visitors", "2", "--over", "1s", "--run-time", "60s", "--report", str(report)],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr  # nobody got in: not a pass
    figures = json.loads(report.read_text())
    assert figures["visitors"]["not_admitted"] == 2
    assert figures["visitors"]["lost_by_reason"] == {"arrive 0": 2}
    assert set(figures["errors_by_code"]) == {"0 ConnectionRefusedError"}
