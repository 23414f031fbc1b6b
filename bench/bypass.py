"""Bypass benchmark: what bypass rules cost the edge's decision, in this process.

Side by side in one run, ``decide()`` for an admitted visitor (valid cookie, already verified:
the edge's fast path) with no rules, with 50 rules none of which matches (path prefixes,
address ranges, headers and cookies, worst case: every rule is read), and a request the 50th
rule lets through; and, on the write path, one scrypt hash of a secret (a PATCH hashes each
header or cookie rule). Figures are the best of ``--repeat`` timings, in microseconds.

Run: ``python bench/bypass.py [--repeat 5]``. Writes ``bench/results/bypass.json``.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]

from anteroom.sdk import bypass_rules  # noqa: E402
from anteroom.sdk.edge_decision import EdgeConfig, EdgeState, Facts, decide  # noqa: E402
from fixtures.make_edge_fixtures import KEYS, admission  # noqa: E402

SECRET = "monitor-secret-0123456789"


def rules(count: int) -> list[dict[str, str]]:
    """``count`` rules of every kind, none of which the benchmark's admitted request matches."""
    kinds = [
        lambda i: {"kind": "path-prefix", "value": f"/assets{i}/"},
        lambda i: {"kind": "address-range", "value": f"10.{i}.0.0/16"},
        lambda i: {"kind": "header", "name": f"X-Monitor-{i}", "secret": SECRET},
        lambda i: {"kind": "cookie", "name": f"monitor{i}", "secret": SECRET},
    ]
    return [kinds[i % 4](i) for i in range(count)]


def per_call_us(fn: Callable[[], object], repeat: int, number: int = 20_000) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    token = admission()
    now = time.time()
    base = dict(keys=KEYS, base_url="https://q.example", public_key="pk_x", refresh_after=1e9)
    routes = {"/checkout": "drop"}
    headers = {"cookie": f"theme=dark; _abq={token}", "accept": "application/json"}
    admitted = Facts("GET", "/checkout/pay", headers=headers, client_ip="198.51.100.20", now=now)
    last = [*rules(49), {"kind": "path-prefix", "value": "/checkout/assets/"}]
    bypassed = Facts("GET", "/checkout/assets/app.js", client_ip="198.51.100.20", now=now)
    figures: dict[str, float] = {}
    for name, config_rules, facts, kind in [
        ("no_rules_us", [], admitted, "admit"),
        ("fifty_rules_none_match_us", rules(50), admitted, "admit"),
        ("fifty_rules_last_matches_us", last, bypassed, "pass"),
    ]:
        config = EdgeConfig(routes=routes, bypass=config_rules, **base)  # type: ignore[arg-type]
        state = EdgeState()
        assert decide(facts, config, state).kind == kind
        call = functools.partial(decide, facts, config, state)
        figures[name] = round(per_call_us(call, args.repeat), 2)
    started = time.perf_counter()
    bypass_rules.hash_secret(SECRET)
    figures["scrypt_hash_ms"] = round((time.perf_counter() - started) * 1e3, 1)
    figures["fifty_rules_vs_none"] = round(
        figures["fifty_rules_none_match_us"] / figures["no_rules_us"], 2
    )
    print(json.dumps(figures, indent=2))
    out = ROOT / "bench" / "results" / "bypass.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
