"""Service bypass benchmark: what a room's bypass rules cost the service's ``enter``, in this
process, before its one script call (visit/bypass.py).

Side by side in one run, ``service_bypass.matches`` for a room without rules; with 50 rules
(address ranges, headers, cookies) none of which the request matches, the request sending
none of their headers (every rule read: the common visitor); with the 50th rule a header
whose secret the request carries, already checked once (the monitor's every request after its
first); and the first check of a secret (one scrypt). Figures are the best of ``--repeat``
timings, in microseconds (the scrypt in milliseconds).

Run: ``python bench/service_bypass.py [--repeat 5]``. Writes ``bench/results/service_bypass.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
# bench/http.py would shadow the standard library's http for whatever imports it: drop bench/.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path[:0] = [str(ROOT / "backend")]

from anteroom.queue.rooms import room_config as rooms  # noqa: E402
from anteroom.visit import bypass as service_bypass  # noqa: E402

SECRET = "monitor-secret-0123456789"
HEADERS = {"user-agent": "Mozilla/5.0", "accept": "application/json", "content-type": "json"}
COOKIE = "theme=dark; _abt=qt1.x"


def rules(count: int) -> list[dict[str, str]]:
    """``count`` rules of the kinds the service reads, none of which the visitor matches."""
    kinds = [
        lambda i: {"kind": "address-range", "value": f"10.{i}.0.0/16"},
        lambda i: {"kind": "header", "name": f"X-Monitor-{i}", "secret": SECRET},
        lambda i: {"kind": "cookie", "name": f"monitor{i}", "secret": SECRET},
    ]
    return [kinds[i % 3](i) for i in range(count)]


def room_of(config_rules: list[dict[str, str]]) -> dict[str, Any]:
    """A room dict as the directory holds it (room_engine.room_from_stored)."""
    stored = rooms.to_stored({"bypass": config_rules})["byp"]
    room: dict[str, Any] = {"id": "q1", "bypass": rooms.from_stored({"byp": stored})["bypass"]}
    if stored:
        room["bypassStored"] = stored
    return room


def per_call_us(fn: Callable[[], object], repeat: int, number: int = 20_000) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    fifty = [*rules(49), {"kind": "header", "name": "X-Monitor", "secret": SECRET}]
    none, many = room_of([]), room_of(fifty)
    monitor = HEADERS | {"x-monitor": SECRET}
    figures: dict[str, float] = {}
    started = time.perf_counter()
    assert service_bypass.matches(many, "198.51.100.7", monitor, COOKIE)  # its one scrypt
    figures["first_secret_check_ms"] = round((time.perf_counter() - started) * 1e3, 1)
    for name, room, headers, expected in [
        ("no_rules_us", none, monitor, False),
        ("fifty_rules_none_match_us", many, HEADERS, False),
        ("fifty_rules_checked_secret_matches_us", many, monitor, True),
    ]:
        call = functools.partial(service_bypass.matches, room, "198.51.100.7", headers, COOKIE)
        assert call() is expected
        figures[name] = round(per_call_us(call, args.repeat), 2)
    figures["fifty_rules_vs_none"] = round(
        figures["fifty_rules_none_match_us"] / figures["no_rules_us"], 1
    )
    print(json.dumps(figures, indent=2))
    out = ROOT / "bench" / "results" / "service_bypass.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
