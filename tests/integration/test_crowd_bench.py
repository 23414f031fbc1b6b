"""bench/crowd.py at a tiny scale: it holds its crowd, polls as told and writes its figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
FIELDS = {
    "waiting_held", "seconds", "polls_per_second", "web_cpu_cores", "redis_cpu_cores",
    "loadgen_cpu_cores", "poll_ms", "order_inversions", "position_error",
    "redis_us_per_far_poll", "model_cores",
}  # fmt: skip


def test_a_tiny_crowd_is_held_in_order(tmp_path: Path) -> None:
    out = tmp_path / "crowd.json"
    tiny = ["--visitors", "200", "--seconds", "2", "--connections", "8", "--rate", "1200",
            "--idle-seconds", "1", "--far-seconds", "1", "--far-at", "6000"]  # fmt: skip
    command = [sys.executable, str(ROOT / "bench" / "crowd.py"), *tiny, "--out", str(out)]
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'backend'}:{ROOT / 'tests'}"}
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    figures = json.loads(out.read_text())
    assert set(figures) >= FIELDS
    assert figures["waiting_held"] == 200
    answers = figures["answers"]
    assert answers.get("admitted", 0) > 0 and answers.get("waiting", 0) > 0
    assert set(answers) <= {"admitted", "waiting"}, answers  # no refusal, no error, none dropped
    assert figures["order_inversions"] == 0
    assert set(figures["model_cores"]) == {"100000", "1000000", "10000000"}
    model = figures["model"]
    assert model["far_only_phase"]["polls"] > 0  # the far-only phase polled
    long = model["far_at_length_phase"]  # and the long room's far spots, at their cadence
    assert long["waiting"] == 6000 and long["polls"] > 0
    assert set(long["poll_lag_ms"]) >= {"p50", "p99"}
    assert model["near_us_per_poll"] >= model["far_us_per_poll"] > 0
    assert "polls served / s" in run.stdout
