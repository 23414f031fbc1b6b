"""``anteroom conformance --client CMD``: does a client speak the visitor protocol right?

It starts the real app on an embedded Redis with the kit's fault-scripting layer in front
(``conformance_server``), then runs ``CMD`` (split as a shell would, run without one) once per
case of ``conformance_cases.json`` with the environment a driver reads (``ANTEROOM_URL``,
``ANTEROOM_ROOM``, ``ANTEROOM_RESOURCE``, ``ANTEROOM_CASE``, ``ANTEROOM_DEADLINE_MS``), and
judges what the client did from the requests it made (``conformance_rules``). It prints PASS or
FAIL per case with each broken rule in words (``--json``: one JSON document) and exits 1 when a
case failed, 2 when it could not run. See docs/conformance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from anteroom.ops.conformance_rules import Outcome, judge
from anteroom.ops.conformance_server import KitServer

CASES_FILE = Path(__file__).with_name("conformance_cases.json")
DEADLINE_SEC = 25.0


def load_cases(path: Path = CASES_FILE) -> list[dict[str, Any]]:
    """The case table."""
    return list(json.loads(path.read_text())["cases"])


def parse_states(stdout: str) -> list[dict[str, Any]]:
    """The driver's state lines (JSON objects with a ``state``); other lines are its own."""
    states = []
    for line in stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("state"), str):
            states.append(value)
    return states


def run_driver(
    command: list[str], env: dict[str, str], deadline: float
) -> tuple[int | None, str, str]:
    """Run the driver to its end or the deadline: (exit code or None if killed, out, err)."""
    try:
        process = subprocess.Popen(
            command,
            env=os.environ | env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own group: a browser it starts is stopped with it
        )
    except OSError as exc:
        raise ValueError(f"cannot start the client {command[0]!r}: {exc.strerror}") from None
    try:
        out, err = process.communicate(timeout=deadline)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        _kill_group(process)
        out, err = process.communicate()
        code = None
    else:
        _kill_group(process)  # anything it left running
    return code, out, err


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_case(
    server: KitServer, case: dict[str, Any], command: list[str], deadline: float
) -> dict[str, Any]:
    """Run one case; its result: name, passed, broken rules, the record and the driver's output."""
    env = server.begin(case)
    env["ANTEROOM_DEADLINE_MS"] = str(int(deadline * 1000))
    started = time.monotonic()
    try:
        code, out, err = run_driver(command, env, deadline)
    finally:
        state = server.end()
    states = parse_states(out)
    broken = judge(case, state.records, Outcome(code, states, deadline))
    return {
        "case": case["name"],
        "says": case.get("says", ""),
        "passed": not broken,
        "broken": broken,
        "exit": code,
        "seconds": round(time.monotonic() - started, 2),
        "states": states,
        "requests": [r.as_dict() for r in sorted(state.records, key=lambda r: r.at)],
        "stderr": err[-2000:],
    }


def run(
    command: list[str],
    names: list[str] | None = None,
    deadline: float = DEADLINE_SEC,
    on_result: Any = None,
) -> list[dict[str, Any]]:
    """Run the cases named (all by default) against ``command``; their results."""
    cases = load_cases()
    if names:
        unknown = sorted(set(names) - {c["name"] for c in cases})
        if unknown:
            raise ValueError(f"no such case: {', '.join(unknown)}")
        cases = [c for c in cases if c["name"] in names]
    server = KitServer().start()
    results = []
    try:
        for case in cases:
            result = run_case(server, case, command, deadline)
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        server.stop()
    return results


def describe(result: dict[str, Any], verbose: bool = False) -> str:
    """A case's result as text: PASS/FAIL, then each broken rule."""
    verdict = "PASS" if result["passed"] else "FAIL"
    head = f"{verdict}  {result['case']}  ({result['seconds']:.1f} s)"
    lines = [head] + [f"      - {b}" for b in result["broken"]]
    if verbose or not result["passed"]:
        for r in result["requests"]:
            told = f" Retry-After {r['retry_after']:g}" if r["retry_after"] is not None else ""
            poll = f" pollAfterMs {r['poll_after_ms']:g}" if r["poll_after_ms"] else ""
            what = r["error"] or r["answer"] or ""
            lines.append(
                f"        {r['at']:7.2f} s  {r['kind']:<9} {r['status']} {what}{told}{poll}"
                + ("  [scripted]" if r["scripted"] else "")
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``anteroom conformance``: see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="anteroom conformance",
        description="Run a client's driver against scripted answers and judge what it did.",
    )
    parser.add_argument("--client", help="the driver's command line (split as a shell would)")
    parser.add_argument("--case", action="append", dest="cases", metavar="NAME",
                        help="run only this case (repeatable)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--list", action="store_true", help="list the cases and what each says")
    parser.add_argument("--deadline", type=float, default=DEADLINE_SEC,
                        help=f"seconds a case may take (default {DEADLINE_SEC:g})")  # fmt: skip
    parser.add_argument("--verbose", action="store_true", help="show every case's requests")
    args = parser.parse_args(argv)
    if args.list:
        for case in load_cases():
            print(f"{case['name']}\n    {case.get('says', '')}")
        return 0
    if not args.client:
        parser.error("--client is required (the command that runs your driver)")
    command = shlex.split(args.client)
    if not command:
        parser.error("--client is empty")
    lock = threading.Lock()

    def show(result: dict[str, Any]) -> None:
        if not args.json:
            with lock:
                print(describe(result, args.verbose), flush=True)

    try:
        results = run(command, args.cases, args.deadline, show)
    except ValueError as exc:
        print(f"anteroom conformance: {exc}", file=sys.stderr)
        return 2
    failed = [r["case"] for r in results if not r["passed"]]
    if args.json:
        print(json.dumps({"passed": not failed, "failed": failed, "cases": results}, indent=1))
    else:
        print(f"\n{len(results) - len(failed)} of {len(results)} cases passed"
              + (f"; failed: {', '.join(failed)}" if failed else ""))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
