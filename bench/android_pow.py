"""The Android client's proof-of-work speed on this machine's JVM, beside the browser agent's.

The Java side is the client's own solver (clients/android ProofOfWork.solve: its thread pool, one
SHA-256 per candidate with the counter incremented in place) run by PowBench in one JVM, on one
thread and on one per core, solving batches of difficulty-16 puzzles for a second a round. The
browser side is bench/pow.py's HASH_RATE_SCRIPT in Debian's Chromium: one Web Worker per search
(the agent's WebAssembly and JS searches, from frontend/pow-worker.js, and WebCrypto's digest),
a second each. Rounds alternate Java and browser so load on the shared machine falls on both;
the medians are quoted, and the ratios are of this run only. On a phone, ART and a mobile CPU
differ from this JVM on x86: the figure says how the code compares, not what a phone does.

Run: ``python bench/android_pow.py [--rounds 7]``. Writes ``bench/results/android_pow.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import Route, sync_playwright

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ANDROID = ROOT / "clients" / "android"
JSON_JAR = "/usr/share/java/com.android.json.jar"
OUT = HERE / "results" / "android_pow.json"
# 127.0.0.1 is a secure context (WebCrypto needs one); the route serves the page, no server.
PAGE = "http://127.0.0.1:9/"


def browser_bench() -> Any:
    """bench/pow.py as a module (its hash-rate script, its Chromium settings)."""
    sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]
    spec = importlib.util.spec_from_file_location("pow_bench", HERE / "pow.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def java_version() -> str:
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    return done.stderr.splitlines()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="measured rounds of each")
    parser.add_argument("--ms", type=int, default=1000, help="length of one round of one search")
    args = parser.parse_args()
    subprocess.run([str(ANDROID / "build.sh"), "classes"], check=True)
    cores = os.cpu_count() or 1
    classpath = f"{ANDROID / 'build/classes'}:{ANDROID / 'build/test-classes'}:{JSON_JAR}"
    bench = browser_bench()
    sources = {kind: bench.kit_source(kind) for kind in ("wasm", "js")}
    java = subprocess.Popen(
        ["java", "-cp", classpath, "dev.anteroom.android.PowBench"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert java.stdin is not None and java.stdout is not None

    def java_rate(threads: int) -> int:
        assert java.stdin is not None and java.stdout is not None
        java.stdin.write(f"{threads} {args.ms}\n")
        java.stdin.flush()
        return int(json.loads(java.stdout.readline())["perSecond"])

    rates: dict[str, list[float]] = {"java_1": [], f"java_{cores}": [], "wasm": [], "js": []}
    rates["webcrypto"] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=bench.CHROMIUM, headless=True, args=bench.CHROMIUM_ARGS
        )
        page = browser.new_page()

        def blank(route: Route) -> None:
            route.fulfill(
                status=200, content_type="text/html", body="<!doctype html><title>b</title>"
            )

        page.route(PAGE, blank)
        page.goto(PAGE)
        java_rate(1)  # warm-up: the JIT compiles the search
        java_rate(cores)
        page.evaluate(bench.HASH_RATE_SCRIPT, [sources, args.ms, 1])
        for _ in range(args.rounds):
            rates["java_1"].append(java_rate(1))
            for name, values in page.evaluate(
                bench.HASH_RATE_SCRIPT, [sources, args.ms, 1]
            ).items():
                rates[name].extend(values)
            rates[f"java_{cores}"].append(java_rate(cores))
        version = browser.version
        browser.close()
    java.stdin.close()
    java.wait()
    median = {name: round(statistics.median(values)) for name, values in rates.items()}
    per_core_all = round(median[f"java_{cores}"] / cores)
    result = {
        "hashes_per_second": {
            "java_one_thread": median["java_1"],
            "java_all_cores": median[f"java_{cores}"],
            "java_per_core_all_cores": per_core_all,
            "browser_worker_wasm": median["wasm"],
            "browser_worker_js": median["js"],
            "browser_worker_webcrypto": median["webcrypto"],
        },
        "ratios": {
            "java_over_wasm": round(median["java_1"] / median["wasm"], 2),
            "java_over_js": round(median["java_1"] / median["js"], 2),
        },
        "rounds": {name: [round(v) for v in values] for name, values in rates.items()},
        "setup": {
            "java": java_version(),
            "browser": f"Debian chromium {version}, headless, via Playwright, a blank page",
            "cpus": cores,
            "round_ms": args.ms,
            "load_average_1min": round(os.getloadavg()[0], 2),
            "puzzles": "difficulty 16, two per thread per batch (the real solver)",
        },
    }
    if (HERE / "results" / "pow.json").exists():
        earlier = json.loads((HERE / "results" / "pow.json").read_text())
        result["pow_json_hash_rates"] = earlier.get("hash_rates")
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["hashes_per_second"], indent=2))
    print(json.dumps(result["ratios"]))


if __name__ == "__main__":
    main()
