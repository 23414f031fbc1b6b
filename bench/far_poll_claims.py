"""In-process cost of a far poll (the hot path answering from the room's snapshot), two code
trees side by side: the ticket's claims read as a dict (before) or as ``TicketClaims`` (after).

Each tree runs in its own child process (its own ``anteroom`` package and ``lua/``), the two
alternating ``--runs`` times; each child enters a line of far spots, polls each once (so every
ticket is the one its last answer gave, as a visitor's is), then times the WSGI call of far polls
with bench/http.py's ``WsgiCaller``/``app_costs`` and prints the least per-batch mean µs (the
machine is shared: the least batch is the one least disturbed). The driver reports, per tree,
the least and the median of its runs' figures.

Run: ``python bench/far_poll_claims.py --before DIR [--after DIR] [--runs 3]`` where DIR holds a
tree's code and resources (``git archive <commit> backend lua templates static translations |
tar -x -C DIR``); after defaults to this checkout. Writes ``bench/results/far_poll_claims.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TICKETS = 300
BATCHES, PER = 15, 200


def child(code: Path) -> None:
    """Measure with the ``anteroom`` package of ``code`` and print {"far_us": …} as JSON."""
    sys.path[:0] = [str(code / "backend")]
    # Imported first, so bench/http.py's path (this checkout) does not replace it.
    import anteroom

    spec = importlib.util.spec_from_file_location("bench_http", HERE / "http.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    import redis

    from anteroom.config import Settings
    from anteroom.engine import Engine
    from anteroom.ops.embedded_redis import EmbeddedRedis
    from anteroom.sdk.tokens import Keyring
    from anteroom.store.keystore import KeyStore
    from anteroom.web.app_factory import create_app

    assert Path(anteroom.__file__).is_relative_to(code), anteroom.__file__
    tmp = Path(tempfile.mkdtemp(prefix="anteroom-bench-claims-"))
    embedded = EmbeddedRedis(tmp / "redis", port=0).start()
    try:
        client = redis.Redis.from_url(embedded.url, decode_responses=True)
        engine = Engine(client, prefix=bench.PREFIX)
        keys = Keyring.generate().serialize()
        env = {
            "ANTEROOM_REDIS_URL": embedded.url,
            "ANTEROOM_KEYS": keys,
            "ANTEROOM_DATA_DIR": str(tmp / "data"),
            "ANTEROOM_DEMO": "0",
            "ANTEROOM_KEY_PREFIX": bench.PREFIX,
        }
        api_key = KeyStore(client, engine.keys).create(bench.ENV)[0].public_key
        room_id = engine.create_room(
            bench.ENV,
            {"slug": "far", "name": "b", "redirectUrl": "https://x.example/",
             "ratePerMinute": 1, "abandonAfterSec": 3600},
        )["id"]  # fmt: skip
        engine.open(room_id)
        for i in range(bench.FAR_AHEAD):
            engine.enter(room_id, f"ahead{i}", "s", 10)
        tickets = bench.mint_tickets(engine, Keyring.parse(keys), room_id, TICKETS, "f")
        app = create_app(Settings.from_env(env))
        caller = bench.WsgiCaller(app)

        def make(ticket: str) -> dict[str, Any]:
            body = {"apiKey": api_key, "ticket": ticket}
            return bench.WsgiCaller.environ("POST", "/api/v1/queue/poll", body)

        current = []
        for ticket in tickets:  # the ticket each spot's last answer gave it
            _, status, answer = caller.timed(make(ticket))
            assert status == 200, answer
            current.append(json.loads(answer)["queueToken"])
        bench.app_costs(caller, lambda i: make(current[i % TICKETS]), b'"waiting"', 1, 300)
        costs = bench.app_costs(
            caller, lambda i: make(current[i % TICKETS]), b'"waiting"', BATCHES, PER
        )
        print(json.dumps({"far_us": min(costs)}))
    finally:
        embedded.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path)
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child.resolve())
        return
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    found: dict[str, list[float]] = {name: [] for name in trees}
    for run in range(args.runs):
        for name, tree in trees.items():  # alternating, so both see the same machine load
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(tree)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            found[name].append(json.loads(out.strip().splitlines()[-1])["far_us"])
            print(f"run {run + 1} {name:6s} far poll {found[name][-1]:6.1f} µs")
    least = {name: round(min(v), 1) for name, v in found.items()}
    medians = {name: round(statistics.median(v), 1) for name, v in found.items()}
    ratio = round(least["after"] / least["before"], 3)
    median_ratio = round(medians["after"] / medians["before"], 3)
    print(f"far poll in process, least: before {least['before']} µs, after {least['after']} µs")
    print(f"median of runs: before {medians['before']} µs, after {medians['after']} µs")
    print(f"after / before = {ratio} (least), {median_ratio} (median)")
    result = {
        "far_us_least": least,
        "far_us_median": medians,
        "runs": found,
        "after_over_before": ratio,
        "after_over_before_median": median_ratio,
    }
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "far_poll_claims.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
