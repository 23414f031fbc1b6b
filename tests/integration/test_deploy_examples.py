"""The deployment examples in deploy/: the systemd unit passes ``systemd-analyze verify`` and its
command, run as the unit runs it, serves and stops on the unit's signal within its timeout;
nginx runs deploy/nginx.conf in front of a live server and a visitor is admitted through it."""

from __future__ import annotations

import configparser
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from anteroom.engine import Engine
from anteroom.store.keystore import KeyStore
from helpers import TEST_KEYS, free_port, open_room
from live_server import LiveServers, ServerProcess
from visitor_client import Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ANTEROOM = Path(sys.executable).with_name("anteroom")


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DEPLOY / "anteroom.service")
    return parser


def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    # Verified as installed: its ExecStart pointed at this environment's `anteroom`.
    text = (DEPLOY / "anteroom.service").read_text()
    text = text.replace("/opt/anteroom/bin/anteroom", str(ANTEROOM))
    (tmp_path / "anteroom.service").write_text(text)
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(tmp_path / "anteroom.service")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    # Without systemd as PID 1 here, verify may add notes about the machine; none about the unit.
    about_unit = [line for line in done.stderr.splitlines() if "anteroom.service" in line]
    assert done.returncode == 0 and about_unit == [], done.stderr


def test_the_systemd_units_command_serves_and_stops_within_its_timeout(
    redis_server: object, tmp_path: Path
) -> None:
    service = unit()["Service"]
    assert service["ExecStart"] == "/opt/anteroom/bin/anteroom serve"
    assert service["KillSignal"] == "SIGTERM"
    timeout = float(service["TimeoutStopSec"])
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    # What the unit's EnvironmentFile would hold, and its own Environment= line.
    env |= {"ANTEROOM_BIND": f"127.0.0.1:{port}", "ANTEROOM_KEYS": TEST_KEYS,
            "ANTEROOM_REDIS_URL": redis_server.url}  # type: ignore[attr-defined]  # fmt: skip
    name, value = service["Environment"].split("=", 1)
    env[name] = str(tmp_path / "state") if value == "/var/lib/anteroom" else value
    command = [str(ANTEROOM), *service["ExecStart"].split()[1:]]
    server = ServerProcess(command, port, tmp_path / "unit.log", env=env, ready_path="/readyz")
    with server.start(timeout=60):
        assert requests.get(server.url + "/healthz", timeout=5).status_code == 200
        assert server.process is not None
        # Every worker booted (the last one prints the start page): a SIGTERM that lands while
        # a worker still boots makes gunicorn wait its whole graceful timeout (left as found).
        deadline = time.monotonic() + 30
        while "Anteroom is up" not in server.output():
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.1)  # waiting for the workers to boot, not for a race
        start = time.monotonic()
        server.process.send_signal(getattr(signal, service["KillSignal"]))
        assert server.process.wait(timeout) == 0
        assert time.monotonic() - start < timeout


def nginx_conf(tmp_path: Path, upstream_port: int, listen_port: int) -> Path:
    """deploy/nginx.conf, on test ports, inside a main configuration of the test's own."""
    site = (DEPLOY / "nginx.conf").read_text()
    site = site.replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream_port};")
    site = re.sub(r"listen 80;", f"listen 127.0.0.1:{listen_port};", site)
    (tmp_path / "site.conf").write_text(site)
    temp = tmp_path / "temp"
    temp.mkdir()
    main = f"""
daemon off;
worker_processes 1;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log {tmp_path}/access.log;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {tmp_path}/site.conf;
}}
"""
    (tmp_path / "nginx.conf").write_text(main)
    return tmp_path / "nginx.conf"


def test_nginx_in_front_proxies_a_visitor_to_admission(
    live_server: LiveServers, engine: Engine, tmp_path: Path
) -> None:
    server = live_server(ANTEROOM_TRUSTED_PROXIES="1", ANTEROOM_WORKERS="1")
    port = free_port()
    conf = nginx_conf(tmp_path, server.port, port)
    checked = subprocess.run(
        ["nginx", "-t", "-c", str(conf)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr
    record, _ = KeyStore(engine.redis, engine.keys).create("web")
    open_room(engine, env="web", slug="drop", ratePerMinute=600)
    proxy = ServerProcess(["nginx", "-c", str(conf)], port, tmp_path / "nginx.out", name="nginx")
    with proxy.start(timeout=20):
        base = f"http://127.0.0.1:{port}"
        assert requests.get(base + "/readyz", timeout=5).status_code == 200
        visitor = Visitor(base, record.public_key)
        assert visitor.enter("drop").status_code == 200
        deadline = time.monotonic() + 20
        while visitor.last["status"] != "admitted":
            assert time.monotonic() < deadline, visitor.last
            time.sleep(0.2)  # a visitor's poll cadence; the room drains ten a second
            assert visitor.poll().status_code == 200
        # The proxy replaced any X-Forwarded-For: the server saw the proxy's client, 127.0.0.1.
        assert "127.0.0.1" in (tmp_path / "access.log").read_text()
