"""Draw benchmark (issue 23): what the draw of a 100,000-entrant pre-queue costs.

Python (anteroom.sdk.draw, one process, wall time): ``order_s`` the drawn order of the ids,
``root_and_proofs_s`` the Merkle root and every entrant's inclusion proof from one build of the
tree (what the service will do once at the shuffle to hand out receipts), ``check_draw_s`` what a
visitor's ``anteroom verify-draw`` spends on the whole draw (commitment, order, root), and
``check_receipt_us`` one receipt. Each is the median of ``--rounds`` runs, and the best run (the
machine is shared: the best is the least disturbed).

Lua (lua/draw_keys.lua on an embedded Redis): the order keys of 100,000 ids in one script call,
Redis's own time for it (``CONFIG RESETSTAT``, the call, ``INFO commandstats``): ``lua_keys_ms``.
Beside it, in the same run and interleaved, the floor: one native ``redis.sha1hex`` per id over
seed, beacon and id (the plain SHA-1 construction the brief offered instead of HMAC), so
``hmac_to_floor`` is what HMAC's second hash and unhexing cost over it. Both block Redis for
their whole length: the figure that says whether a shuffle must be cut into batches.
Run: ``python bench/draw.py [--entrants 100000] [--rounds 3] [--out FILE]``.
Writes ``bench/results/draw.json`` by default.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))

import redis  # noqa: E402

from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from anteroom.queue.connection import lua_scripts  # noqa: E402
from anteroom.sdk import draw, merkle  # noqa: E402

FLOOR_SCRIPT = """
-- The floor of an order key: one native SHA-1 per id. ARGV: seed, beacon, ids...
local keys = {}
for i = 3, #ARGV do keys[i - 2] = redis.sha1hex(ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[i]) end
return keys
"""


def timed(run: Callable[[], Any], rounds: int) -> tuple[float, float, Any]:
    """Median and best wall time of ``rounds`` runs of ``run`` (seconds), and its last result."""
    times, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), result


def script_ms(client: redis.Redis, script: Any, args: list[str]) -> float:
    """Redis's own time (ms) for one call of ``script``."""
    client.config_resetstat()
    script(keys=[], args=args)
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec", 0)) / 1000


def python_figures(seed: str, beacon: str, ids: list[str], rounds: int) -> dict[str, Any]:
    order_med, order_best, ordered = timed(lambda: draw.drawn_order(seed, ids, beacon), rounds)
    leaves = [e.encode("ascii") for e in ordered]
    tree_med, tree_best, (head, proofs) = timed(lambda: merkle.inclusion_proofs(leaves), rounds)
    document = {
        "commitment": draw.commitment(seed),
        "seed": seed,
        "beacon": beacon,
        "root": head,
        "entrants": len(ordered),
    }
    check_med, check_best, verdict = timed(lambda: draw.check_draw(document, ordered), rounds)
    assert verdict.ok, verdict.detail
    rank = len(ordered) // 2
    claims = draw.ReceiptClaims("bench", 0, ordered[rank - 1], rank, proofs[rank - 1])
    receipt = draw.make_receipt(claims, "k1", lambda signed: b"\0" * 32)
    receipt_med, receipt_best, verdict = timed(
        lambda: draw.check_receipt(document, ordered, receipt), rounds * 10
    )
    assert verdict.ok, verdict.detail
    return {
        "order_s": {"median": round(order_med, 3), "best": round(order_best, 3)},
        "root_and_proofs_s": {"median": round(tree_med, 3), "best": round(tree_best, 3)},
        "order_root_proofs_s": round(order_med + tree_med, 3),
        "check_draw_s": {"median": round(check_med, 3), "best": round(check_best, 3)},
        "check_receipt_us": {
            "median": round(receipt_med * 1e6, 1),
            "best": round(receipt_best * 1e6, 1),
        },
        "proof_hashes": len(proofs[rank - 1]),
        "receipt_bytes": len(receipt),
    }


def lua_figures(client: redis.Redis, seed: str, beacon: str, ids: list[str], rounds: int) -> dict:
    keys_script = client.register_script(lua_scripts.source("draw_keys"))
    floor_script = client.register_script(FLOOR_SCRIPT)
    args = [seed, beacon, *ids]
    got = keys_script(keys=[], args=args)  # loaded, and checked against the verifier
    assert got[:100] == [draw.order_key(seed, e, beacon) for e in ids[:100]]
    floor_script(keys=[], args=args)
    hmac_ms, floor_ms = [], []
    for _ in range(rounds):  # interleaved: a disturbance falls on both
        hmac_ms.append(script_ms(client, keys_script, args))
        floor_ms.append(script_ms(client, floor_script, args))
    hmac_med, floor_med = statistics.median(hmac_ms), statistics.median(floor_ms)
    return {
        "lua_keys_ms": {"median": round(hmac_med, 1), "best": round(min(hmac_ms), 1)},
        "lua_floor_ms": {"median": round(floor_med, 1), "best": round(min(floor_ms), 1)},
        "hmac_to_floor": round(hmac_med / floor_med, 2),
        "redis_version": client.info("server")["redis_version"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entrants", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "draw.json"))
    args = parser.parse_args()
    rng = random.Random(23)
    seed, beacon = rng.randbytes(32).hex(), rng.randbytes(32).hex()
    ids = [rng.randbytes(32).hex() for _ in range(args.entrants)]
    results: dict[str, Any] = {"entrants": args.entrants, "rounds": args.rounds}
    results["python"] = python_figures(seed, beacon, ids, args.rounds)
    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(data, port=0).start()
        try:
            client = redis.Redis.from_url(server.url, decode_responses=True)
            results["lua"] = lua_figures(client, seed, beacon, ids, args.rounds)
            client.close()
        finally:
            server.stop()
    print(json.dumps(results, indent=2))
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
