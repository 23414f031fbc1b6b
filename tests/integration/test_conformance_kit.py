"""The conformance kit (``anteroom conformance``): every client we ship passes every case, and
deliberately broken clients fail, by the rule they break.

The kit starts its own embedded Redis and app (``ops/conformance_server.py``); the module shares
one kit server, and each case gets a fresh room on it. The drivers are the clients' own small
CLIs (docs/conformance.md); ``DRIVERS`` lists those this suite runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from anteroom.ops import conformance
from anteroom.ops.conformance_server import KitServer
from helpers import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DRIVER = [sys.executable, str(ROOT / "tests" / "conformance_python_driver.py")]
# Each client's driver, as `anteroom conformance --client` runs it. The headless JS client's
# (node frontend/headless/conformance-driver.mjs) and the Android client's (java -cp …
# dev.anteroom.android.ConformanceDriver, built by make) join this table when they land.
ANDROID = ROOT / "clients" / "android"
DRIVERS = {
    "python-requests": PYTHON_DRIVER,
    "browser-agent": [sys.executable, str(ROOT / "tests" / "conformance_browser_driver.py")],
    "headless-js": ["node", str(ROOT / "frontend" / "headless" / "conformance-driver.mjs")],
    "android": [
        "java",
        "-cp",
        f"{ANDROID / 'build' / 'classes'}:/usr/share/java/com.android.json.jar",
        "dev.anteroom.android.ConformanceDriver",
    ],
}
CASES = [case["name"] for case in conformance.load_cases()]
DEADLINE_SEC = 40.0  # generous: a browser starting on a loaded machine


@pytest.fixture(scope="module")
def kit() -> Iterator[KitServer]:
    server = KitServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One headless Chromium for every case's browser driver (a context each): its DevTools
    URL, which the driver reads from CONFORMANCE_CDP."""
    profile = tmp_path_factory.mktemp("chromium")
    command = [CHROMIUM, "--headless=new", "--remote-debugging-port=0",
               f"--user-data-dir={profile}", *CHROMIUM_ARGS, "about:blank"]  # fmt: skip
    browser = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    assert browser.stderr is not None
    url = None
    for line in browser.stderr:  # it says where it listens once it does
        if line.startswith("DevTools listening on "):
            url = line.split(" on ", 1)[1].strip()
            break
    assert url, "Chromium did not start its DevTools server"
    drain = threading.Thread(target=browser.stderr.read, daemon=True)
    drain.start()
    yield url
    browser.terminate()
    browser.wait(15)
    drain.join(5)
    browser.stderr.close()


def run(kit: KitServer, command: list[str], case: str) -> dict[str, object]:
    found = next(c for c in conformance.load_cases() if c["name"] == case)
    return conformance.run_case(kit, found, command, DEADLINE_SEC)


@pytest.fixture
def driver_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The browser driver's shared Chromium, and the Android client built, when the test runs
    them."""
    driver = request.node.callspec.params.get("driver")
    if driver == "browser-agent":
        monkeypatch.setenv("CONFORMANCE_CDP", request.getfixturevalue("shared_chromium"))
    if driver == "android":
        subprocess.run([str(ANDROID / "build.sh")], check=True, capture_output=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("driver", list(DRIVERS))
@pytest.mark.usefixtures("driver_env")
def test_a_client_we_ship_passes_every_case(kit: KitServer, driver: str) -> None:
    """The reference client (the site SDK's queue-through over requests) and the browser agent
    (in Chromium) wait as told, back off, enter again only when their spot is gone, use their
    admission once and stop when the room closes: every case passes."""
    failed = {}
    for case in CASES:
        result = run(kit, DRIVERS[driver], case)
        if not result["passed"]:
            failed[case] = (result["broken"], result["requests"], result["stderr"])
    assert failed == {}


BROKEN = [
    # (how the client is broken, the case that shows it, the rule the kit names)
    ("ignore-retry-after", "rate-limited",
     "ignored Retry-After: called poll 0.2"),
    ("ignore-retry-after", "storage-down",
     "ignored Retry-After: called poll 0.2"),
    ("ignore-retry-after", "outage-without-retry-after",
     "stormed after a 503 (no JSON body) without Retry-After"),
    ("reenter-on-error", "storage-down",
     "entered again while its spot was kept: enter"),
    ("reenter-on-error", "rate-limited",
     "entered again while its spot was kept: enter"),
    ("admission-twice", "admitted",
     "used an admission 2 times"),
    ("fast-poll", "slow-line",
     "polled faster than told: called poll 0.2"),
]  # fmt: skip


# Each of these cases passes with the reference client (test_a_client_we_ship_passes_every_case):
# a failure here is the broken behaviour's, not the case's.
@pytest.mark.slow
@pytest.mark.parametrize(("broken", "case", "rule"), BROKEN, ids=[f"{b}-{c}" for b, c, _ in BROKEN])
def test_a_broken_client_fails_by_the_rule_it_breaks(
    kit: KitServer, broken: str, case: str, rule: str
) -> None:
    result = run(kit, [*PYTHON_DRIVER, "--broken", broken], case)
    assert not result["passed"]
    assert any(rule in sentence for sentence in result["broken"]), result["broken"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "anteroom.ops.cli", "conformance", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_the_command_prints_pass_and_fail_per_case_and_exits_non_zero_on_a_failure() -> None:
    client = " ".join([*PYTHON_DRIVER, "--broken", "ignore-retry-after"])
    done = cli("--client", client, "--case", "admitted", "--case", "rate-limited")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("PASS  admitted") for line in lines), done.stdout
    assert any(line.startswith("FAIL  rate-limited") for line in lines), done.stdout
    assert "ignored Retry-After: called poll" in done.stdout
    assert "1 of 2 cases passed; failed: rate-limited" in done.stdout


@pytest.mark.slow
def test_the_command_answers_json_for_machines_and_exits_zero_when_all_pass() -> None:
    done = cli("--client", " ".join(PYTHON_DRIVER), "--case", "denied", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["passed"] is True and report["failed"] == []
    (case,) = report["cases"]
    assert case["case"] == "denied" and case["exit"] == 2 and case["broken"] == []
    assert [r["kind"] for r in case["requests"]] == ["resource", "arrive", "join"]


def test_the_command_refuses_an_unknown_case_and_a_missing_client_by_name() -> None:
    unknown = cli("--client", "true", "--case", "no-such-case")
    assert unknown.returncode == 2
    assert "no such case: no-such-case" in unknown.stderr
    missing = cli("--case", "admitted")
    assert missing.returncode == 2
    assert "--client is required" in missing.stderr
    absent = cli("--client", "/nonexistent/driver --flag", "--case", "denied")
    assert absent.returncode == 2
    assert "cannot start the client '/nonexistent/driver': No such file" in absent.stderr


@pytest.mark.slow
def test_a_driver_past_its_deadline_is_killed_and_fails() -> None:
    done = cli("--client", "sleep 60", "--case", "denied", "--deadline", "1")
    assert done.returncode == 1
    assert "did not finish within 1 s (killed)" in done.stdout


def test_every_case_of_the_table_is_listed_with_what_it_says() -> None:
    listed = cli("--list")
    assert listed.returncode == 0
    for case in conformance.load_cases():
        assert case["name"] in listed.stdout and case["says"] in listed.stdout
