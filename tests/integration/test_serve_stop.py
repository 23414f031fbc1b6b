"""Stopping ``anteroom serve``: Ctrl-C (SIGINT to the whole process group, as a terminal sends it)
and SIGTERM stop the master, its workers, the demo crowd and the embedded Redis, cleanly, every
time: no worker killed by gunicorn's timeout, nothing left running.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
from pathlib import Path

from anteroom.ops.embedded_redis import EmbeddedRedis
from helpers import free_port
from live_server import SERVE, ServerProcess

ROUNDS = 20
STOP_WITHIN = 10.0  # seconds; a hang runs into gunicorn's 30 s graceful timeout and a SIGKILL


def serve(data_dir: Path, log: Path) -> ServerProcess:
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env = inherited | {
        "ANTEROOM_BIND": f"127.0.0.1:{port}",
        "ANTEROOM_DATA_DIR": str(data_dir),
        "ANTEROOM_WORKERS": "1",  # the race is per worker; one keeps twenty rounds quick
        "ANTEROOM_DEMO": "1",  # as `make serve`: the demo crowd must stop too
    }
    # Its own process group, as a shell's foreground job: a Ctrl-C signals the group whole.
    server = ServerProcess(
        SERVE, port, log, env=env, ready_path="/readyz", name="anteroom serve", new_session=True
    )
    return server.start(timeout=60)


def busy(server: ServerProcess) -> http.client.HTTPConnection:
    """A browser's footprint: a page fetched over a connection kept alive afterwards."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "/queue/demo?key=pk_demo")
    conn.getresponse().read()
    return conn


def stops_cleanly(server: ServerProcess, sig: signal.Signals, group: bool) -> None:
    assert server.process is not None
    pid = server.process.pid
    if group:
        os.killpg(pid, sig)
    else:
        os.kill(pid, sig)
    try:
        code = server.process.wait(STOP_WITHIN)
    except subprocess.TimeoutExpired:
        os.killpg(pid, signal.SIGKILL)
        server.process.wait()
        raise AssertionError(f"not stopped in {STOP_WITHIN} s:\n{server.output(40)}") from None
    out = server.output()
    assert code == 0, out[-3000:]
    for wrong in ("SIGKILL", "Traceback", "ERROR"):
        assert wrong not in out, out[-3000:]
    # Nothing of the group is left (workers), and the embedded Redis (its own session) is gone.
    try:
        os.killpg(pid, 0)
        raise AssertionError("a process of the server's group outlived it")
    except ProcessLookupError:
        pass
    assert server.env is not None
    assert not EmbeddedRedis(server.env["ANTEROOM_DATA_DIR"]).is_running()


def test_ctrl_c_stops_the_service_every_time(tmp_path: Path) -> None:
    for i in range(ROUNDS):
        server = serve(tmp_path / "var", tmp_path / f"serve-{i}.log")
        conn = busy(server)
        stops_cleanly(server, signal.SIGINT, group=True)
        conn.close()


def test_the_start_page_comes_after_the_logs_and_sigterm_stops(tmp_path: Path) -> None:
    server = serve(tmp_path / "var", tmp_path / "serve.log")
    conn = busy(server)
    out = server.output()
    page = out[out.index("Anteroom is up") :]
    base = server.url
    key = (tmp_path / "var" / "demo-secret-key").read_text().strip()
    for row in (
        f"Front door   {base}/\n",
        f"Hosted page  {base}/queue/demo?key=pk_demo\n",
        f"Demo shop    {base}/demo/shop\n",
        f"Console      {base}/console\n",
        f"Console key  {key}  (kept in {tmp_path / 'var' / 'demo-secret-key'})\n",
    ):
        assert row in page, page
    # After every boot line; announcements that do not matter to a newcomer are gone.
    assert "Booting worker" not in page
    for noise in ("metrics of the workers", "Control socket", "sign in with"):
        assert noise not in out
    stops_cleanly(server, signal.SIGTERM, group=False)
    conn.close()
