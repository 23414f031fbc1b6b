"""Crawler verification benchmark: what checking a search crawler's claim costs, in this process.

Side by side in one run, against Debian's dnsmasq on a free port of this machine (the tests'
records, tests/dns_server.py): a verification asked of DNS (a PTR then an A question, the cache
cleared before each: a new crawler address), one answered from the cache (an address already
verified), and a request that claims no crawler (the User-Agent test alone, which every request
to a room pays). Figures are the best of ``--repeat`` timings: per verification in microseconds,
and verifications a second.

A local dnsmasq answers in tens of microseconds; a real resolver adds its own round trip (and the
engine's authoritative servers, for an address it has not cached), which is why the verdicts are
kept for the records' TTL.

Run: ``python bench/crawler_verify.py [--repeat 5]``. Writes ``bench/results/crawler_verify.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]

from anteroom.sdk.crawlers import CrawlerCheck  # noqa: E402
from dns_server import (  # noqa: E402
    BROWSER_UA,
    GOOGLEBOT,
    GOOGLEBOT_UA,
    crawler_records,
    dnsmasq,
)


def per_call_us(fn: Callable[[], object], repeat: int, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with dnsmasq(crawler_records()) as server:
        check = CrawlerCheck(server.resolver)
        assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is not None

        def uncached() -> object:
            check.forget()  # a new address every time: both questions asked
            return check.verified(GOOGLEBOT, GOOGLEBOT_UA)

        figures = {
            "uncached_us": per_call_us(uncached, args.repeat, 200),
            "cached_us": per_call_us(
                lambda: check.verified(GOOGLEBOT, GOOGLEBOT_UA), args.repeat, 20_000
            ),
            "no_claim_us": per_call_us(
                lambda: check.verified(GOOGLEBOT, BROWSER_UA), args.repeat, 20_000
            ),
        }
    out: dict[str, float] = {name: round(value, 2) for name, value in figures.items()}
    out["uncached_per_sec"] = round(1e6 / figures["uncached_us"])
    out["cached_per_sec"] = round(1e6 / figures["cached_us"])
    out["uncached_vs_cached"] = round(figures["uncached_us"] / figures["cached_us"], 1)
    print(json.dumps(out, indent=2))
    path = ROOT / "bench" / "results" / "crawler_verify.json"
    path.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
